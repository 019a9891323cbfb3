package tui

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"tare/engine/journal"
)

// TestSkimmedStoreHoldsTheJournalsState: the store fed by skimming followers holds what a
// replay of every event gives, tail by tail, for a journal with what changes a tail besides
// its calls (a stall, a check, a placement, a retry, a resume), a recording's own calls, and
// a tail whose id the writer escapes (read whole, not skimmed). Finished tails' calls are let
// go in both.
func TestSkimmedStoreHoldsTheJournalsState(t *testing.T) {
	stateDir := t.TempDir()
	r := openRun(t, stateDir, "calibrate", "mixed")
	at := time.Duration(0)
	add := func(e journal.Event) { at += time.Second; r.at(at, e) }
	calls := func(id string, from, n int) {
		for c := from; c < from+n; c++ {
			add(journal.Event{ToolCall: &journal.ToolCall{Tail: id, Tool: "Bash", Summary: fmt.Sprintf("step %d of %s", c, id), Calls: c, Usage: usage(int64(c), 1, 0.001*float64(c))}})
		}
	}
	add(journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Sides: []journal.Side{{Key: "a", Agent: "claude"}, {Key: "b", Agent: "codex"}, {Key: "c", Agent: "pi"}}, Budget: 4}})
	calls("original", 1, 3)
	add(journal.Event{TailStarted: &journal.TailStarted{ID: "a-1", Side: "a", How: "fresh"}})
	add(journal.Event{TailStarted: &journal.TailStarted{ID: "b-1", Side: "b", How: "fresh"}})
	add(journal.Event{TailStarted: &journal.TailStarted{ID: "c<1>", Side: "c", How: "fresh"}})
	calls("a-1", 1, 150)
	add(journal.Event{Placed: &journal.Placed{Tail: "b-1", Job: "7", State: "running"}})
	calls("b-1", 1, 10)
	add(journal.Event{Stalled: &journal.Stalled{Tail: "a-1", Silent: 30, Threshold: 20}})
	calls("a-1", 151, 150)
	calls("c<1>", 1, 4)
	add(journal.Event{TailChecking: &journal.TailChecking{ID: "a-1", TimeoutSeconds: 60}})
	add(journal.Event{TailFinished: &journal.TailFinished{ID: "a-1", Status: journal.StatusFailed, Detail: "--- FAIL", Calls: 300, Usage: usage(300, 1, 0.3)}})
	add(journal.Event{TailStarted: &journal.TailStarted{ID: "a-1", Side: "a", How: "fresh", Attempt: 1}})
	calls("a-1", 1, 250) // more than a live tail keeps
	add(journal.Event{Stalled: &journal.Stalled{Tail: "b-1", Silent: 40, Threshold: 20}})
	add(journal.Event{Resumed: &journal.Resumed{Rerun: []string{"c<1>"}}})
	calls("c<1>", 5, 2)
	calls("b-1", 11, 1)
	add(journal.Event{Stalled: &journal.Stalled{Tail: "b-1", Silent: 50, Threshold: 20}})

	all, err := journal.ReadJournal(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	want := journal.Replay("mixed", all)
	s := newStore(nil, demoProject)
	f := newWatcher(stateDir, nil, nil, nil).poll(time.Now())
	if n := len(f.runs[0].events); n >= len(all) {
		t.Errorf("the feed carries %d of %d events: nothing was skimmed", n, len(all))
	}
	s.apply(f)
	got := s.run(r.dir).state
	if got.Seq != want.Seq || !got.Updated.Equal(want.Updated) || len(got.Original) != 3 || !reflect.DeepEqual(got.Order, want.Order) {
		t.Fatalf("run: seq %d updated %s original %d order %v; want %d %s %d %v", got.Seq, got.Updated, len(got.Original), got.Order, want.Seq, want.Updated, len(want.Original), want.Order)
	}
	for _, id := range want.Order {
		g, w := *got.Tails[id], *want.Tails[id]
		if !w.Ended.IsZero() {
			w.Tools = nil // the store lets go of a finished tail's calls
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("tail %s:\n store  %+v\n replay %+v", id, g, w)
		}
	}
}
