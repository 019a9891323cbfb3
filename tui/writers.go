package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"tare/engine/journal"
	"tare/workshop"
)

// writerRow is one writer as the pane shows it: never its words, its sizes or the key.
type writerRow struct {
	exp, id                    string
	agent, model, tier, status string
	sealed                     bool
	secs, cost                 *float64
	err                        string
}

// writersMsg is what the follower read of every experiment.
type writersMsg struct {
	rows []writerRow
	// bad are experiments that could not be read, with why.
	bad []string
}

// loadWriters reads every experiment's writers: their state and the report's spend, sizes
// withheld whatever the seal says (the pane has no column for them).
func loadWriters(exps []string) writersMsg {
	var msg writersMsg
	no := false
	for _, dir := range exps {
		e, err := workshop.Load(dir)
		if err != nil {
			msg.bad = append(msg.bad, err.Error())
			continue
		}
		r, err := workshop.MakeReport(e, &no)
		if err != nil {
			msg.bad = append(msg.bad, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		sealed := e.IsSealed()
		for _, w := range r.Writers {
			row := writerRow{exp: e.Root, id: w.Writer, agent: w.Agent, model: w.Model, tier: w.Tier, status: string(w.Status),
				sealed: sealed, secs: w.Seconds, cost: w.CostUSD, err: w.Error}
			if s, err := e.State(w.Writer); err == nil {
				row.status = writerStatus(e, w.Writer, s)
			}
			msg.rows = append(msg.rows, row)
		}
	}
	return msg
}

// writerStatus says what a writer's state means now: a running writer whose process is gone
// was interrupted (collect it), a failed one its stream shows at a quota wall can be resumed.
func writerStatus(e *workshop.Exp, id string, s *workshop.State) string {
	switch {
	case s.Status == workshop.StatusRunning && s.Alive() && s.Manual:
		return "by hand"
	case s.Status == workshop.StatusRunning && s.Alive():
		return "running"
	case s.Status == workshop.StatusRunning && s.EndedAt == nil:
		return "interrupted"
	case s.Status == workshop.StatusRunning:
		return "ended"
	case s.Status == workshop.StatusFailed:
		switch e.ResumeKind(id, s) {
		case workshop.ResumeQuota:
			return "quota wall"
		case workshop.ResumeLogin:
			// Resumed like a quota wall once the operator has logged in again.
			return "login expired"
		}
	}
	return string(s.Status)
}

// writersPane lists every experiment's writers with status, tier, time and spend.
type writersPane struct {
	env  *env
	t    *table
	rows map[string]writerRow
	bad  []string
}

func newWritersPane(e *env) *writersPane {
	t := newTable([]column{
		{title: "writer", flex: 3},
		{title: "status", width: 11},
		{title: "tier", width: 7},
		{title: "time", width: 5, right: true},
		{title: "cost", width: 6, right: true},
		{title: "experiment", flex: 1},
	}, "no experiments; tare workshop prepare PLAN "+filepath.Join("STATE", workshop.Dir, "NAME"))
	t.setStyles(e.st)
	return &writersPane{env: e, t: t, rows: map[string]writerRow{}}
}

func (p *writersPane) title() string {
	if len(p.bad) > 0 {
		return fmt.Sprintf("Writers · %d unreadable: %s", len(p.bad), p.bad[0])
	}
	return "Writers"
}
func (p *writersPane) setSize(w, h int)   { p.t.setSize(w, h) }
func (p *writersPane) capturing() bool    { return p.t.filtering }
func (p *writersPane) view(f bool) string { return p.t.view(p.env.st, f) }
func (p *writersPane) refresh()           {}

func (p *writersPane) set(msg writersMsg) {
	p.bad = msg.bad
	p.rows = map[string]writerRow{}
	rows := make([]row, 0, len(msg.rows))
	for _, w := range msg.rows {
		k := w.exp + "\x00" + w.id
		p.rows[k] = w
		name := filepath.Base(w.exp)
		if w.sealed {
			name += " (sealed)"
		}
		secs, spend := "", ""
		if w.secs != nil {
			secs = fmt.Sprintf("%.0fs", *w.secs)
		}
		if w.cost != nil {
			spend = dollars(*w.cost)
		}
		rows = append(rows, row{key: k, cells: []cell{{w.id, plain}, {w.status, writerTone(w.status)}, {w.tier, dim},
			{secs, dim}, {spend, dim}, {name, dim}}})
	}
	p.t.setRows(rows)
}

func writerTone(status string) tone {
	switch status {
	case "completed":
		return good
	case "failed", "interrupted":
		return bad
	case "running", "by hand", "quota wall", "login expired", "ended":
		return warn
	}
	return plain
}

// writerAct is one workshop command the Writers pane asks for on the selected writer.
type writerAct int

const (
	actReport writerAct = iota
	actRun
	actManual
	actResume
	actCollect
	actRetry
	actAnonymize
)

// String is the command's verb, as `tare workshop VERB` and the footer say it.
func (a writerAct) String() string {
	return [...]string{"report", "run", "manual", "resume", "collect", "retry", "anonymize"}[a]
}

// writerActs pairs each of the pane's keys with its command.
func writerActs(k KeyMap) []struct {
	b   key.Binding
	act writerAct
} {
	return []struct {
		b   key.Binding
		act writerAct
	}{{k.Report, actReport}, {k.WriterRun, actRun}, {k.WriterManual, actManual}, {k.Collect, actCollect},
		{k.WriterResume, actResume}, {k.WriterRetry, actRetry}, {k.Anonymize, actAnonymize}}
}

// writerMsg asks the root for one workshop action on the selected writer.
type writerMsg struct {
	act     writerAct
	exp, id string
	// newID is the id a retry stages (the engine names it before the confirmation).
	newID string
	// status is the writer's as the pane showed it when the key was pressed, and sealed
	// whether its experiment was: anonymize then asks to reseal, and reseals only if so.
	status string
	sealed bool
}

func (p *writersPane) update(msg tea.KeyMsg) (bool, tea.Cmd) {
	if !p.t.filtering {
		if w, ok := p.rows[p.t.selected()]; ok {
			for _, a := range writerActs(p.env.keys) {
				if key.Matches(msg, a.b) {
					return true, emit(writerMsg{act: a.act, exp: w.exp, id: w.id, status: w.status, sealed: w.sealed})
				}
			}
		}
	}
	return p.t.update(p.env.keys, msg)
}

func (p *writersPane) help() []key.Binding {
	k := p.env.keys
	return []key.Binding{k.Report, k.WriterRun, k.WriterManual, k.Collect, k.WriterResume, k.WriterRetry, k.Anonymize, k.Filter}
}

// rowHelp is the workshop commands the selected writer's status leaves open, as the workshop
// would decide them (refuseStart): a prepared writer is started, a stopped one resumed.
func (p *writersPane) rowHelp() []key.Binding {
	k := p.env.keys
	w, ok := p.rows[p.t.selected()]
	if !ok {
		return []key.Binding{k.Filter}
	}
	out := []key.Binding{k.Report}
	switch w.status {
	case "prepared":
		out = append(out, k.WriterRun, k.WriterManual)
	case "quota wall", "login expired":
		out = append(out, k.WriterResume, k.Collect, k.WriterRetry)
	case "running", "by hand":
		out = append(out, k.Collect)
	default:
		out = append(out, k.Collect, k.WriterRetry)
	}
	return append(out, k.Anonymize, k.Filter)
}

// writerGoMsg is a confirmed workshop action (a form's script when it asked for one).
type writerGoMsg struct {
	writerMsg
	script string
}

// writerDoneMsg is a workshop action's answer on writer id (a retry's also names the writer
// it staged); note is what the footer says when it worked.
type writerDoneMsg struct {
	act       writerAct
	id, newID string
	note      string
	err       error
}

// what is the action as the footer and a refusal's page name it.
func (d writerDoneMsg) what() string { return d.act.String() + " " + d.id }

// writerAction asks before an action that archives, seals or starts an agent; a report is
// opened at once. The seed's refusals are the workshop's own, shown whole when they come.
func (m *model) writerAction(w writerMsg) tea.Cmd {
	if m.eng == nil {
		m.fail(errReadOnly)
		return nil
	}
	name := filepath.Base(w.exp)
	switch w.act {
	case actReport:
		return writerReport(m.ctx, m.eng, w.exp)
	case actRun, actManual, actResume:
		if err := refuseStart(w); err != nil {
			return emit(writerDoneMsg{act: w.act, id: w.id, err: err})
		}
		title := map[writerAct]string{actRun: "Run writer ", actManual: "Write by hand: ", actResume: "Resume (" + w.status + ") "}[w.act] + w.id
		m.form = writerForm(m.env, title, w)
		return nil
	case actCollect:
		m.confirm = &confirm{
			question: fmt.Sprintf("Collect %s of %s?\nIts drafts are archived and checked; missing or short outputs fail it with the reason.", w.id, name),
			yes:      emit(writerGoMsg{writerMsg: w}),
			no:       "nothing collected",
		}
	case actRetry:
		if w.newID == "" {
			// The new id depends on the writers on disk: the engine names it, off this goroutine,
			// and the answer comes back here with it.
			ctx, eng := m.ctx, m.eng
			return func() tea.Msg {
				id, err := eng.WorkshopRetryID(ctx, w.exp, w.id)
				if err != nil {
					return writerDoneMsg{act: actRetry, id: w.id, err: err}
				}
				w.newID = id
				return w
			}
		}
		m.confirm = &confirm{
			question: fmt.Sprintf("Retry %s of %s as a new writer %s?\nThe same seat starts over with fresh inputs; %s stays on record.\nA quota wall is resumed (u), not retried.", w.id, name, w.newID, w.id),
			yes:      emit(writerGoMsg{writerMsg: w}),
			no:       "nothing retried",
		}
	case actAnonymize:
		q := fmt.Sprintf("Anonymize %s?\nThe completed drafts are shuffled under letters and the key sealed (never shown here);\n"+
			"sizes, time, tokens and cost stay out of the report until the reading is recorded (tare workshop reveal).", name)
		if w.sealed {
			q = fmt.Sprintf("Reseal %s? It is sealed already.\nThe drafts are shuffled again under new letters; the old key is kept as evaluation/identity-key.N.json.\n"+
				"Drafts already read under the old letters are not blind any more.", name)
		}
		m.confirm = &confirm{question: q, yes: emit(writerGoMsg{writerMsg: w}), no: "nothing sealed"}
	}
	return nil
}

// refuseStart refuses at once, before the form, what the workshop would refuse: only a
// prepared writer is launched, only one a quota wall stopped is resumed. The workshop checks
// again when it acts (the state may have moved since the pane drew it).
func refuseStart(w writerMsg) error {
	switch {
	case w.act == actResume && w.status != "quota wall" && w.status != "login expired":
		return fmt.Errorf("writer %s is %s; only a writer its own event stream shows stopped by a provider quota wall or an expired login is resumed. "+
			"Read its record (tare workshop inspect), and retry it as a new writer (R) if the work has to start over", w.id, w.status)
	case w.act != actResume && w.status != "prepared":
		return fmt.Errorf("writer %s is %s; only a prepared writer is launched: collect its evidence (c), "+
			"resume it after a quota wall or an expired login (u), or retry it as a new writer (R)", w.id, w.status)
	}
	return nil
}

// writerForm asks for the model script of an action that starts an agent; sending it is
// the confirmation.
func writerForm(e *env, title string, w writerMsg) *form {
	k := runKind{
		name: w.act.String(),
		fields: []fieldSpec{
			{key: "script", label: "script", placeholder: "model script (TOML): tare's own model server; empty: the agent's provider and login"},
		},
		intent: func(v map[string]string) tea.Msg {
			return writerGoMsg{writerMsg: w, script: strings.TrimSpace(v["script"])}
		},
	}
	f := &form{env: e, title: title, kinds: []runKind{k}, errField: -1}
	f.setKind(0)
	return f
}

// writerGo carries out a confirmed action off the UI goroutine.
func (m *model) writerGo(g writerGoMsg) tea.Cmd {
	ctx, eng, exp, id, script := m.ctx, m.eng, g.exp, g.id, g.script
	if eng == nil {
		m.fail(errReadOnly)
		return nil
	}
	if g.act == actManual {
		if m.term != nil && !m.term.Done() {
			m.fail(fmt.Errorf("%s is still running in the terminal; t returns to it", m.term.Name()))
			return nil
		}
		m.closeTerminal()
		w, h := max(m.scr.body.W-2, 2), max(m.scr.body.H-2, 1)
		m.note("starting %s by hand…", id)
		return func() tea.Msg {
			cmd, err := eng.WorkshopManual(exp, id, script)
			if err != nil {
				return termStartedMsg{err: fmt.Errorf("manual %s: %v", id, err)}
			}
			t, err := StartTerminal("writer "+id, cmd, w, h)
			return termStartedMsg{t: t, err: err}
		}
	}
	if g.act != actRetry {
		m.note("%s %s…", g.act, id)
	}
	return func() tea.Msg {
		d := writerDoneMsg{act: g.act, id: id, newID: g.newID}
		switch g.act {
		case actRun:
			d.note, d.err = id+" is running", eng.WorkshopRun(ctx, exp, id, script)
		case actResume:
			d.note, d.err = id+" is running again in its own session", eng.WorkshopResume(ctx, exp, id, script)
		case actRetry:
			d.note, d.err = fmt.Sprintf("%s staged in place of %s; r runs it", g.newID, id), eng.WorkshopRetry(ctx, exp, id, g.newID)
		case actCollect:
			s, err := eng.WorkshopCollect(ctx, exp, id)
			switch {
			case err != nil:
				d.err = err
			case s.Status != workshop.StatusCompleted:
				d.err = fmt.Errorf("%s is %s: %s", id, s.Status, s.Error)
			default:
				d.note = id + " collected: completed"
			}
		case actAnonymize:
			s, err := eng.WorkshopAnonymize(ctx, exp, g.sealed)
			if err != nil {
				d.err = err
				break
			}
			// The letters say nothing of who wrote what; the key stays in its file.
			d.note = fmt.Sprintf("%d drafts sealed as %s; read evaluation/anon/ blind", s.Drafts, strings.Join(s.Letters, ", "))
			if s.OldKey != "" {
				d.note += "; the old key is kept as " + filepath.Base(s.OldKey)
			}
		}
		return d
	}
}

// writerReport opens the experiment's report, as the CLI's: while the drafts are sealed and
// their reading not recorded, no size, time, token or cost pairs a letter with a writer.
func writerReport(ctx context.Context, eng Engine, exp string) tea.Cmd {
	return func() tea.Msg {
		text, err := eng.WorkshopReport(ctx, exp)
		if err != nil {
			return readerMsg{err: err}
		}
		return readerMsg{title: "Report · " + filepath.Base(exp), text: text}
	}
}

// writerDone shows an answer: a refusal whole, on a page of its own (the footer would cut
// the reason and the advice that follows it).
func (m *model) writerDone(d writerDoneMsg) tea.Cmd {
	if d.err == nil {
		m.note("%s", d.note)
		return m.wf.now()
	}
	m.fail(fmt.Errorf("%s: %v", d.what(), d.err))
	// Wrapped to the page: the reader cuts long lines, and the advice comes last.
	// The reason can carry the writer's own text (draft names, its stream's errors).
	text := ansi.Wordwrap(journal.Printable(d.err.Error()), max(m.scr.body.W-2, 20), " ")
	return tea.Batch(emit(readerMsg{title: "Refused · " + d.what(), text: text}), m.wf.now())
}

// writersUpdate routes the Writers pane's messages; ok is false for any other message.
func (m *model) writersUpdate(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case writersMsg:
		if m.home.writers != nil {
			m.home.writers.set(msg)
		}
		return m.wf.wait(), true
	case writerMsg:
		return m.writerAction(msg), true
	case writerGoMsg:
		m.form = nil
		return m.writerGo(msg), true
	case writerDoneMsg:
		return m.writerDone(msg), true
	}
	return nil, false
}
