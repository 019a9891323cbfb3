package journal

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"

	"tare/capsule"
)

// Limits of a shown diff: a file bigger than maxDiffFile is summarised, and the whole text
// stops after maxDiffLines lines (what is left out is counted).
const (
	maxDiffFile  = 256 << 10
	maxDiffLines = 20000
)

// TailChanges is what a tail changed in its workspace, as a unified diff with content:
// binary and big files are summarised in a line each. For the recorded trail ("original")
// it is what step's tool call changed (the capsule of step against the step before). A tail
// keeps no capsule per tool call (only the one it started from and its end), so for a tail
// it is the whole tail's change, and the first line says so.
func TailChanges(ctx context.Context, runDir, tailID string, step int) (string, error) {
	store, err := capsule.Open(filepath.Join(runDir, "store"))
	if err != nil {
		return "", err
	}
	rec, _ := ReadRecording(runDir) // nil for a calibrate run: its tails start from "start"
	var from, to capsule.Capsule
	var head string
	if tailID == "original" && rec != nil {
		if step < 1 || step >= len(rec.Capsules) {
			return "", fmt.Errorf("the recording has no step %d (it has 1 to %d)", step, len(rec.Capsules)-1)
		}
		from, to = rec.Capsules[step-1], rec.Capsules[step]
		head = fmt.Sprintf("step %d's change: capsule %d against capsule %d", step, to.Step, from.Step)
		if from.Root == to.Root {
			return head + "\nthe workspace did not change at this step\n", nil
		}
	} else {
		list, err := store.List()
		if err != nil {
			return "", err
		}
		st, err := ReadJournalOutline(runDir) // its how, step and status: no tool call
		if err != nil {
			return "", err
		}
		t := Replay(filepath.Base(runDir), st).Tails[tailID]
		if t == nil {
			return "", fmt.Errorf("%s has no tail %s", runDir, tailID)
		}
		found := false
		for _, c := range list {
			switch {
			case c.ID == "start" && (t.How == "fresh" || t.How == "" || rec == nil):
				from = c
			case c.ID == tailID+"-end":
				to, found = c, true
			}
		}
		if rec != nil && t.How != "fresh" && t.How != "" && t.Step < len(rec.Capsules) {
			from = rec.Capsules[t.Step]
		}
		if !found {
			if t.Status == StatusRunning {
				return "", fmt.Errorf("tail %s is still running: its changes are read from its end capsule, taken when it ends", tailID)
			}
			return "", fmt.Errorf("tail %s has no end capsule (it ended before its workspace was kept)", tailID)
		}
		head = fmt.Sprintf("what tail %s changed, end against start (a tail keeps no capsule per tool call)", tailID)
	}
	changes, err := store.Diff(from, to)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(head + "\n")
	if len(changes) == 0 {
		b.WriteString("no change to the workspace\n")
		return b.String(), nil
	}
	lines := 0
	for i, c := range changes {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if lines > maxDiffLines {
			fmt.Fprintf(&b, "… %d more changed paths not shown (over %d lines)\n", len(changes)-i, maxDiffLines)
			break
		}
		text := changeText(store, c)
		lines += strings.Count(text, "\n")
		b.WriteString(text)
	}
	return b.String(), nil
}

// changeText is one change: a unified diff for a text file, one line for anything else.
func changeText(store *capsule.Store, c capsule.Change) string {
	p := Printable(c.Path) // a name the agent chose
	kindOf := func(e *capsule.Entry) capsule.Kind {
		if e == nil {
			return ""
		}
		return e.Kind
	}
	if kindOf(c.Old) == capsule.KindDir || kindOf(c.New) == capsule.KindDir {
		if c.Kind == capsule.Added || c.Kind == capsule.Removed {
			return "" // its files are listed one by one
		}
	}
	switch c.Kind {
	case capsule.ModeChanged:
		return fmt.Sprintf("mode %s: %v → %v\n", p, c.Old.Mode, c.New.Mode)
	case capsule.TypeChanged:
		return fmt.Sprintf("type %s: %s → %s\n", p, c.Old.Kind, c.New.Kind)
	}
	if kindOf(c.Old) == capsule.KindSymlink || kindOf(c.New) == capsule.KindSymlink {
		return fmt.Sprintf("%s symlink %s: %s\n", c.Kind, p, linkChange(c))
	}
	old, oldOK, oldWhy := fileText(store, c.Old)
	cur, curOK, curWhy := fileText(store, c.New)
	if !oldOK || !curOK {
		why := oldWhy
		if why == "" {
			why = curWhy
		}
		return fmt.Sprintf("%s %s: %s (%s), not shown\n", c.Kind, p, sizes(c), why)
	}
	from, to := "a/"+p, "b/"+p
	if c.Old == nil {
		from = "/dev/null"
	}
	if c.New == nil {
		to = "/dev/null"
	}
	d := udiff.Unified(from, to, old, cur)
	if d == "" {
		return fmt.Sprintf("%s %s: %s\n", c.Kind, p, sizes(c))
	}
	return Printable(d)
}

// fileText is a file entry's content when it can be shown as text; why says otherwise.
func fileText(store *capsule.Store, e *capsule.Entry) (text string, ok bool, why string) {
	if e == nil {
		return "", true, ""
	}
	if e.Size > maxDiffFile {
		return "", false, fmt.Sprintf("over %d KiB", maxDiffFile>>10)
	}
	data, err := store.ReadBlob(e.Hash, maxDiffFile)
	if err != nil {
		return "", false, err.Error()
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return "", false, "binary"
	}
	return string(data), true, ""
}

func sizes(c capsule.Change) string {
	switch {
	case c.Old == nil:
		return fmt.Sprintf("%d bytes", c.New.Size)
	case c.New == nil:
		return fmt.Sprintf("was %d bytes", c.Old.Size)
	}
	return fmt.Sprintf("%d → %d bytes", c.Old.Size, c.New.Size)
}

func linkChange(c capsule.Change) string {
	target := func(e *capsule.Entry) string {
		if e == nil || e.Kind != capsule.KindSymlink {
			return "(none)"
		}
		return Printable(e.Target)
	}
	return target(c.Old) + " → " + target(c.New)
}
