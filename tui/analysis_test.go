package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"tare/engine"
	"tare/engine/journal"
)

// cliffState is a cliff as its journal has it: the recording's six tool calls, tails from
// steps 0, 3, 4 and 6 (the rate falls between 3 and 4), and the report naming step 4.
func cliffState(t *testing.T) (stateDir, dir string) {
	stateDir = t.TempDir()
	j := openRun(t, stateDir, "cliff", "cliff-demo")
	j.at(-min_(5), journal.Event{RunStarted: &journal.RunStarted{Kind: "cliff", Project: "/src/greeter", Prompt: "Make greet.sh print exactly: hello, tare",
		Check: `test "$(sh greet.sh)" = "hello, tare"`, Budget: 1, Jobs: 1, Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
	calls := []string{"cat README.md greet.sh", `printf '#!/bin/sh\necho "hello, tare"\n' > greet.sh`, "sh greet.sh",
		`printf '#!/bin/sh\necho "TODO"\n' > greet.sh`, "ls -la", "echo done > notes.txt"}
	for i, c := range calls {
		j.at(-min_(5)+sec(i+1), journal.Event{ToolCall: &journal.ToolCall{Tail: "original", Tool: "Bash", Summary: c, Calls: i + 1}})
	}
	outcomes := map[int][]bool{0: {true, true, false}, 6: {false, false, false}, 3: {true, true, true}, 4: {false, false, false}}
	at := -min_(4)
	for _, step := range []int{0, 6, 3, 4} {
		for n, passed := range outcomes[step] {
			id := fmt.Sprintf("cliff-%d-%d", step, n)
			j.at(at, journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: "a", Step: step, How: "native"}})
			status := journal.StatusFailed
			if passed {
				status = journal.StatusPassed
			}
			j.at(at+sec(9), journal.Event{TailFinished: &journal.TailFinished{ID: id, Passed: passed, Status: status, Seconds: 9, Calls: 3, Usage: usage(9000, 300, 0.3)}})
			at += sec(10)
		}
	}
	j.at(at, journal.Event{RunFinished: &journal.RunFinished{Report: "cliff at step 4\n  task      Make greet.sh print exactly: hello, tare\n"}})
	return stateDir, j.dir
}

// TestCliffRunShowsItsCurve: a cliff's run view draws the pass rate per tried step with its
// interval, marks the cliff under its step and names the call that lost the run, within 80
// columns.
func TestCliffRunShowsItsCurve(t *testing.T) {
	stateDir, dir := cliffState(t)
	tm := newTestModel(t, stateDir, newStub(), 80, 24)
	tm.send(openRunMsg{dir})
	view := tm.View()
	for _, want := range []string{"Pass rate by step", "1.0 │", "0.0 │", "▲", `▲ cliff at step 4: Bash printf '#!/bin/sh\necho "TODO"`, "step  0  1  2  3  4  5  6"} {
		if !strings.Contains(view, want) {
			t.Errorf("the cliff view lacks %q:\n%s", want, view)
		}
	}
	for _, l := range strings.Split(view, "\n") {
		if ansi.StringWidth(l) > 80 {
			t.Errorf("a line is wider than 80 columns: %q", l)
		}
	}
	// The curve itself: step 3's column is all passes (a dot on the top row), step 4's all
	// fails (a dot on the bottom row).
	chart := cliffChart(asciiStyles(), mustCurve(t, stateDir, dir), 40, 9)
	rows := strings.Split(chart, "\n")
	top, bottom := []rune(rows[0]), []rune(rows[5])
	col := func(step int) int { return 5 + step*3 + 1 }
	if top[col(3)] != '●' || bottom[col(4)] != '●' {
		t.Errorf("step 3 should pass (top) and step 4 fail (bottom):\n%s", chart)
	}
	golden.RequireEqual(t, []byte(view))
}

func mustCurve(t *testing.T, stateDir, dir string) engine.CliffCurve {
	t.Helper()
	events, err := journal.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := engine.CliffCurveOf(journal.Replay("cliff-demo", events))
	if !ok {
		t.Fatal("the cliff journal is not read as a cliff")
	}
	return c
}

// TestSwapRunShowsItsTable: a swap's run view gives per cut who continued whose workspace
// and how, and the three effects, marking the one distinguishable from zero.
func TestSwapRunShowsItsTable(t *testing.T) {
	stateDir := t.TempDir()
	j := openRun(t, stateDir, "swap", "swap-demo")
	j.at(-min_(5), journal.Event{RunStarted: &journal.RunStarted{Kind: "swap", Project: "/src/greeter", Prompt: "Make greet.sh print exactly: hello, tare",
		Check: "make test", Jobs: 3, Sides: []journal.Side{{Key: "a", Agent: "claude"}, {Key: "b", Agent: "codex"}}}})
	// At the last cut a's workspace fails for both agents, b's passes for both.
	pass := map[string]bool{"aa": false, "ab": false, "ba": true, "bb": true}
	at := -min_(4)
	for _, cell := range []string{"aa-n", "aa-h", "ab-h", "ba-h", "bb-n", "bb-h"} {
		for n := range 3 {
			id := fmt.Sprintf("c0-%s-%d", cell, n)
			p := pass[cell[:2]]
			status := journal.StatusFailed
			if p {
				status = journal.StatusPassed
			}
			j.at(at, journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: cell[1:2], Step: 4, How: "handoff"}})
			j.at(at+sec(5), journal.Event{TailFinished: &journal.TailFinished{ID: id, Passed: p, Status: status, Seconds: 5, Calls: 2}})
			at += time.Second * 6
		}
	}
	tm := newTestModel(t, stateDir, newStub(), 80, 24)
	tm.send(openRunMsg{j.dir})
	view := tm.View()
	for _, want := range []string{"Workspace or agent", "cut 1", "a's: a 0/3 b 0/3 · b's: a 3/3 b 3/3", "state -1.00", "≠0", "model +0.00"} {
		if !strings.Contains(view, want) {
			t.Errorf("the swap view lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "model +0.00 (-0.") && strings.Contains(view, "model +0.00 (-0.39…+0.39) ≠0") {
		t.Errorf("the model effect is marked distinguishable:\n%s", view)
	}
	golden.RequireEqual(t, []byte(view))
}

// A cliff search that named no cliff says what it found under the curve instead: a gradual
// decline is not left looking like a search still under way.
func TestCliffCaptionSaysWhatItFound(t *testing.T) {
	st := &journal.RunState{Kind: "cliff", Tails: map[string]*journal.TailState{}, Report: "gradual decline: no single step\n  task      x\n",
		Original: []journal.ToolCall{{Tool: "Bash"}, {Tool: "Bash"}, {Tool: "Bash"}}}
	for i, status := range []journal.Status{journal.StatusPassed, journal.StatusFailed} {
		id := fmt.Sprintf("cliff-%d-0", 3*i)
		st.Tails[id] = &journal.TailState{ID: id, Step: 3 * i, Attempt: journal.Attempt{Status: status}}
	}
	c, ok := engine.CliffCurveOf(st)
	if !ok {
		t.Fatal("not read as a cliff")
	}
	if chart := cliffChart(asciiStyles(), c, 60, 9); !strings.Contains(chart, "gradual decline: no single step · 2 tails, 2 with a verdict") {
		t.Errorf("the caption does not say what the search found:\n%s", chart)
	}
}
