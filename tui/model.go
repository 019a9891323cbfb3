package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// page is one screen of the app; the root keeps a stack of them and esc pops it.
type page int

const (
	homePage page = iota
	runPage
	tailPage
	termPage
	readerPage
)

// ErrInterrupted is what LiveRun returns when the operator pressed ctrl+c in the live view:
// the caller decides whether that stops its run.
var ErrInterrupted = errors.New("interrupted from the live view")

// modelConfig is what a program's root model is made from.
type modelConfig struct {
	ctx    context.Context
	engine Engine
	styles styles
	now    func() time.Time
	log    *log.Logger
	agents []string
	// probes shows the probes pane (a state directory is followed, not only run dirs).
	probes bool
	// project is the folder whose readings the probes pane shows.
	project string
	// live opens the app on this run, without a home, and ends it when the run finishes.
	live string
	// liveDone, when set, is closed when the command writing the live run has returned; the
	// view ends only after it (LiveOptions.Done).
	liveDone <-chan struct{}
	// stay keeps the live view on its finished run until q (LiveOptions.Stay).
	stay bool
	// remote is an ssh session's app: programs it would start (a pager) would run on the
	// server's side, not on the operator's terminal.
	remote bool
	// workshop shows the Writers pane: the experiments below stateDir's workshop folder and
	// exps (see writers.go).
	workshop bool
	stateDir string
	exps     []string
}

// model is the root model: it owns focus, layout and routing. Keys go to the focused pane
// only (or to the terminal, or to an open dialog); feeds go to the store and then to the
// views that show the runs they touch; engine answers come back as messages addressed to
// their owner.
type model struct {
	ctx  context.Context
	eng  Engine
	log  *log.Logger
	env  *env
	help help.Model

	w, h  int
	scr   screen
	pages []page
	home  *homeView
	run   *runView
	tail  *tailView
	term  *Terminal
	// reader is the text page on top (a probe reading), when one is open.
	reader *reader

	form     *form
	confirm  *confirm
	showHelp bool

	status    string
	statusErr bool
	// statusAt is when the status was set: it clears itself (see statusLife).
	statusAt time.Time

	live        string
	liveDone    <-chan struct{}
	commandDone bool // liveDone was closed: the command that writes the live run returned
	stay        bool // the live view stays on the finished run until q
	stayNoted   bool // the view said the run is over
	interrupted bool
	remote      bool
	clock       clock
	// wf follows the workshop's experiments for the Writers pane (nil without one).
	wf *writersFollower
}

func newModel(c modelConfig) *model {
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = log.New(io.Discard, "", 0)
	}
	e := &env{st: c.styles, keys: DefaultKeyMap(), store: newStore(c.agents, c.project), now: c.now}
	h := help.New()
	h.Styles = c.styles.help
	m := &model{ctx: c.ctx, eng: c.engine, log: c.log, env: e, help: h, live: c.live, liveDone: c.liveDone, commandDone: c.liveDone == nil, stay: c.stay, remote: c.remote}
	m.home = newHomeView(e, c.probes, c.workshop)
	if c.workshop {
		m.wf = newWritersFollower(c.stateDir, c.exps)
	}
	m.pages = []page{homePage}
	if c.live != "" {
		m.run = newRunView(e, c.live)
		m.pages = []page{runPage}
	}
	m.home.ring.refresh()
	return m
}

func (m *model) Init() tea.Cmd { return tea.Batch(m.nextTick(), m.wf.first(), m.waitCommand()) }

// commandDoneMsg says the command writing the live run has returned.
type commandDoneMsg struct{}

// waitCommand waits for the live run's command to return, when the view was told of it.
func (m *model) waitCommand() tea.Cmd {
	if m.liveDone == nil {
		return nil
	}
	done, ctx := m.liveDone, m.ctx
	return func() tea.Msg {
		select {
		case <-done:
			return commandDoneMsg{}
		case <-ctx.Done():
			return nil
		}
	}
}

func (m *model) page() page { return m.pages[len(m.pages)-1] }

func (m *model) push(p page) {
	m.pages = append(m.pages, p)
	m.layout()
}

// pop goes back a screen, dropping the views left behind.
func (m *model) pop() {
	if len(m.pages) == 1 {
		return
	}
	switch m.page() {
	case runPage:
		m.run = nil
	case tailPage:
		m.tail = nil
	case termPage:
		if m.term != nil && m.term.Done() {
			m.closeTerminal()
		}
	case readerPage:
		m.reader = nil
	}
	m.pages = m.pages[:len(m.pages)-1]
	m.layout()
	m.refresh()
}

