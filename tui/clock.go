package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// The clock ticks only while something on screen changes with time: every second while a
// run is live (its elapsed time counts up) or a status waits to clear; otherwise once when
// a reading's "3m ago" turns into "4m ago", and not at all when nothing shows an age. An
// idle app, ticking nothing, then lets its renderer stop too (pace.go). Any message that
// needs the clock sooner (a run gone live, a status, a new reading) restarts it.
const liveTick = time.Second

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
	// due is when the chain's next tick comes; zero when no tick is scheduled.
	due time.Time
	// pace stops and starts the program's renderer (nil in tests without a program).
	pace *pacer
}

// nextTick schedules the next tick of the chain when the screen next changes with time, or
// none if nothing on it does.
func (m *model) nextTick() tea.Cmd {
	now := m.env.now()
	d, ok := m.tickIn(now)
	if !ok {
		m.clock.due = time.Time{}
		return nil
	}
	m.clock.due = now.Add(d)
	gen := m.clock.gen
	return tea.Tick(d, func(t time.Time) tea.Msg { return clockMsg{at: t, gen: gen} })
}

// tickIn says how long until the screen changes with time, and false if nothing on it does.
func (m *model) tickIn(now time.Time) (time.Duration, bool) {
	m.clock.live = m.anyLive()
	if m.clock.live {
		return liveTick, true
	}
	var next time.Time
	for _, r := range m.env.store.probes {
		if t := agoChanges(r.At, now); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if next.IsZero() {
		return 0, false
	}
	return max(next.Sub(now), 0), true
}

// agoChanges is when ago(t, now) next reads differently (zero: never).
func agoChanges(t, now time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	d := now.Sub(t)
	unit := 24 * time.Hour
	switch {
	case d < time.Hour: // "just now" and "3m ago"
		unit = time.Minute
	case d < 48*time.Hour:
		unit = time.Hour
	}
	// A little past the boundary, so that the tick sees the new reading.
	return t.Add((d/unit+1)*unit + 10*time.Millisecond)
}

// Update runs the model on msg and keeps the clock's pace: a tick of the current chain is a
// tickMsg and schedules the next; after anything else, a run gone live, a status to clear or
// a reading's age starts the chain at once if it would tick sooner than the one running.
// Every message wakes the renderer (pace.go), as the view may change.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.clock.pace.wake()
	if c, ok := msg.(clockMsg); ok {
		if c.gen != m.clock.gen {
			return m, nil // a chain the live one replaced
		}
		_, cmd := m.update(tickMsg(c.at))
		return m, tea.Batch(cmd, m.nextTick())
	}
	_, cmd := m.update(msg)
	return m, tea.Batch(cmd, m.wakeClock())
}

// wakeClock starts a new chain when the screen now changes with time sooner than the
// running chain's next tick (or there is none); the old chain's ticks are then dropped.
func (m *model) wakeClock() tea.Cmd {
	now := m.env.now()
	d, ok := m.tickIn(now)
	if !ok || (!m.clock.due.IsZero() && !now.Add(d).Before(m.clock.due)) {
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
