package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"tare/engine/journal"
)

// fieldSpec is one field of the new-run form.
type fieldSpec struct {
	key, label, placeholder, def string
	// check says what is wrong with a value, in a line that names the fix.
	check func(string) error
}

// runKind is a kind of run the form can start: its fields and the engine call. Cliff and
// swap become entries of runKinds when the engine has them.
type runKind struct {
	name   string
	fields []fieldSpec
	start  func(ctx context.Context, e Engine, v map[string]string) (string, error)
	// intent, when set, is what the form asks of the root instead of starting a run (the
	// attach form); the form closes as it is sent.
	intent func(v map[string]string) tea.Msg
}

// runKinds is every kind the form offers, in the order it cycles through them.
var runKinds = []runKind{{
	name: "calibrate",
	fields: []fieldSpec{
		{key: "prompt", label: "prompt", placeholder: "what every tail is asked to do", check: needed("prompt", "say what every tail is asked to do")},
		{key: "sides", label: "sides", placeholder: "claude --model haiku; codex", check: needed("sides", "give at least one agent, sides separated by ;")},
		{key: "check", label: "check", placeholder: "the command that passes or fails a tail, e.g. make test"},
		{key: "timeout", label: "timeout", def: "10m", check: duration("timeout", "how long a check may run, e.g. 90s or 10m")},
		{key: "runs", label: "runs", def: "10", check: positive("runs")},
		{key: "jobs", label: "jobs", def: "2", check: positive("jobs")},
		{key: "project", label: "project", def: ".", check: needed("project", "give the folder the agents work in")},
		{key: "script", label: "script", placeholder: "model script (TOML): every side talks to tare's own model server"},
	},
	start: func(ctx context.Context, e Engine, v map[string]string) (string, error) {
		c := Calibrate{Prompt: v["prompt"], Check: v["check"], Project: v["project"], Script: v["script"]}
		for _, s := range strings.Split(v["sides"], ";") {
			if s = strings.TrimSpace(s); s != "" {
				c.Sides = append(c.Sides, s)
			}
		}
		c.CheckTimeout, _ = time.ParseDuration(v["timeout"])
		c.Runs, _ = strconv.Atoi(v["runs"])
		c.Jobs, _ = strconv.Atoi(v["jobs"])
		return e.StartCalibrate(ctx, c)
	},
}}

// attachForm asks how to attach agent: offline (tare's own model server, replaying a
// model script, so no account or network is needed) or with its real provider.
func attachForm(e *env, agent string) *form {
	k := runKind{
		name: "attach",
		fields: []fieldSpec{
			{key: "offline", label: "offline", def: "yes", check: yesNo("offline")},
			{key: "script", label: "script", placeholder: "model script (TOML) when offline; empty: tare's probe replies"},
		},
		intent: func(v map[string]string) tea.Msg {
			return attachMsg{agent: agent, offline: v["offline"] == "yes", script: v["script"]}
		},
	}
	f := &form{env: e, title: "Attach " + agent, kinds: []runKind{k}, errField: -1}
	f.setKind(0)
	return f
}

func yesNo(name string) func(string) error {
	return func(s string) error {
		if s = strings.TrimSpace(s); s != "yes" && s != "no" {
			return fmt.Errorf("%s is %q; fix: yes (tare's model server) or no (the agent's real provider and login)", name, s)
		}
		return nil
	}
}

func needed(name, fix string) func(string) error {
	return func(s string) error {
		if strings.Trim(s, " ;") == "" {
			return fmt.Errorf("%s is empty; %s", name, fix)
		}
		return nil
	}
}

func duration(name, fix string) func(string) error {
	return func(s string) error {
		if d, err := time.ParseDuration(strings.TrimSpace(s)); err != nil || d <= 0 {
			return fmt.Errorf("%s %q is not a duration; fix: %s", name, s, fix)
		}
		return nil
	}
}

func positive(name string) func(string) error {
	return func(s string) error {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err != nil || n < 1 {
			return fmt.Errorf("%s %q is not a whole number of 1 or more", name, s)
		}
		return nil
	}
}

// form is the new-run dialog: a kind, then that kind's fields.
type form struct {
	env    *env
	title  string
	kinds  []runKind
	kind   int
	inputs []textinput.Model
	focus  int
	err    string
	// errField is the field err is about (drawn under it); -1 for the form as a whole.
	errField int
	// sent is true while the engine is deciding on the values: the form stays open with
	// them, so a refusal costs the operator nothing but the fix.
	sent bool
}

func newForm(e *env) *form {
	f := &form{env: e, title: "New run · " + runKinds[0].name, kinds: runKinds, errField: -1}
	f.setKind(0)
	return f
}

func (f *form) setKind(i int) {
	f.kind = i
	f.inputs = nil
	for _, spec := range f.kinds[i].fields {
		ti := textinput.New()
		ti.Prompt = ""
		ti.Cursor.SetMode(cursor.CursorStatic)
		ti.Placeholder = spec.placeholder
		ti.SetValue(spec.def)
		ti.PlaceholderStyle = f.env.st.tones[dim]
		ti.TextStyle = f.env.st.tones[plain]
		ti.Cursor.Style = f.env.st.cursor
		ti.Cursor.TextStyle = f.env.st.tones[plain]
		f.inputs = append(f.inputs, ti)
	}
	f.focus = 0
	f.inputs[0].Focus()
}

