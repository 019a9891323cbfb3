package tui

import (
	"strings"
	"testing"

	"tare/engine/journal"
)

// In an app that watched a run end, the run is live again while a retry runs (the Runs list,
// the run's header and the title bar's count), crashed when the retry's process dies without
// a report, and done when the retry ends.
func TestRetryIsLiveInAnAppThatSawTheRunEnd(t *testing.T) {
	stateDir := t.TempDir()
	stub := newStub()
	c := openRun(t, stateDir, "calibrate", "calibrate-retry")
	c.at(-min_(10), journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: "/src/shop", Prompt: "p", Budget: 1, Jobs: 1,
		Sides: []journal.Side{{Key: "a", Agent: "pi"}}}})
	c.at(-min_(10), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	c.at(-min_(9), journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusNoVerdict, Reason: journal.ReasonKilled, Detail: "killed by the operator"}})
	c.at(-min_(9), journal.Event{RunFinished: &journal.RunFinished{Report: "r"}})
	stub.setAlive(c.dir, false) // the run's own process has ended
	tm := newTestModel(t, stateDir, stub, 120, 30)
	if s := tm.env.store.run(c.dir).status(); s != "done" {
		t.Fatalf("the finished run is %q", s)
	}

	// R: `tare resume DIR --retry a-0` owns the run again and journals the retry.
	stub.setAlive(c.dir, true)
	c.at(-min_(1), journal.Event{Resumed: &journal.Resumed{Rerun: []string{"a-0"}}})
	c.at(-min_(1), journal.Event{Phase: &journal.Phase{Name: "tails"}})
	c.at(-min_(1), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh", Attempt: 1}})
	tm.pollNow()
	if s := tm.env.store.run(c.dir).status(); s != "live" {
		t.Errorf("while the retry runs the run is %q, want live", s)
	}
	if h := tm.header(); !strings.Contains(h, "1 live") {
		t.Errorf("title bar: %q", h)
	}
	tm.send(openRunMsg{c.dir})
	if v := tm.View(); !strings.Contains(v, "live · phase tails") {
		t.Errorf("the run's header says done while its retry runs:\n%s", v)
	}

	// The retry's process dies without a report: the run is crashed (r resumes it), not
	// live for ever, so its liveness is asked again once a finished run goes on.
	stub.setAlive(c.dir, false)
	tm.pollNow()
	if s := tm.env.store.run(c.dir).status(); s != "crashed" {
		t.Errorf("with the retry's process gone the run is %q, want crashed", s)
	}

	c.at(0, journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusPassed, Passed: true, Attempt: 1}})
	c.at(0, journal.Event{RunFinished: &journal.RunFinished{Report: "r"}})
	stub.setAlive(c.dir, false)
	tm.pollNow()
	if s := tm.env.store.run(c.dir).status(); s != "done" {
		t.Errorf("after the retry the run is %q, want done", s)
	}
}