// layout gives every view its rectangles for the current size.
func (m *model) layout() {
	m.scr = frame(m.w, m.h)
	m.home.setSize(m.scr.body)
	if m.run != nil {
		m.run.setSize(m.scr.body)
	}
	if m.tail != nil {
		m.tail.setSize(m.scr.body)
	}
	if m.reader != nil {
		m.reader.setSize(m.scr.body)
	}
	if m.term != nil {
		if err := m.term.Resize(max(m.scr.body.W-2, 2), max(m.scr.body.H-2, 1)); err != nil {
			m.fail(err)
		}
	}
	m.help.Width = m.w
}

// refresh rebuilds the rows of the screen on top; the others are rebuilt when shown.
func (m *model) refresh() {
	switch m.page() {
	case homePage:
		m.home.ring.refresh()
	case runPage:
		m.run.refresh(m.scr.body)
	case tailPage:
		m.tail.refresh()
	}
}

// note and fail set the footer's status; what an engine error carries may be an agent's
// output, so it is made Printable too.
func (m *model) note(format string, args ...any) {
	m.status, m.statusErr, m.statusAt = journal.Printable(fmt.Sprintf(format, args...)), false, m.env.now()
}

func (m *model) fail(err error) {
	m.status, m.statusErr, m.statusAt = journal.Printable(err.Error()), true, m.env.now()
	m.log.Print(err)
}

// statusLife is how long a status stays in the footer: a note a few seconds, an error long
// enough to read (the whole text stays in tui.log).
func statusLife(isErr bool) time.Duration {
	if isErr {
		return 20 * time.Second
	}
	return 6 * time.Second
}

// expire clears a status older than its life; a probe under way keeps its row's mark.
func (m *model) expire(now time.Time) {
	if m.status != "" && now.Sub(m.statusAt) >= statusLife(m.statusErr) {
		m.status = ""
	}
}

