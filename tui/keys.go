package tui

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every key the app answers to. The footer and the ? help are generated from it,
// so a binding changed here changes what the app says about it.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	// HalfUp and HalfDown move half a page (ctrl+u, ctrl+d, as in less and vim).
	HalfUp, HalfDown key.Binding

	// Next and Prev move focus between the panes of a screen.
	Next, Prev key.Binding
	// Open opens the selection (a run, a tail, a probe's reading).
	Open key.Binding
	// Probe takes a new reading of the selected agent.
	Probe key.Binding
	// Back closes a dialog, a filter, a diff, then goes back a screen.
	Back   key.Binding
	Filter key.Binding

	// Resume continues a crashed run; Retry reruns a failed tail; Kill stops a running tail
	// after a confirmation. Each is the engine call the command line makes.
	Resume, Retry, Kill key.Binding
	// New opens the form that starts a run.
	New key.Binding
	// Diff shows what the tail changed (from its capsules) in the tail view.
	Diff key.Binding
	// Delete removes a run no process owns (done, error, crashed), after a confirmation.
	Delete key.Binding
	// Sort cycles the tails' order: start, status, time, cost.
	Sort key.Binding
	// Pager opens the run's report, or the tail's result, stderr and stream, in $PAGER.
	Pager key.Binding
	// Attach runs the selected agent attached, in the terminal pane.
	Attach key.Binding
	// Terminal returns to the terminal pane while its program runs.
	Terminal key.Binding
	// Release is the one chord the terminal pane keeps for the app: it returns focus to tare.
	Release key.Binding

	// Find opens the search line of a run's tails (/ filters any table by its rows' words;
	// f searches what the agents said and did).
	Find key.Binding
	// Mark marks the selected tail as the first of two to compare; Compare lays the selected
	// tail beside the marked one (of this run or another). Side is the two in one footer entry.
	Mark, Compare, Side key.Binding
	// Shot shows the path of the screenshot the judge scored for the selected tail.
	Shot key.Binding

	// The Writers pane's keys, each one workshop command on the selected writer: Report opens
	// the experiment's report, WriterRun and WriterManual start a prepared writer (in its room,
	// or by hand in the terminal pane), Collect archives and checks its drafts, WriterResume
	// continues one a quota wall or an expired login stopped, WriterRetry stages a new writer
	// in its seat, Anonymize seals the experiment's drafts.
	Report, WriterRun, WriterManual, Collect, WriterResume, WriterRetry, Anonymize key.Binding

	Confirm, Cancel key.Binding
	// Submit sends the new-run form from any field.
	Submit key.Binding

	Help, Quit key.Binding
}

// DefaultKeyMap returns tare's keys.
func DefaultKeyMap() KeyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		// j/k/g/G as in less, vim, k9s and lazygit: their users press them first.
		Up:       b("↑/k", "up", "up", "k", "ctrl+p"),
		Down:     b("↓/j", "down", "down", "j", "ctrl+n"),
		PageUp:   b("pgup", "page up", "pgup"),
		PageDown: b("pgdn", "page down", "pgdown"),
		HalfUp:   b("ctrl+u", "half page up", "ctrl+u"),
		HalfDown: b("ctrl+d", "half page down", "ctrl+d"),
		Top:      b("g/home", "first", "home", "g"),
		Bottom:   b("G/end", "last", "end", "G"),
		Next:     b("tab", "next pane", "tab"),
		Prev:     b("shift+tab", "previous pane", "shift+tab"),
		Open:     b("enter", "open", "enter"),
		Back:     b("esc", "back", "esc"),
		Filter:   b("/", "filter", "/"),
		Resume:   b("r", "resume run", "r"),
		Retry:    b("R", "retry tail", "R"),
		// Not k: that is up for every k9s user, and a kill must not be one slip away.
		Kill:     b("x", "kill tail", "x", "ctrl+k"),
		Probe:    b("p", "probe", "p"),
		New:      b("n", "new run", "n"),
		Diff:     b("d", "changes", "d"),
		Pager:    b("o", "open logs", "o"),
		Sort:     b("S", "sort", "S"), // s is a judged tail's screenshot
		Delete:   b("D", "delete run", "D"),
		Attach:   b("a", "attach agent", "a"),
		Terminal: b("t", "terminal", "t"),
		Release:  b("ctrl+]", "back to tare", "ctrl+]"),
		Find:     b("f", "find", "f"),
		Mark:     b("m", "mark tail", "m"),
		Compare:  b("=", "beside marked", "="),
		// The footer has room for one entry for the two.
		Side: b("m/=", "compare", "m", "="),
		Shot: b("s", "screenshot path", "s"),

		Report:       b("enter", "report", "enter"),
		WriterRun:    b("r", "run writer", "r"),
		WriterManual: b("m", "write by hand", "m"),
		Collect:      b("c", "collect", "c"),
		WriterResume: b("u", "resume (quota/login)", "u"),
		WriterRetry:  b("R", "retry as new", "R"),
		Anonymize:    b("A", "anonymize", "A"),

		Confirm: b("y", "yes", "y", "Y"),
		Cancel:  b("n", "no", "n", "N", "esc"),
		Submit:  b("ctrl+s", "start", "ctrl+s"),
		Help:    b("?", "help", "?"),
		Quit:    b("q", "quit", "q", "ctrl+c"),
	}
}

// with returns b with another description, for a key whose meaning depends on the pane.
func with(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}

// helpKeys is the help for one moment of the app: the keys that act on the row under the
// cursor (short, the footer's) and every key of the view, in titled groups (the ? help's).
type helpKeys struct {
	short  []key.Binding
	groups []helpGroup
}

// helpGroup is one pane's keys (or the moves, or the keys of every view) under its title.
type helpGroup struct {
	title string
	keys  []key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding { return h.short }
