package tui

import (
	"bytes"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
	"tare/engine/probe"
)

// An app with nothing on screen that changes with time schedules no tick at all; a status
// starts the one-second clock, which stops once the status has cleared; a probe reading's
// age ticks once, when "1m ago" turns into "2m ago".
func TestClockStopsWhenNothingChangesWithTime(t *testing.T) {
	stateDir := t.TempDir()
	done := startedRun(t, stateDir, "done")
	done.j.Append(&journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusPassed, Passed: true}})
	done.j.Append(&journal.Event{RunFinished: &journal.RunFinished{Report: "done"}})
	now := time.Now()
	m := newModel(modelConfig{styles: asciiStyles(), probes: true, now: func() time.Time { return now }})
	w := newWatcher(stateDir, nil, nil, nil)
	if cmd := m.nextTick(); cmd != nil || !m.clock.due.IsZero() {
		t.Fatalf("an app showing nothing that changes with time scheduled a tick at %s", m.clock.due)
	}
	if _, cmd := m.Update(w.poll(now)); cmd != nil && len(run(cmd)) > 0 || !m.clock.due.IsZero() {
		t.Fatalf("finished runs started the clock (next tick %s)", m.clock.due)
	}

	m.note("saved")
	if cmd := m.wakeClock(); cmd == nil || !m.clock.live || m.clock.due != now.Add(liveTick) {
		t.Fatalf("a status to clear did not start the one-second clock (due %s)", m.clock.due)
	}
	now = now.Add(time.Minute) // the status has expired
	if _, cmd := m.Update(clockMsg{at: now, gen: m.clock.gen}); cmd != nil || m.status != "" || !m.clock.due.IsZero() {
		t.Fatalf("the clock went on after the status cleared (status %q, due %s)", m.status, m.clock.due)
	}

	m.env.store.probes = map[string]probe.Summary{"claude": {Agent: "claude", Verdict: "tare: 0.00", At: now.Add(-90 * time.Second)}}
	if cmd := m.wakeClock(); cmd == nil {
		t.Fatal("a reading's age on screen did not start the clock")
	}
	if want := now.Add(30*time.Second + 10*time.Millisecond); m.clock.due != want {
		t.Fatalf("the reading's clock ticks at %s, want %s (when 1m ago turns 2m ago)", m.clock.due, want)
	}
}

// syncBuffer is a terminal the renderer writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// An idle app's renderer does not wake: the pacer stops its ticker a few frames after the
// last message, and a key starts it again and is drawn. It also fails if a Bubble Tea
// upgrade moves the renderer's ticker out of the pacer's reach.
func TestPacerStopsTheRendererWhenIdle(t *testing.T) {
	m := newModel(modelConfig{styles: asciiStyles(), probes: true, agents: []string{"claude"}})
	out := &syncBuffer{}
	p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(out), tea.WithFPS(60))
	m.clock.pace = newPacer(p)
	ran := make(chan error, 1)
	go func() { _, err := p.Run(); ran <- err }()
	defer func() { p.Quit(); <-ran }()
	p.Send(tea.WindowSizeMsg{Width: 100, Height: 30})
	until(t, 5*time.Second, "the pacer did not find Bubble Tea's renderer ticker", func() bool {
		found, _ := m.clock.pace.state()
		return found
	})
	idle := func() bool { _, ticking := m.clock.pace.state(); return !ticking }
	until(t, 5*time.Second, "the renderer kept ticking with nothing to draw", idle)
	drawn := out.Len()
	p.Send(keyMsg("?"))
	until(t, 5*time.Second, "a key after the renderer stopped was not drawn", func() bool { return out.Len() > drawn })
	until(t, 5*time.Second, "the renderer did not stop again after the key", idle)
}