// update routes one message: sizes to every view, feeds to the store and the views of their
// runs, keys to whoever has them, intents to the engine (as commands), answers to their owner.
// (Update, in clock.go, runs it and keeps the clock's pace.)
func (m *model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if cmd, ok := m.writersUpdate(msg); ok {
		return m, cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.layout()
	case feedMsg:
		return m, m.feed(msg)
	case commandDoneMsg:
		m.commandDone = true
		return m, m.liveEnded()
	case tickMsg:
		m.expire(time.Time(msg))
		m.refresh()
		if m.page() == tailPage {
			return m, m.tail.poll()
		}
		return m, nil // the clock (see clock.go) schedules the next
	case tea.KeyMsg:
		if keys := splitRunes(msg); len(keys) > 1 && !m.typing() {
			// Keys that came in one read (jjj typed fast, a held key, keys pasted over ssh)
			// arrive as one message of several runes: each is a key of its own.
			var cmds []tea.Cmd
			for _, k := range keys {
				cmds = append(cmds, m.key(k))
			}
			return m, tea.Sequence(cmds...)
		}
		return m, m.key(msg)
	case tea.MouseMsg:
		return m, m.mouse(msg)

	case openRunMsg:
		m.openRun(msg.dir)
	case openTailMsg:
		m.tail = newTailView(m.env, msg.dir, msg.tail)
		m.push(tailPage)
		return m, tea.Batch(m.tail.scan(), m.tail.reload())
	case tailDetailMsg:
		if m.tail != nil && m.tail.dir == msg.dir && m.tail.id == msg.tail {
			m.tail.setDetail(msg)
		}
	case pagerMsg:
		return m, m.openPager(msg.files)
	case pagerDoneMsg:
		if msg.err != nil {
			m.fail(fmt.Errorf("pager: %v; fix: set PAGER to a pager you have", msg.err))
		}
	case tailHistoryMsg:
		if m.tail != nil && m.tail.dir == msg.dir && m.tail.id == msg.tail {
			return m, m.tail.history(msg)
		}
	case probeMsg:
		if m.env.store.probing[msg.agent] {
			// One room per agent at a time: they would all write the same reading.
			m.note("%s is being probed already; its reading shows when it is done", msg.agent)
			break
		}
		m.env.store.probing[msg.agent] = true
		m.refresh()
		m.note("probing %s…", msg.agent)
		return m, probeAction(m.ctx, m.eng, msg.agent)
	case openReadingMsg:
		r, ok := m.env.store.probes[msg.agent]
		if !ok {
			m.note("no reading of %s for this project yet; p takes one", msg.agent)
			break
		}
		return m, loadReading(r)
	case searchMsg:
		return m, m.searched(msg)
	case readerMsg:
		if msg.err != nil {
			m.fail(msg.err)
			break
		}
		for m.page() == readerPage {
			m.pop()
		}
		m.reader = newReader(msg.title, msg.text)
		m.push(readerPage)
	case attachFormMsg:
		m.form = attachForm(m.env, msg.agent)
	case attachMsg:
		return m, m.attach(AttachRequest{Agent: msg.agent, Offline: msg.offline, Script: msg.script})
	case resumeMsg:
		return m, m.resume(msg.dir)
	case retryMsg:
		return m, m.retry(msg.dir, msg.tail)
	case killMsg:
		m.askKill(msg.dir, msg.tail)
	case deleteMsg:
		m.askDelete(msg.dir)
	case diffMsg:
		m.note("diff of step %d…", msg.step)
		return m, fetchDiff(m.ctx, m.eng, msg)
	case diffTextMsg:
		if m.tail != nil && m.tail.dir == msg.dir && m.tail.id == msg.tail {
			m.tail.showDiff(msg, m.scr.body)
			m.status = ""
		}
	case startMsg:
		m.note("starting %s…", msg.kind)
		return m, startRun(m.ctx, m.eng, msg)
	case startedMsg:
		if msg.err != nil {
			if m.form != nil && m.form.sent {
				m.form.refused(msg.err)
				m.log.Print(msg.err)
				m.status = ""
				break
			}
			m.fail(msg.err)
			break
		}
		m.form = nil
		m.note("started %s", filepath.Base(msg.dir))
		m.openRun(msg.dir)
	case actionMsg:
		m.done(msg)
	case noteMsg:
		m.note("%s", string(msg))
	case termStartedMsg:
		if msg.err != nil {
			m.fail(msg.err)
			break
		}
		m.term = msg.t
		m.push(termPage)
		return m, waitTerminal(msg.t, time.Time{})
	case termMsg:
		if msg.t != m.term {
			break
		}
		if msg.exited {
			if err := msg.t.Err(); err != nil {
				m.note("%s exited: %v", msg.t.Name(), err)
			} else {
				m.note("%s exited", msg.t.Name())
			}
			return m, nil
		}
		return m, waitTerminal(msg.t, time.Now())
	}
	return m, nil
}

// feed applies what the bridge read to the store and to the views that show it.
func (m *model) feed(f feedMsg) tea.Cmd {
	m.env.store.apply(f)
	var cmd tea.Cmd
	if m.tail != nil {
		for _, rf := range f.runs {
			if rf.dir != m.tail.dir {
				continue
			}
			moved, scan := m.tail.apply(rf.events)
			cmd = scan
			if moved {
				cmd = tea.Batch(scan, m.tail.reload())
			}
		}
	}
	if f.probes != nil {
		m.layout() // the probes pane is sized to its rows
	}
	m.refresh()
	if end := m.liveEnded(); end != nil {
		return end
	}
	return cmd
}

// liveEnded ends the live view once its run is over (the command returned and the journal
// says finished), or, with --stay, says the run is over and leaves the view to the operator.
func (m *model) liveEnded() tea.Cmd {
	if m.live == "" || !m.commandDone || !m.env.store.run(m.live).state.Finished {
		return nil
	}
	if !m.stay {
		return tea.Quit
	}
	if !m.stayNoted {
		m.stayNoted = true
		m.note("the run is over; browse it, q leaves")
	}
	return nil
}

func (m *model) openRun(dir string) {
	if m.run != nil && m.run.dir == dir && m.page() == runPage {
		return
	}
	for m.page() != homePage && len(m.pages) > 1 {
		m.pop()
	}
	m.run = newRunView(m.env, dir)
	m.push(runPage)
}

