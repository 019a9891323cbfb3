package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Clock periods: every second while a run is live (its elapsed time counts up on screen);
// otherwise only a reading's "3m ago" moves, so an idle app with many finished runs redraws
// every few seconds, not every second per program and per ssh session.
const (
	liveTick = time.Second
	idleTick = 10 * time.Second
)

// tickMsg refreshes what depends on the clock: elapsed times, a reading's age, a status
// that expires.
type tickMsg time.Time

// clockMsg is a tick of the clock's chain. gen tells a tick of the current chain from a
// stale one: the chain restarts at the live period when a run goes live.
type clockMsg struct {
	at  time.Time
	gen int
}

// clock is the model's tick chain.
type clock struct {
	gen  int
	live bool
}

// nextTick schedules the next tick of the chain at the period the runs ask for.
func (m *model) nextTick() tea.Cmd {
	m.clock.live = m.anyLive()
	d := idleTick
	if m.clock.live {
		d = liveTick
	}
	gen := m.clock.gen
	return tea.Tick(d, func(t time.Time) tea.Msg { return clockMsg{at: t, gen: gen} })
}

// Update runs the model on msg and keeps the clock's pace: a tick of the current chain is a
// tickMsg and schedules the next; after anything else, a run gone live or a status to clear
// starts the one-second chain at once.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if c, ok := msg.(clockMsg); ok {
		if c.gen != m.clock.gen {
			return m, nil // a chain the live one replaced
		}
		m.update(tickMsg(c.at))
		return m, m.nextTick()
	}
	_, cmd := m.update(msg)
	return m, tea.Batch(cmd, m.wakeClock())
}

// wakeClock restarts the chain at the live period when a run went live since the last tick.
func (m *model) wakeClock() tea.Cmd {
	if m.clock.live || !m.anyLive() {
		return nil
	}
	m.clock.gen++
	return m.nextTick()
}

// anyLive reports whether a run shows a time that counts up, or a status waits to clear.
func (m *model) anyLive() bool {
	if m.status != "" {
		return true
	}
	for _, r := range m.env.store.runs {
		if r.status() == "live" {
			return true
		}
	}
	return false
}
