package tui

import (
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// env is what every view and pane of one program shares: its session's styles, the keys,
// the store and the clock. The root owns it; panes only read it.
type env struct {
	st    styles
	keys  KeyMap
	store *store
	now   func() time.Time
	// mark is the tail m marked, to lay beside another with = (kept across runs).
	mark *tailRef
}

// pane is one bordered part of a screen (probes, runs, the tails table, pass rates...).
// Panes are concrete structs the root calls through this small interface; a pane never
// calls the root. It asks for things by returning a command that yields an intent message
// (openRunMsg, killTailMsg...), which the root carries out.
type pane interface {
	title() string
	// setSize gives the pane its inner size (inside the border).
	setSize(w, h int)
	// refresh rebuilds the pane's rows from the store, after the store changed.
	refresh()
	// update handles a key while the pane has focus and reports whether it used it.
	update(msg tea.KeyMsg) (bool, tea.Cmd)
	view(focused bool) string
	// help is every key of the pane, for the ? help.
	help() []key.Binding
	// rowHelp is the keys that act on the row under the cursor now, for the footer: a key
	// that would only be refused (kill on a tail that ended) is left out.
	rowHelp() []key.Binding
	// capturing reports that the pane takes every key (its / filter line is open).
	capturing() bool
}

// emit is a command that yields msg: how a pane asks the root to act.
func emit(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

// Intent messages: a pane asks, the root acts (and calls the engine).
type (
	// openRunMsg opens the run view of dir.
	openRunMsg struct{ dir string }
	// openTailMsg opens the tail view of one tail.
	openTailMsg struct{ dir, tail string }
	// probeMsg asks for a new reading of agent.
	probeMsg struct{ agent string }
	// openReadingMsg opens agent's last reading, every line of it.
	openReadingMsg struct{ agent string }
	// attachFormMsg asks how to attach agent (offline, script).
	attachFormMsg struct{ agent string }
	// attachMsg starts agent attached in the terminal pane.
	attachMsg struct {
		agent   string
		offline bool
		script  string
	}
	// resumeMsg continues a crashed run.
	resumeMsg struct{ dir string }
	// retryMsg reruns a failed tail.
	retryMsg struct{ dir, tail string }
	// deleteMsg asks to delete a run that no process owns; the root confirms first.
	deleteMsg struct{ dir string }
	// killMsg asks to stop a running tail; the root confirms first.
	killMsg struct{ dir, tail string }
	// diffMsg asks for the capsule diff of one step of a tail.
	diffMsg struct {
		dir, tail string
		step      int
	}
	// startMsg asks to start a run from the form's values.
	startMsg struct {
		kind   string
		values map[string]string
	}
)

// focusRing is the focus among a screen's panes, moved by tab and shift+tab.
type focusRing struct {
	panes []pane
	focus int
}

func (f *focusRing) current() pane {
	if len(f.panes) == 0 {
		return nil
	}
	return f.panes[f.focus]
}

func (f *focusRing) next(step int) {
	if n := len(f.panes); n > 0 {
		f.focus = ((f.focus+step)%n + n) % n
	}
}

func (f *focusRing) refresh() {
	for _, p := range f.panes {
		p.refresh()
	}
}