// done shows an engine answer; a failed probe stops showing "probing…".
func (m *model) done(a actionMsg) {
	if a.kind == probeKind {
		delete(m.env.store.probing, a.agent)
		m.refresh()
	}
	if a.kind == deleteKind && a.err == nil {
		m.env.store.remove(a.owner) // D is a key of the home's Runs pane: no view shows the run
		m.refresh()
		m.note("%s: deleted", a.what)
		return
	}
	if a.err != nil {
		m.fail(errors.New(unstack(a.what, a.err.Error())))
		return
	}
	// Resume and retry return once their process runs, a kill once it is asked for: none of
	// them is done yet, and the footer must not say so.
	switch a.kind {
	case probeKind:
		m.note("%s: reading taken", a.what)
	case killKind:
		m.note("%s: asked; the tail ends as the run's process stops it", a.what)
	default:
		m.note("%s: started%s", a.what, a.after)
	}
}

// unstack joins what an action was and why it failed without saying a name twice ("probe
// agy: agy: not found", "tare: ..." from a tare process).
func unstack(what, why string) string {
	why = strings.TrimPrefix(why, "tare: ")
	if i := strings.LastIndexByte(what, ' '); i >= 0 {
		if rest, ok := strings.CutPrefix(why, what[i+1:]+": "); ok {
			why = rest
		}
	}
	return what + ": " + why
}

func (m *model) resume(dir string) tea.Cmd {
	r := m.env.store.run(dir)
	if s := r.status(); s != "crashed" {
		m.fail(fmt.Errorf("%s is %s: only a crashed run (no process owns it, no report) can be resumed", filepath.Base(dir), s))
		return nil
	}
	m.note("resuming %s…", filepath.Base(dir))
	return resumeAction(m.ctx, m.eng, dir)
}

func (m *model) retry(dir, id string) tea.Cmd {
	t := m.env.store.run(dir).state.Tails[id]
	if t == nil || (t.Status != journal.StatusFailed && t.Status != journal.StatusNoVerdict) {
		status := "unknown"
		if t != nil {
			status = statusWord(t.Status)
		}
		m.fail(fmt.Errorf("tail %s is %s: only a failed tail or one with no verdict can be retried", id, status))
		return nil
	}
	keeps := ""
	if a, ok := t.Counted(); ok {
		// The rate keeps the attempt that counts: say so before the retry looks like a fix.
		keeps = fmt.Sprintf("; the rate keeps attempt %d: %s", a.N+1, a.Label())
	}
	m.note("retrying %s…%s", id, keeps)
	return retryAction(m.ctx, m.eng, dir, id, keeps)
}

func (m *model) askKill(dir, id string) {
	t := m.env.store.run(dir).state.Tails[id]
	if t == nil || t.Status != journal.StatusRunning {
		m.fail(fmt.Errorf("tail %s is not running: nothing to kill", id))
		return
	}
	// A kill decided while watching the tail says something about the agent: the operator
	// says how it counts, and the journal keeps the answer (see journal.KillAs).
	kill := func(as journal.KillAs, how string) tea.Cmd {
		return tea.Batch(emit(noteMsg(fmt.Sprintf("killing %s (%s)…", id, how))), killAction(m.ctx, m.eng, dir, id, as))
	}
	m.confirm = &confirm{
		question: fmt.Sprintf("Kill tail %s of %s?\nIts agent is stopped. How does the kill count in the pass rate?", id, filepath.Base(dir)),
		choices: []choice{
			{key: "f", label: "count as failed (you stopped it for what it did)", cmd: kill(journal.KillFailed, "counted as failed")},
			{key: "l", label: "leave out as an infrastructure fault (the rate gives its bounds)", cmd: kill(journal.KillLeftOut, "left out")},
		},
		no: "nothing killed",
	}
}

// askDelete confirms the deletion of a run no process owns.
func (m *model) askDelete(dir string) {
	r := m.env.store.run(dir)
	if s := r.status(); s == "live" {
		m.fail(fmt.Errorf("%s is live: a run is deleted once no process owns it (kill its tails, or let it end)", filepath.Base(dir)))
		return
	}
	m.confirm = &confirm{
		question: fmt.Sprintf("Delete run %s?\nIts folder goes: journal, report, capsules and every tail's files.\n%s", filepath.Base(dir), tildePath(dir)),
		yes:      deleteAction(m.ctx, m.eng, dir),
		no:       "nothing deleted",
	}
}

// noteMsg puts a line in the footer.
type noteMsg string

// close releases what the model holds when its program has ended.
func (m *model) close() {
	m.closeTerminal()
	m.wf.close()
}

