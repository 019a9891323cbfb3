package tui

import (
	"strings"
	"testing"

	"tare/engine/journal"
)

// A tail run on Slurm is shown with its job and node and its state: pending in the queue
// (with how long so far), running on a node, finished; the tail view gives the queue wait
// apart from the run time, so a slow queue is not read as a slow agent.
func TestSlurmTailShowsJobNodeAndQueueWait(t *testing.T) {
	stateDir := t.TempDir()
	c := openRun(t, stateDir, "calibrate", "calibrate-slurm")
	c.at(-min_(3), journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: "/src/shop", Prompt: "p", Budget: 3, Jobs: 3,
		Sides: []journal.Side{{Key: "a", Agent: "pi"}}}})
	c.at(-min_(3), journal.Event{Phase: &journal.Phase{Name: "tails"}})
	// a-2: queued 2s, ran on n1 for 18s, passed.
	c.at(-sec(120), journal.Event{TailStarted: &journal.TailStarted{ID: "a-2", Side: "a", How: "fresh"}})
	c.at(-sec(120), journal.Event{Placed: &journal.Placed{Tail: "a-2", Job: "40", State: "pending"}})
	c.at(-sec(118), journal.Event{Placed: &journal.Placed{Tail: "a-2", Job: "40", State: "running", Node: "n1", Waited: 2}})
	c.at(-sec(100), journal.Event{Placed: &journal.Placed{Tail: "a-2", Job: "40", State: "finished", Node: "n1", Waited: 2}})
	c.at(-sec(100), journal.Event{TailFinished: &journal.TailFinished{ID: "a-2", Status: journal.StatusPassed, Passed: true, Detail: "agent exit 0; check passed"}})
	// a-1: queued 5s, running on n2 for 55s.
	c.at(-sec(60), journal.Event{TailStarted: &journal.TailStarted{ID: "a-1", Side: "a", How: "fresh"}})
	c.at(-sec(60), journal.Event{Placed: &journal.Placed{Tail: "a-1", Job: "41", State: "pending"}})
	c.at(-sec(55), journal.Event{Placed: &journal.Placed{Tail: "a-1", Job: "41", State: "running", Node: "n2", Waited: 5}})
	// a-0: in the queue for 4s so far.
	c.at(-sec(4), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	c.at(-sec(4), journal.Event{Placed: &journal.Placed{Tail: "a-0", Job: "42", State: "pending"}})
	tm := newTestModel(t, stateDir, newStub(), 160, 40)
	tm.send(openRunMsg{c.dir})
	for id, want := range map[string][]string{"a-0": {"pending", "job 42 queued"}, "a-1": {"running", "job 41 n2"}, "a-2": {"passed", "job 40 n1"}} {
		row := rowOf(t, tm, id)
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("%s's row lacks %q: %q", id, w, row)
			}
		}
	}
	for id, want := range map[string]string{
		"a-0": "pending · Slurm job 42 · in the queue 4s",
		"a-1": "running · Slurm job 41 on n2 · running 55s · queued 5s",
		"a-2": "passed · Slurm job 40 on n1 · ran 18s · queued 2s",
	} {
		tm.send(openTailMsg{c.dir, id})
		if v := tm.View(); !strings.Contains(v, want) {
			t.Errorf("%s's header lacks %q:\n%s", id, want, v)
		}
	}
}
