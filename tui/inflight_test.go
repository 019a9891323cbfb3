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

// TestTailViewShowsTheCallInFlight: a real calibrate (the real claude CLI in its room, on
// tare's model server) whose agent says a sentence and then runs `sleep 60`. While the sleep
// runs, no journal event comes; the tail view shows the call it waits on, how long it has
// waited, and what the agent said before it.
func TestTailViewShowsTheCallInFlight(t *testing.T) {
	w, done, stop := liveRun(t, "[[turn]]\ntext = \"Thinking hard.\"\nshell = \"sleep 60\"\n\n[[turn]]\ntext = \"Done.\"\n")
	defer stop()
	// The agent's stream has the call, and nothing has ended it.
	var dir string
	for dir == "" {
		select {
		case <-done:
			t.Fatal("the run ended before its call")
		case <-time.After(100 * time.Millisecond):
		}
		runs, _ := filepath.Glob(filepath.Join(w.cfg.StateDir, "calibrate", "*"))
		for _, r := range runs {
			if d, err := journal.ReadTailDetail(r, "a-0"); err == nil && len(d.Calls) == 1 && d.Calls[0].Output == "" {
				dir = r
			}
		}
	}
	m := newModel(modelConfig{engine: newStub(), styles: asciiStyles(), now: time.Now, agents: []string{"claude"}, probes: true})
	tm := &testModel{model: m, t: t, w: newWatcher(w.cfg.StateDir, nil, enginerun.Alive, nil)}
	tm.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tm.pollNow()
	tm.send(openRunMsg{dir})
	tm.send(openTailMsg{dir, "a-0"})
	tm.send(tickMsg(time.Now()))
	now := lineWith(tm.View(), "now: ")
	if !strings.Contains(now, "now: Bash `sleep 60` · 0:0") || !strings.Contains(now, `"Thinking hard." → `) {
		t.Errorf("the tail view does not show the call in flight: %q\n%s", now, tm.View())
	}
}