// key routes a key: the terminal takes every key but the reserved chord; an open dialog
// takes the rest; then the focused pane, after the keys that mean the same everywhere.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	keys := m.env.keys
	if m.page() == termPage && m.term != nil {
		switch {
		case key.Matches(k, keys.Release):
			m.pop()
		case m.term.Done():
			if k.Type == tea.KeyEsc || k.Type == tea.KeyEnter {
				m.pop()
			}
		default:
			if err := m.term.SendKey(k); err != nil {
				m.fail(err)
			}
		}
		return nil
	}
	if m.confirm != nil {
		if ch, ok := m.confirm.chosen(k); ok {
			m.confirm = nil
			return ch.cmd
		}
		switch {
		case key.Matches(k, keys.Confirm) && len(m.confirm.choices) == 0:
			yes := m.confirm.yes
			m.confirm = nil
			return yes
		case key.Matches(k, keys.Cancel):
			m.note("%s", m.confirm.no)
			m.confirm = nil
		}
		return nil
	}
	if m.form != nil {
		done, cmd := m.form.update(k)
		if done {
			m.form = nil
		}
		return cmd
	}
	if m.showHelp {
		m.showHelp = false
		return nil
	}
	if m.capturing() {
		_, cmd := m.paneKey(k)
		return cmd
	}
	switch {
	case key.Matches(k, keys.Quit):
		if k.Type == tea.KeyCtrlC && m.live != "" {
			m.interrupted = true
		}
		if m.term != nil && !m.term.Done() {
			// The terminal pane's program is the app's child: it dies with the app, and an
			// interactive session is lost with one key. Runs are their own processes; they stay.
			m.confirm = &confirm{
				question: fmt.Sprintf("Quit tare?\n%s is still running in the terminal pane and ends with the app; t returns to it.", m.term.Name()),
				yes:      tea.Quit,
				no:       "not quitting; t returns to " + m.term.Name(),
			}
			return nil
		}
		return tea.Quit
	case key.Matches(k, keys.Help):
		m.showHelp = true
		return nil
	case key.Matches(k, keys.New) && m.live == "":
		m.form = newForm(m.env)
		return nil
	case key.Matches(k, keys.Terminal) && m.term != nil:
		m.push(termPage)
		return nil
	case key.Matches(k, keys.Next, keys.Prev) && (m.page() == homePage || m.page() == runPage):
		step := 1
		if key.Matches(k, keys.Prev) {
			step = -1
		}
		m.ring().next(step)
		return nil
	case key.Matches(k, keys.Resume) && m.page() == runPage:
		return emit(resumeMsg{m.run.dir})
	}
	used, cmd := m.paneKey(k)
	if !used && key.Matches(k, keys.Back) {
		m.pop()
	}
	return cmd
}

// splitRunes is a message of several runes as one key message each: keys typed fast, a held
// key, or pasted (a bracketed paste is one message too). Where keys are text, the caller
// keeps the message whole.
func splitRunes(k tea.KeyMsg) []tea.KeyMsg {
	if k.Type != tea.KeyRunes || len(k.Runes) < 2 {
		return []tea.KeyMsg{k}
	}
	out := make([]tea.KeyMsg, len(k.Runes))
	for i, r := range k.Runes {
		out[i] = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: k.Alt}
	}
	return out
}

// typing reports that the keys are text for what has them: the terminal pane's program, a
// form's fields or a filter line take several runes as they come.
func (m *model) typing() bool {
	return (m.page() == termPage && m.term != nil) || m.form != nil || m.capturing()
}

// ring is the focus ring of the screen on top.
func (m *model) ring() *focusRing {
	switch m.page() {
	case runPage:
		return &m.run.ring
	default:
		return &m.home.ring
	}
}

// capturing reports that the focused pane's filter line has the keys.
func (m *model) capturing() bool {
	switch m.page() {
	case tailPage:
		return m.tail.calls.filtering
	case readerPage:
		return false
	case homePage, runPage:
		if p := m.ring().current(); p != nil {
			return p.capturing()
		}
	}
	return false
}

// paneKey gives a key to the focused pane of the screen on top.
func (m *model) paneKey(k tea.KeyMsg) (bool, tea.Cmd) {
	switch m.page() {
	case tailPage:
		return m.tail.update(k, m.scr.body)
	case readerPage:
		return m.reader.update(m.env.keys, k), nil
	case homePage, runPage:
		if p := m.ring().current(); p != nil {
			return p.update(k)
		}
	}
	return false, nil
}
