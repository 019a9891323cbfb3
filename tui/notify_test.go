package tui

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
	"tare/engine/probe"
)

// feedRecorder runs a bridge over stateDir and keeps what it sends.
type feedRecorder struct {
	mu    sync.Mutex
	store *store
	sends int
}

func runBridge(t *testing.T, w *watcher, poll time.Duration) *feedRecorder {
	t.Helper()
	rec := &feedRecorder{store: newStore([]string{"claude"}, demoProject)}
	b := newBridge(w, func(m tea.Msg) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.store.apply(m.(feedMsg))
		rec.sends++
	})
	b.poll = poll
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return rec
}

// calls is how many tool calls the store holds for the run in dir.
func (r *feedRecorder) calls(dir string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := 0
	for _, t := range r.store.run(dir).state.Tails {
		calls += t.Calls
	}
	return calls
}

func (r *feedRecorder) reading(agent string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.store.probes[agent].Verdict
}

// startedRun writes a run with one live tail.
func startedRun(t *testing.T, stateDir, name string) *testJournal {
	j := openRun(t, stateDir, "calibrate", name)
	j.j.Append(&journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 1, Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
	j.j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	return j
}

// With inotify the app is live without polling: a run appending events, a run made after
// the app started and a new probe reading all arrive promptly, though the bridge's poll
// comes once an hour.
func TestBridgeIsLiveWithoutPolling(t *testing.T) {
	stateDir := t.TempDir()
	old := startedRun(t, stateDir, "old")
	old.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 1}})
	rec := runBridge(t, newWatcher(stateDir, nil, nil, nil), time.Hour)
	until(t, 5*time.Second, "the first read did not arrive", func() bool { return rec.calls(old.dir) == 1 })

	old.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 2}})
	until(t, 2*time.Second, "an appended tool call did not arrive without a poll", func() bool { return rec.calls(old.dir) == 2 })

	// A run made now: its folder first, its journal after, as the engine makes them.
	fresh := startedRun(t, stateDir, "fresh")
	fresh.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 1}})
	until(t, 2*time.Second, "a run made after the app started did not arrive without a poll", func() bool { return rec.calls(fresh.dir) == 1 })
	// A new command's folder, and a run in it.
	other := openRun(t, stateDir, "record", "other")
	other.j.Append(&journal.Event{RunStarted: &journal.RunStarted{Kind: "record", Budget: 1, Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
	other.j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	other.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 1}})
	until(t, 2*time.Second, "a run of a new command did not arrive without a poll", func() bool { return rec.calls(other.dir) == 1 })

	writeProbe(t, stateDir, probe.Summary{Agent: "claude", Verdict: "tare: 0.00", Zero: true, At: t0, Project: demoProject, Room: probe.RoomModelServer})
	until(t, 2*time.Second, "a new reading did not arrive without a poll", func() bool { return rec.reading("claude") == "tare: 0.00" })

	// A finished run retried: it goes on after its end.
	old.j.Append(&journal.Event{RunFinished: &journal.RunFinished{Report: "done"}})
	old.j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh", Attempt: 1}})
	old.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 3}})
	until(t, 2*time.Second, "a finished run's retry did not arrive without a poll", func() bool { return rec.calls(old.dir) == 3 })
}

// When inotify cannot be used (every watch refused, as when the user's watches are all
// taken), the watcher polls: appended events and new runs still arrive.
func TestBridgePollsWhenWatchesRunOut(t *testing.T) {
	for name, free := range map[string]int{"no watch at all": 0, "the tree but no run": 2} {
		t.Run(name, func(t *testing.T) {
			stateDir := t.TempDir()
			old := startedRun(t, stateDir, "old")
			w := newWatcher(stateDir, nil, nil, nil)
			var mu sync.Mutex
			placed := 0
			w.addWatch = func(dir string) error {
				mu.Lock()
				defer mu.Unlock()
				if placed >= free {
					return syscall.ENOSPC // inotify_add_watch's "the user's watches are all taken"
				}
				placed++
				return w.notify.fs.Add(dir)
			}
			rec := runBridge(t, w, pollEvery)
			old.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 1}})
			until(t, 5*time.Second, "an appended tool call did not arrive by polling", func() bool { return rec.calls(old.dir) == 1 })
			fresh := startedRun(t, stateDir, "fresh")
			fresh.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 1}})
			until(t, 5*time.Second, "a new run did not arrive by polling", func() bool { return rec.calls(fresh.dir) == 1 })
			other := openRun(t, stateDir, "record", "other")
			other.j.Append(&journal.Event{RunStarted: &journal.RunStarted{Kind: "record", Budget: 1, Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
			other.j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
			other.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Calls: 1}})
			until(t, 5*time.Second, "a run of a new command did not arrive by polling", func() bool { return rec.calls(other.dir) == 1 })
		})
	}
}

// Polling, a finished run is read once a scan, not at every poll: an idle app following
// many finished runs does not read them ten times a second.
func TestPollingLeavesFinishedRunsToTheScan(t *testing.T) {
	stateDir := t.TempDir()
	j := startedRun(t, stateDir, "done")
	j.j.Append(&journal.Event{RunFinished: &journal.RunFinished{Report: "done"}})
	w := newWatcher(stateDir, nil, nil, nil)
	now := time.Now()
	if f := w.poll(now); len(f.runs) != 1 {
		t.Fatalf("the first poll read %d runs, want 1", len(f.runs))
	}
	// Removing the journal shows whether a poll looks at it: the follower would log that it is gone.
	journal := filepath.Join(j.dir, journal.JournalFile)
	if err := os.Rename(journal, journal+".away"); err != nil {
		t.Fatal(err)
	}
	w.poll(now.Add(pollEvery))
	if fl := w.followers[j.dir]; fl.last != nil {
		t.Fatalf("a poll between scans read the finished run: %v", fl.last)
	}
	w.poll(now.Add(w.scanEvery))
	if fl := w.followers[j.dir]; fl.last == nil || !os.IsNotExist(fl.last) {
		t.Fatalf("the scan did not read the finished run: %v", fl.last)
	}
}

// An app whose runs are all finished does not tick every second; a run that goes live
// starts the one-second clock at once, and the tick chain it replaced is dropped.
func TestClockIsSlowWhileNothingIsLive(t *testing.T) {
	stateDir := t.TempDir()
	done := startedRun(t, stateDir, "done")
	done.j.Append(&journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusPassed, Passed: true}})
	done.j.Append(&journal.Event{RunFinished: &journal.RunFinished{Report: "done"}})
	m := newModel(modelConfig{styles: asciiStyles(), probes: true})
	w := newWatcher(stateDir, nil, nil, nil)
	m.Init()
	m.Update(w.poll(time.Now()))
	if m.clock.live {
		t.Fatal("the clock ticks every second with every run finished")
	}
	slow := m.clock.gen

	startedRun(t, stateDir, "live")
	w.lastScan = time.Time{}
	_, cmd := m.Update(w.poll(time.Now()))
	if !m.clock.live || m.clock.gen == slow || cmd == nil {
		t.Fatalf("a run went live and the clock did not start ticking every second (live %v, gen %d)", m.clock.live, m.clock.gen)
	}
	if _, cmd := m.Update(clockMsg{at: time.Now(), gen: slow}); cmd != nil {
		t.Fatal("the slow chain's tick went on beside the live one")
	}
	if _, cmd := m.Update(clockMsg{at: time.Now(), gen: m.clock.gen}); cmd == nil || !m.clock.live {
		t.Fatal("the live chain stopped")
	}
}
