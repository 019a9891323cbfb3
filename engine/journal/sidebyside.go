package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
)

// SideStep is one row of two tails laid side by side: a call of each, or of only one where
// the other has no call that matches it.
type SideStep struct {
	// A and B index the tails' calls (-1: that tail has no call in this row).
	A, B int
	// Same is set when both calls are the same tool with the same input, once normalised.
	Same bool
}

// SideBySide is two tails aligned step by step by their tool calls: the longest common
// subsequence of (tool, normalised input), so one extra call in one tail shifts nothing
// after it. Diverge is the first row whose calls differ (-1: none does).
type SideBySide struct {
	RunA, TailA, RunB, TailB string
	A, B                     *TailDetail
	Steps                    []SideStep
	Diverge                  int
	// ChangesA and ChangesB are each tail's workspace change, its end capsule against its
	// start: a tail keeps no capsule per tool call, so a per-step diff does not exist.
	ChangesA, ChangesB string
}

// CompareTails reads two tails (of any runs, any agents) and aligns their tool calls. A tail
// whose end capsule is not there yet (still running) shows why in place of its changes.
func CompareTails(ctx context.Context, runA, tailA, runB, tailB string) (*SideBySide, error) {
	a, err := ReadTailDetail(runA, tailA)
	if err != nil {
		return nil, fmt.Errorf("tail %s of %s: %v", tailA, filepath.Base(runA), err)
	}
	b, err := ReadTailDetail(runB, tailB)
	if err != nil {
		return nil, fmt.Errorf("tail %s of %s: %v", tailB, filepath.Base(runB), err)
	}
	s := &SideBySide{RunA: runA, TailA: tailA, RunB: runB, TailB: tailB, A: a, B: b}
	s.Steps, s.Diverge = AlignCalls(a.Calls, b.Calls)
	changes := func(run, tail string) string {
		text, err := TailChanges(ctx, run, tail, 0)
		if err != nil {
			return "no changes to show: " + err.Error()
		}
		return text
	}
	s.ChangesA, s.ChangesB = changes(runA, tailA), changes(runB, tailB)
	return s, nil
}

// callKey is what two calls must share to be the same step: the tool, and the input with
// case and runs of space folded (agents differ in quoting and spacing, not in intent).
func callKey(c CallDetail) string {
	return strings.ToLower(c.Tool) + "\x00" + strings.Join(strings.FieldsFunc(strings.ToLower(c.Input), unicode.IsSpace), " ")
}

// AlignCalls aligns two lists of calls by the longest common subsequence of their keys.
// Unmatched calls of both tails between two matches are paired row by row (a changed step
// reads as one row, not two); diverge is the first row that is not a match.
func AlignCalls(a, b []CallDetail) (steps []SideStep, diverge int) {
	n, m := len(a), len(b)
	ka, kb := make([]string, n), make([]string, m)
	for i := range a {
		ka[i] = callKey(a[i])
	}
	for j := range b {
		kb[j] = callKey(b[j])
	}
	if n*m > maxAlignCells {
		return alignByPosition(ka, kb)
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if ka[i] == kb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var onlyA, onlyB []int
	flush := func() {
		for k := 0; k < max(len(onlyA), len(onlyB)); k++ {
			st := SideStep{A: -1, B: -1}
			if k < len(onlyA) {
				st.A = onlyA[k]
			}
			if k < len(onlyB) {
				st.B = onlyB[k]
			}
			steps = append(steps, st)
		}
		onlyA, onlyB = onlyA[:0], onlyB[:0]
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && ka[i] == kb[j]:
			flush()
			steps = append(steps, SideStep{A: i, B: j, Same: true})
			i, j = i+1, j+1
		case j >= m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			onlyA = append(onlyA, i)
			i++
		default:
			onlyB = append(onlyB, j)
			j++
		}
	}
	flush()
	diverge = -1
	for k, st := range steps {
		if !st.Same {
			diverge = k
			break
		}
	}
	return steps, diverge
}

// maxAlignCells bounds the LCS table (calls of one tail times calls of the other): past it
// the tails are aligned by position, which needs no table.
const maxAlignCells = 4 << 20

// alignByPosition pairs the calls step by step.
func alignByPosition(ka, kb []string) (steps []SideStep, diverge int) {
	diverge = -1
	for k := 0; k < max(len(ka), len(kb)); k++ {
		st := SideStep{A: -1, B: -1}
		if k < len(ka) {
			st.A = k
		}
		if k < len(kb) {
			st.B = k
		}
		st.Same = st.A >= 0 && st.B >= 0 && ka[k] == kb[k]
		if !st.Same && diverge < 0 {
			diverge = k
		}
		steps = append(steps, st)
	}
	return steps, diverge
}

// TailHit is one place a search found its text in a tail.
type TailHit struct {
	Tail string
	// Step is the call's number from 1 (0: the agent's text after its last call).
	Step int
	// Field is "input", "output" or "text".
	Field string
	// Line is the matching line, as found.
	Line string
}
