package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
	enginerun "tare/engine/run"
)

// TestStoppedRunsTailsReadInterrupted: a real calibrate (the real claude CLI in its room, on
// tare's model server) is stopped while its tail waits on the model, as ctrl+c stops tare.
// No process owns the run now: its tail reads interrupted in the tails table and in the tail
// view, its time does not count on, and the run's header counts it as the table shows it,
// not as running.
func TestStoppedRunsTailsReadInterrupted(t *testing.T) {
	w, done, stop := liveRun(t, "[[turn]]\nshell = \"cat README.md\"\n\n[[turn]]\ndelay = \"120s\"\ntext = \"Done.\"\n")
	defer stop()
	// The tail has made its call and waits on the model: stop the run under it.
	var dir string
	for dir == "" {
		select {
		case <-done:
			t.Fatal("the run ended before it was stopped")
		case <-time.After(100 * time.Millisecond):
		}
		runs, _ := filepath.Glob(filepath.Join(w.cfg.StateDir, "calibrate", "*", journal.JournalFile))
		for _, j := range runs {
			if ev, err := journal.ReadJournal(filepath.Dir(j)); err == nil {
				if st := journal.Replay("", ev); st.Tails["a-0"] != nil && st.Tails["a-0"].Calls > 0 {
					dir = filepath.Dir(j)
				}
			}
		}
	}
	stop()

	m := newModel(modelConfig{engine: newStub(), styles: asciiStyles(), now: time.Now, agents: []string{"claude"}, probes: true})
	tm := &testModel{model: m, t: t, w: newWatcher(w.cfg.StateDir, nil, enginerun.Alive, nil)}
	tm.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tm.pollNow()
	tm.pollNow() // the engine's word on who owns the run comes with the second read
	tm.send(openRunMsg{dir})
	if s := tm.run.entry().status(); s != "crashed" {
		t.Fatalf("the stopped run is %s:\n%s", s, tm.View())
	}
	row := lineWith(tm.View(), "a-0 ")
	if !strings.Contains(row, "interrupted") || strings.Contains(row, "running") {
		t.Errorf("the stopped run's tail row: %q", row)
	}
	if head := tm.View(); !strings.Contains(head, "0 done · 1 interrupted · of 1") || !strings.Contains(head, " 1 interrupted ") {
		t.Errorf("the header and the pass rate count the tail as the table shows it:\n%s", head)
	}
	if f := footerOf(tm.View()); strings.Contains(f, "kill tail") || !strings.Contains(f, "resume run") {
		t.Errorf("the stopped run's footer: %s", f)
	}
	tm.send(openTailMsg{dir, "a-0"})
	if f := footerOf(tm.View()); strings.Contains(f, "kill tail") {
		t.Errorf("the interrupted tail's footer offers a kill: %s", f)
	}
	first := lineWith(tm.View(), " calls · ")
	tm.env.now = func() time.Time { return time.Now().Add(10 * time.Minute) }
	tm.refresh()
	later := lineWith(tm.View(), " calls · ")
	if !strings.HasPrefix(strings.TrimSpace(first), "interrupted · ") || first != later {
		t.Errorf("the tail view's status line, then ten minutes on: %q, %q", first, later)
	}
}
