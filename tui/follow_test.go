package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
	"tare/engine/probe"
)

// until polls cond every 20 ms until it holds or the deadline passes.
func until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A writer goroutine appends real journal lines while the follower reads them: every event
// arrives once, in order.
func TestFollowerReadsLinesAsAnotherWriterAppends(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	const n = 500
	go func() {
		j.Append(&journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 1}})
		for i := 1; i < n-1; i++ {
			j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: i}})
			if i%50 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		j.Append(&journal.Event{RunFinished: &journal.RunFinished{Report: "done"}})
	}()
	f := newFollower(dir)
	var got []journal.Event
	until(t, 10*time.Second, "the follower did not see the run finish", func() bool {
		events, err := f.poll()
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		got = append(got, events...)
		return len(got) > 0 && got[len(got)-1].RunFinished != nil
	})
	if len(got) != n {
		t.Fatalf("read %d events, want %d", len(got), n)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: out of order or repeated", i, e.Seq)
		}
	}
}

// A line still being written waits; when a resume cuts it and appends, the follower carries
// on with the new events.
func TestFollowerWaitsForATornLineAndSurvivesItsCut(t *testing.T) {
	dir := t.TempDir()
	j, _ := journal.OpenJournal(dir)
	j.Append(&journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate"}})
	j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a"}})
	j.Close()
	f := newFollower(dir)
	if events, err := f.poll(); err != nil || len(events) != 2 {
		t.Fatalf("first poll: %d events, %v", len(events), err)
	}
	path := filepath.Join(dir, journal.JournalFile)
	torn, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	torn.WriteString(`{"seq":3,"run":"x","tool_call":{"tail":"a-0","to`)
	torn.Close()
	if events, err := f.poll(); err != nil || len(events) != 0 {
		t.Fatalf("a torn line gave %d events, %v", len(events), err)
	}
	// The crashed writer's successor reopens the journal: the torn line goes, seq 3 is reused.
	j, err := journal.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	j.Append(&journal.Event{Resumed: &journal.Resumed{Rerun: []string{"a-0"}}})
	j.Close()
	events, err := f.poll()
	if err != nil || len(events) != 1 || events[0].Resumed == nil || events[0].Seq != 3 {
		t.Fatalf("after the cut: %+v, %v", events, err)
	}
}

// A journal that shrank is read again from the start; what was already read is skipped.
func TestFollowerRereadsAReplacedJournalWithoutRepeats(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	j, _ := journal.OpenJournal(src)
	for i := 0; i < 5; i++ {
		j.Append(&journal.Event{Phase: &journal.Phase{Name: fmt.Sprint(i)}})
	}
	j.Close()
	data, _ := os.ReadFile(filepath.Join(src, journal.JournalFile))
	os.WriteFile(filepath.Join(dst, journal.JournalFile), data, 0o644)
	f := newFollower(dst)
	if events, _ := f.poll(); len(events) != 5 {
		t.Fatalf("first poll: %d", len(events))
	}
	// Replaced by a copy holding only the first three events and a new one.
	os.WriteFile(filepath.Join(dst, journal.JournalFile), data[:0], 0o644)
	j, _ = journal.OpenJournal(dst)
	for i := 0; i < 6; i++ {
		j.Append(&journal.Event{Phase: &journal.Phase{Name: fmt.Sprint(i)}})
	}
	j.Close()
	events, err := f.poll()
	if err != nil || len(events) != 1 || events[0].Seq != 6 {
		t.Fatalf("after the replacement: %+v, %v", events, err)
	}
}

// The watcher finds runs that appear after it started, readings that change, and runs whose
// process goes away.
func TestWatcherFindsNewRunsReadingsAndLiveness(t *testing.T) {
	stateDir := t.TempDir()
	alive := map[string]bool{}
	var mu sync.Mutex
	w := newWatcher(stateDir, nil, func(d string) bool { mu.Lock(); defer mu.Unlock(); return alive[d] }, nil)
	w.scanEvery = 0
	if f := w.poll(time.Now()); !f.empty() {
		t.Fatalf("empty state: %+v", f)
	}
	r := openRun(t, stateDir, "calibrate", "later")
	mu.Lock()
	alive[r.dir] = true
	mu.Unlock()
	r.at(0, journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate"}})
	writeProbe(t, stateDir, probe.Summary{Agent: "claude", Verdict: "tare: 0.00", Zero: true, At: t0, Project: demoProject, Room: probe.RoomModelServer})
	f := w.poll(time.Now())
	if len(f.runs) != 1 || f.runs[0].dir != r.dir || len(f.runs[0].events) != 1 {
		t.Fatalf("new run: %+v", f.runs)
	}
	if len(f.probes) != 1 || f.probes[0].Verdict != "tare: 0.00" || !f.alive[r.dir] {
		t.Fatalf("readings %+v alive %v", f.probes, f.alive)
	}
	if f := w.poll(time.Now()); !f.empty() {
		t.Fatalf("nothing changed, yet: %+v", f)
	}
	mu.Lock()
	alive[r.dir] = false
	mu.Unlock()
	if f := w.poll(time.Now()); len(f.alive) != 1 || f.alive[r.dir] {
		t.Fatalf("the run's process went away: %+v", f.alive)
	}
	// A finished run is not asked about any more.
	r.at(sec(1), journal.Event{RunFinished: &journal.RunFinished{}})
	w.poll(time.Now())
	mu.Lock()
	alive[r.dir] = true
	mu.Unlock()
	if f := w.poll(time.Now()); len(f.alive) != 0 {
		t.Fatalf("a finished run was asked: %+v", f.alive)
	}
}

// The bridge coalesces a fast stream into few messages and loses nothing: every tail that
// finished arrives finished.
func TestBridgeCoalescesAndKeepsFinalEvents(t *testing.T) {
	stateDir := t.TempDir()
	r := openRun(t, stateDir, "calibrate", "fast")
	msgs := make(chan tea.Msg)
	b := newBridge(newWatcher(stateDir, nil, nil, nil), func(m tea.Msg) { msgs <- m })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.run(ctx)

	const tails, calls = 40, 50
	go func() {
		r.j.Append(&journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: tails, Sides: []journal.Side{{Key: "a"}}}})
		for i := 0; i < tails; i++ {
			id := fmt.Sprintf("a-%d", i)
			r.j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: "a", How: "fresh"}})
			for c := 1; c <= calls; c++ {
				r.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: id, Tool: "Bash", Calls: c}})
			}
			r.j.Append(&journal.Event{TailFinished: &journal.TailFinished{ID: id, Status: "passed", Passed: true, Calls: calls}})
		}
		r.j.Append(&journal.Event{RunFinished: &journal.RunFinished{}})
	}()
	s := newStore(nil, demoProject)
	sends, events := 0, 0
	for !s.run(r.dir).state.Finished {
		select {
		case m := <-msgs:
			f := m.(feedMsg)
			sends++
			for _, rf := range f.runs {
				events += len(rf.events)
			}
			s.apply(f)
		case <-time.After(10 * time.Second):
			t.Fatalf("the run never finished in the store (%d events in %d sends)", events, sends)
		}
	}
	// The feeds leave out tool calls the store would not keep (skimLines); what the store
	// holds is what the whole journal says.
	all, err := journal.ReadJournal(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	want := journal.Replay("fast", all)
	got := s.run(r.dir).state
	if got.Seq != want.Seq || len(got.Order) != tails {
		t.Errorf("the store is at event %d with %d tails; the journal has %d events, %d tails", got.Seq, len(got.Order), want.Seq, tails)
	}
	for _, id := range want.Order {
		if g, w := got.Tails[id], want.Tails[id]; g == nil || g.Calls != w.Calls || g.Status != w.Status {
			t.Errorf("tail %s in the store: %+v; in the journal: %+v", id, g, w)
		}
	}
	if done, _, _ := got.Counts(); done != tails {
		t.Errorf("%d tails finished in the store, want %d", done, tails)
	}
	if sends >= len(all)/10 {
		t.Errorf("%d sends for %d events: not coalesced", sends, len(all))
	}
	t.Logf("%d events in %d sends", events, sends)
}