func (f *form) move(step int) {
	f.inputs[f.focus].Blur()
	n := len(f.inputs)
	f.focus = ((f.focus+step)%n + n) % n
	f.inputs[f.focus].Focus()
}

// values are the fields by key, trimmed.
func (f *form) values() map[string]string {
	v := map[string]string{}
	for i, spec := range f.kinds[f.kind].fields {
		v[spec.key] = strings.TrimSpace(f.inputs[i].Value())
	}
	return v
}

// validate checks every field; the first problem is shown and focused.
func (f *form) validate() bool {
	for i, spec := range f.kinds[f.kind].fields {
		if spec.check == nil {
			continue
		}
		if err := spec.check(f.inputs[i].Value()); err != nil {
			f.err, f.errField = err.Error(), i
			f.move(i - f.focus)
			return false
		}
	}
	f.err, f.errField = "", -1
	return true
}

// refused shows why the engine did not start the run, whole, under the field it names (the
// flag in the reason: --side is the sides field), and focuses that field.
func (f *form) refused(err error) {
	f.sent = false
	f.err, f.errField = journal.Printable(err.Error()), -1
	for i, spec := range f.kinds[f.kind].fields {
		flag := "--" + strings.TrimSuffix(spec.key, "s")
		if strings.Contains(f.err, flag+" ") || strings.Contains(f.err, flag+"=") || strings.Contains(f.err, "--"+spec.key) {
			f.errField = i
			f.move(i - f.focus)
			return
		}
	}
}

// update handles a key. done is true when the form closes: cancelled (cmd nil) or sent.
func (f *form) update(msg tea.KeyMsg) (done bool, cmd tea.Cmd) {
	k := f.env.keys
	switch {
	case msg.Type == tea.KeyEsc:
		return true, nil
	case f.sent:
		return false, nil // the values are with the engine; esc still closes
	// Arrows only: j and k are letters a prompt needs.
	case key.Matches(msg, k.Next), msg.Type == tea.KeyDown:
		f.move(1)
		return false, nil
	case key.Matches(msg, k.Prev), msg.Type == tea.KeyUp:
		f.move(-1)
		return false, nil
	case msg.Type == tea.KeyCtrlRight || msg.Type == tea.KeyCtrlLeft:
		step := 1
		if msg.Type == tea.KeyCtrlLeft {
			step = -1
		}
		f.setKind(((f.kind+step)%len(f.kinds) + len(f.kinds)) % len(f.kinds))
		return false, nil
	case key.Matches(msg, k.Submit), msg.Type == tea.KeyEnter && f.focus == len(f.inputs)-1:
		if !f.validate() {
			return false, nil
		}
		if in := f.kinds[f.kind].intent; in != nil {
			return true, emit(in(f.values()))
		}
		f.sent = true
		return false, emit(startMsg{kind: f.kinds[f.kind].name, values: f.values()})
	case msg.Type == tea.KeyEnter:
		f.move(1)
		return false, nil
	}
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	return false, cmd
}

// view is the dialog's body, w cells wide.
func (f *form) view(w int) string {
	s := f.env.st
	kinds := make([]string, len(f.kinds))
	for i, rk := range f.kinds {
		kinds[i] = rk.name
		if i == f.kind {
			kinds[i] = s.tone(accent, "["+rk.name+"]")
		}
	}
	var lines []string
	if len(f.kinds) > 1 {
		lines = []string{"kind      " + strings.Join(kinds, " ") + s.tone(dim, "  (ctrl+←/→)"), ""}
	}
	for i, spec := range f.kinds[f.kind].fields {
		mark := "  "
		if i == f.focus {
			mark = s.tone(accent, "> ")
		}
		f.inputs[i].Width = max(w-12, 4)
		lines = append(lines, mark+fit(spec.label, 8)+f.inputs[i].View())
		if f.err != "" && i == f.errField {
			lines = append(lines, f.errLines(w)...)
		}
	}
	lines = append(lines, "")
	switch {
	case f.sent:
		lines = append(lines, s.tone(warn, "starting "+f.kinds[f.kind].name+"…"))
	case f.err != "" && f.errField < 0:
		lines = append(lines, f.errLines(w)...)
	default:
		lines = append(lines, s.tone(dim, "tab next field · enter on the last field or ctrl+s starts · esc cancels"))
	}
	return strings.Join(lines, "\n")
}

// errLines is the whole error, wrapped to the form's width below the field labels.
func (f *form) errLines(w int) []string {
	var out []string
	for _, l := range strings.Split(ansi.Wrap(f.err, max(w-10, 10), " "), "\n") {
		out = append(out, strings.Repeat(" ", 10)+f.env.st.statusErr.Render(l))
	}
	return out
}

// startRun calls the engine for a form's values; the answer opens the new run.
func startRun(ctx context.Context, e Engine, m startMsg) tea.Cmd {
	return func() tea.Msg {
		if e == nil {
			return startedMsg{kind: m.kind, err: errReadOnly}
		}
		for _, rk := range runKinds {
			if rk.name == m.kind {
				dir, err := rk.start(ctx, e, m.values)
				return startedMsg{kind: m.kind, dir: dir, err: err}
			}
		}
		return startedMsg{kind: m.kind, err: fmt.Errorf("no run kind %q", m.kind)}
	}
}

// startedMsg is the engine's answer to a startMsg: the new run's directory.
type startedMsg struct {
	kind, dir string
	err       error
}
