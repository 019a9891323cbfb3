package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/engine"
	"tare/engine/journal"
)

// TestStalledTailIsMarkedBeforeItEnds: a real calibrate (the real claude CLI on tare's model
// server) whose second model answer is scripted to come 10s late, with [tails] stall_floor at
// 1s. While the tail waits, the app shows it stalled (status and how long it has been
// silent) and x offers to kill it; the journal holds the Stalled event after the tail's tool
// call and before its end, and the tail's end clears the mark.
func TestStalledTailIsMarkedBeforeItEnds(t *testing.T) {
	needRooms(t)
	w := newJudgeWorld(t, judgeNoiseScript)
	w.cfg.Tails.StallFloor = "1s"
	script := filepath.Join(t.TempDir(), "slow.toml")
	os.WriteFile(script, []byte("[[turn]]\nshell = \"ls\"\n\n[[turn]]\ndelay = \"10s\"\ntext = \"Done.\"\n"), 0o644)
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# slow\n"), 0o644)
	type result struct {
		dir string
		err error
	}
	done := make(chan result, 1)
	go func() {
		dir, _, err := engine.Calibrate(context.Background(), engine.CalibrateOptions{Prompt: "Look around", Sides: []journal.Side{{Key: "a", Agent: "claude"}},
			Check: "true", Runs: 1, Jobs: 1, Project: project, Config: w.cfg, Script: script})
		done <- result{dir, err}
	}()
	tm := newTestModel(t, w.cfg.StateDir, newStub(), 140, 30)
	var view string
	seen := false
	for !seen {
		select {
		case r := <-done:
			t.Fatalf("the tail ended (%v) and the app never showed it stalled:\n%s", r.err, view)
		case <-time.After(100 * time.Millisecond):
		}
		tm.pollNow()
		for _, dir := range tm.env.store.order {
			ts := tm.env.store.run(dir).state.Tails["a-0"]
			if ts == nil || ts.Stalled == nil || ts.Status != journal.StatusRunning {
				continue
			}
			tm.send(openRunMsg{dir})
			view = tm.View()
			row := line(view, "a-0 ")
			if !strings.Contains(row, "stalled") || !strings.Contains(row, "silent") || !strings.Contains(row, "x kills it") {
				t.Errorf("the stalled tail's row does not say so: %q\n%s", row, view)
			}
			selectRow(t, tm.run.tails.t, "a-0")
			tm.key("x")
			if tm.confirm == nil || !strings.Contains(tm.View(), "Kill tail a-0") {
				t.Errorf("x on the stalled tail did not ask to kill it:\n%s", tm.View())
			}
			tm.key("n")
			seen = true
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	events, err := journal.ReadJournal(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range events {
		t.Logf("%s %s", e.Time.Format(time.TimeOnly+".000"), e.Kind())
		switch {
		case e.ToolCall != nil && e.ToolCall.Tail == "a-0":
			order = append(order, "call")
		case e.Stalled != nil && !e.Stalled.Over:
			order = append(order, "stalled")
			t.Logf("stalled at %s: silent %.1fs, threshold %.1fs", e.Time.Format(time.TimeOnly+".000"), e.Stalled.Silent, e.Stalled.Threshold)
		case e.TailFinished != nil:
			order = append(order, "end")
		}
	}
	if got := strings.Join(order, " "); !strings.Contains(got, "call stalled") {
		t.Errorf("journal: %q; want a Stalled after the tool call, before the end", got)
	}
	if ts := journal.Replay(filepath.Base(r.dir), events).Tails["a-0"]; ts.Stalled != nil {
		t.Errorf("the ended tail is still marked stalled: %+v", ts.Stalled)
	}
}
