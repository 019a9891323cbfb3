package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// tailView is one tail: its tool calls as they happen, its check result at the end, and the
// capsule diff of a step on d.
type tailView struct {
	env     *env
	dir, id string
	calls   *table
	// list is the tail's calls, decoded as they are drawn (tailcalls.go).
	list callList
	// read is how far into the journal the tool list was read (loadHistory); a scan is
	// under way while scanning, and again asks for another once it is done (the journal
	// grew meanwhile).
	read            int64
	loaded          bool
	scanning, again bool
	diff            *viewport.Model
	diffStep        int
	diffErr         string
	onDiff          bool // focus is on the diff
	// following is set while the diff is fetched for a selection moved in the list: the
	// list keeps the focus.
	following bool
	// detail is what the agent's stream says of the selected call, and the tail's end; it
	// fills the lower pane while no diff is open.
	detail   *journal.TailDetail
	detailVP *viewport.Model
	// loading is set while the detail is being read.
	loading bool
	// stream is the agent's stream as the detail was last read from it.
	stream streamMark
	// detailStep is the step the detail pane shows.
	detailStep int
	head       rect
	callsR     rect
	diffR      rect
}

func newTailView(e *env, dir, id string) *tailView {
	t := newTable([]column{
		{title: "step", width: 4, right: true},
		{title: "tool", width: 10},
		{title: "summary", flex: 1},
		{title: "took", width: 6, right: true},
	}, "no tool calls yet")
	t.setStyles(e.st)
	v := &tailView{env: e, dir: dir, id: id, calls: t, detailVP: newDetailPane()}
	v.list.path = filepath.Join(dir, journal.JournalFile)
	if ts := v.state(); ts != nil {
		v.list.pre = append(v.list.pre, ts.Tools...)
	}
	t.fill = v.list.cells
	v.refresh()
	return v
}

func (v *tailView) state() *journal.TailState { return v.env.store.run(v.dir).state.Tails[v.id] }

// tailHistoryMsg is a tail's tool calls as the journal holds them from byte from to byte
// to, read off the UI goroutine; restart says the tail started over in them.
type tailHistoryMsg struct {
	dir, tail string
	from, to  int64
	restart   bool
	refs      []callRef
	err       error
}

// scan reads the journal on from where the last scan ended, unless one is under way.
func (v *tailView) scan() tea.Cmd {
	if v.scanning {
		v.again = true
		return nil
	}
	v.scanning = true
	return loadHistory(v.dir, v.id, v.read)
}

// history takes a scan's tool calls; it reads on when the journal grew while it ran.
func (v *tailView) history(m tailHistoryMsg) tea.Cmd {
	v.scanning = false
	if m.err != nil {
		v.diffErr = fmt.Sprintf("reading the journal: %v", m.err)
		return nil
	}
	v.list.take(m)
	v.read, v.loaded = m.to, true
	v.refresh()
	if v.again {
		v.again = false
		return v.scan()
	}
	return nil
}

// apply takes the tail's run's new events from a feed: the list is read again from the
// journal (a feed leaves out tool calls, see skimLines). It reports whether the tail moved
// (its detail is then read again).
func (v *tailView) apply(events []journal.Event) (moved bool, scan tea.Cmd) {
	for _, e := range events {
		switch {
		case e.TailStarted != nil && e.TailStarted.ID == v.id,
			e.ToolCall != nil && e.ToolCall.Tail == v.id,
			e.TailFinished != nil && e.TailFinished.ID == v.id:
			moved = true
		}
	}
	if len(events) > 0 {
		scan = v.scan()
	}
	return moved, scan
}

// reload asks for the detail again, unless a read is under way.
func (v *tailView) reload() tea.Cmd {
	if v.loading {
		return nil
	}
	v.loading = true
	return loadDetail(v.dir, v.id)
}

// poll reads the detail again if the agent's stream moved, while the tail runs: a call in
// flight is in the stream before any journal event says so.
func (v *tailView) poll() tea.Cmd {
	if t := v.state(); v.loading || t == nil || t.Status != journal.StatusRunning {
		return nil
	}
	v.loading = true
	return loadDetailSince(v.dir, v.id, v.stream)
}

// inFlight is the tool call the agent's stream shows started and not ended, while the tail
// runs, and when it began; ok is false when none is.
func (v *tailView) inFlight() (c journal.CallDetail, began time.Time, ok bool) {
	t, d := v.state(), v.detail
	if t == nil || d == nil || t.Status != journal.StatusRunning || len(d.Calls) <= t.Calls {
		return c, began, false
	}
	if c = d.Calls[len(d.Calls)-1]; c.Output != "" || d.After != "" {
		return c, began, false
	}
	return c, v.stream.at, true
}

// setDetail takes a read detail and shows the selected call's part of it.
func (v *tailView) setDetail(m tailDetailMsg) {
	v.loading = false
	if m.same {
		return
	}
	v.stream = m.stream
	if m.err != nil {
		v.detail = &journal.TailDetail{Stderr: "reading the tail: " + m.err.Error()}
	} else {
		v.detail = m.detail
	}
	v.showDetail()
}

// showDetail fills the detail pane for the selected step, keeping its scroll when the step
// is the same.
func (v *tailView) showDetail() {
	y := v.detailVP.YOffset
	v.detailStep = v.selectedStep()
	v.detailVP.SetContent(detailText(v.env.st, v.detail, v.detailStep, v.detailVP.Width))
	v.detailVP.SetYOffset(y)
}

func (v *tailView) refresh() {
	rows := v.list.rowsNow()
	follow := v.calls.cursor >= len(v.calls.rows)-1
	v.calls.setRows(rows)
	if follow { // at the bottom, the list follows new calls as they come
		v.calls.cursor = len(v.calls.rows) - 1
		v.calls.clamp()
	}
	if v.selectedStep() != v.detailStep {
		v.detailVP.SetYOffset(0)
		v.showDetail()
	}
}

// clockSpan is a wait as a clock shows it: 0:42, 12:05, 1:02:03.
func clockSpan(d time.Duration) string {
	s := int(max(d, 0).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// lastLine is text's last non-empty line.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func (v *tailView) setSize(body rect) {
	v.head, v.callsR, v.diffR = tailLayout(body, true)
	v.calls.setSize(max(v.callsR.W-2, 0), max(v.callsR.H-2, 0))
	if v.diff != nil {
		v.diff.Width, v.diff.Height = max(v.diffR.W-2, 0), max(v.diffR.H-2, 0)
	}
	w := max(v.diffR.W-2, 0)
	resized := w != v.detailVP.Width
	v.detailVP.Width, v.detailVP.Height = w, max(v.diffR.H-2, 0)
	if resized {
		v.showDetail()
	}
}

// header is the tail in three lines: what it is, how it is doing, and its verdict.
func (v *tailView) header() string {
	s := v.env.st
	st := v.env.store.run(v.dir).state
	t := v.state()
	if t == nil {
		return fmt.Sprintf("tail %s · not in the journal yet", v.id)
	}
	agent := t.Side
	for _, side := range st.Sides {
		if side.Key == t.Side {
			agent = side.Key + " (" + strings.Join(append([]string{side.Agent}, side.Args...), " ") + ")"
		}
	}
	from := "a fresh start"
	if t.How != "fresh" && t.How != "" {
		from = fmt.Sprintf("step %d (%s)", t.Step, t.How)
		if t.CapsuleFrom != nil {
			from += s.tone(warn, fmt.Sprintf(", no capsule of its own: starts from step %d's", *t.CapsuleFrom))
		}
	}
	first := fmt.Sprintf("tail %s · side %s · from %s", s.tone(accent, t.ID), agent, from)
	if len(t.Earlier) > 0 {
		first += " · " + attemptNote(t)
	}
	status, tone, now := tailStatus(t), statusTone(tailStatus(t)), v.env.now()
	if t.Status == journal.StatusNoVerdict {
		status += " (" + t.Reason.Label() + ")"
	}
	at, stopped := v.env.store.run(v.dir).stoppedAt()
	stopped = stopped && t.Status == journal.StatusRunning
	if stopped {
		// Nothing runs it now: its time stopped with the run.
		status, tone, now = interrupted.text, interrupted.tone, at
	}
	elapsed := span(t.Elapsed(now))
	if t.Place != nil {
		status, elapsed = placeStatus(t, status), placeNote(t, v.env.now())
	}
	second := strings.Join([]string{
		s.tone(tone, status), elapsed,
		fmt.Sprintf("%d calls", t.Calls), tokens(t.Usage) + " tokens", cost(t.Usage),
	}, " · ")
	if len(t.Earlier) > 0 {
		second += s.tone(dim, fmt.Sprintf(" · all %d attempts: %s", len(t.Earlier)+1, cost(t.TotalUsage())))
	}
	third := s.tone(dim, "check: once the agent ends")
	if !t.Checking.IsZero() {
		third = s.tone(warn, "checking: "+checkingNote(t, v.env.now()))
	}
	if c, began, ok := v.inFlight(); ok && !stopped {
		// What the agent waits on now, and what it said before it.
		third = s.tone(warn, fmt.Sprintf("now: %s `%s` · %s", c.Tool, c.Input, clockSpan(now.Sub(began))))
		if said := lastLine(c.Before); said != "" {
			third = s.tone(dim, fmt.Sprintf("%q", said)) + " → " + third
		}
	}
	if stopped {
		third = s.tone(bad, "interrupted: tare stopped during this tail; r on the run resumes it")
	}
	switch t.Status {
	case journal.StatusPassed, journal.StatusFailed:
		third = "check: " + s.tone(statusTone(string(t.Status)), string(t.Status))
		if t.Score != nil {
			third += fmt.Sprintf(" · score %d", *t.Score)
		}
		if t.Detail != "" {
			third += " — " + t.Detail
		}
	case journal.StatusNoVerdict:
		third = s.tone(dim, "no verdict: "+t.Reason.Label()+"; left out of the rate") + " — " + t.Detail
	case "rerun":
		third = s.tone(dim, "check: none; the tail is rerun after a crash")
	}
	if t.Judge != nil && t.Status != journal.StatusRunning {
		third = judgeLine(s, t)
	}
	return first + "\n" + second + "\n" + third
}

func (v *tailView) draw(c *canvas) {
	s := v.env.st
	c.put(v.head, block(v.header(), v.head.W, v.head.H))
	c.put(v.callsR, s.box("Tool calls", v.calls.view(s, !v.onDiff), v.callsR.W, v.callsR.H, !v.onDiff))
	if v.diff != nil {
		title := "Changes of tail " + v.id
		if v.id == "original" {
			title = fmt.Sprintf("Changes · step %d", v.diffStep)
		}
		if !v.diff.AtTop() || !v.diff.AtBottom() {
			title += fmt.Sprintf(" · %d%%", int(v.diff.ScrollPercent()*100))
		}
		c.put(v.diffR, s.box(title, v.diff.View(), v.diffR.W, v.diffR.H, v.onDiff))
	} else if v.diffR.H > 0 {
		title := "Detail"
		if step := v.selectedStep(); step > 0 {
			title = fmt.Sprintf("Detail · step %d", step)
		}
		c.put(v.diffR, s.box(title, v.detailVP.View(), v.diffR.W, v.diffR.H, v.onDiff))
	}
}

// diffTextMsg is the answer to a diffMsg.
type diffTextMsg struct {
	dir, tail string
	step      int
	text      string
	err       error
}

// fetchDiff asks the engine for a step's capsule diff.
func fetchDiff(ctx context.Context, e Engine, m diffMsg) tea.Cmd {
	return func() tea.Msg {
		if e == nil {
			return diffTextMsg{dir: m.dir, tail: m.tail, step: m.step, err: errReadOnly}
		}
		text, err := e.CapsuleDiff(ctx, m.dir, m.tail, m.step)
		return diffTextMsg{dir: m.dir, tail: m.tail, step: m.step, text: text, err: err}
	}
}

func (v *tailView) showDiff(m diffTextMsg, body rect) {
	vp := viewport.New(0, 0)
	text := m.text
	if m.err != nil {
		text = v.env.st.tone(bad, fmt.Sprintf("no diff for step %d: %v", m.step, m.err))
	} else if strings.TrimSpace(text) == "" {
		text = v.env.st.tone(dim, "the workspace did not change at this step")
	} else if head, rest, ok := strings.Cut(text, "\n"); ok {
		text = v.env.st.tone(dim, head) + "\n" + rest // what is compared, then the diff
	}
	vp.SetContent(colourDiff(v.env.st, text))
	if v.diff != nil && v.diffStep == m.step {
		vp.SetYOffset(v.diff.YOffset) // the same step again (a refresh): keep the place
	}
	v.diff, v.diffStep = &vp, m.step
	if !v.following {
		v.onDiff = true
	}
	v.following = false
	v.setSize(body)
}

// colourDiff colours a unified diff's added, removed and hunk lines.
func colourDiff(s styles, text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			lines[i] = s.header.Render(l)
		case strings.HasPrefix(l, "+"):
			lines[i] = s.tone(good, l)
		case strings.HasPrefix(l, "-"):
			lines[i] = s.tone(bad, l)
		case strings.HasPrefix(l, "@@"):
			lines[i] = s.tone(accent, l)
		}
	}
	return strings.Join(lines, "\n")
}

// update handles a key; esc with a diff open closes the diff (and is used).
func (v *tailView) update(msg tea.KeyMsg, body rect) (bool, tea.Cmd) {
	k := v.env.keys
	if v.calls.filtering {
		return v.calls.update(k, msg)
	}
	switch {
	case key.Matches(msg, k.Back) && v.diff != nil:
		v.diff, v.onDiff = nil, false
		v.setSize(body)
		return true, nil
	case key.Matches(msg, k.Back) && v.onDiff:
		// esc goes back from the lower pane too (the root pops the view): only a filter on the
		// calls, cleared from the upper pane, keeps it.
		return false, nil
	case key.Matches(msg, k.Next, k.Prev):
		v.onDiff = !v.onDiff // the lower pane: the diff, or the detail
		return true, nil
	case key.Matches(msg, k.Pager):
		return true, emit(pagerMsg{journal.TailFiles(v.dir, v.id)})
	case key.Matches(msg, k.Diff):
		if step := v.selectedStep(); step > 0 {
			return true, emit(diffMsg{v.dir, v.id, step})
		}
		return true, nil
	case key.Matches(msg, k.Retry):
		return true, emit(retryMsg{v.dir, v.id})
	case key.Matches(msg, k.Kill):
		return true, emit(killMsg{v.dir, v.id})
	case key.Matches(msg, k.Shot):
		return true, showShot(v.state())
	}
	if v.onDiff {
		vp := v.detailVP
		if v.diff != nil {
			vp = v.diff
		}
		var cmd tea.Cmd
		*vp, cmd = vp.Update(msg)
		return true, cmd
	}
	before := v.selectedStep()
	used, cmd := v.calls.update(k, msg)
	if step := v.selectedStep(); step != before {
		v.detailVP.SetYOffset(0)
		v.showDetail()
	}
	if step := v.selectedStep(); v.diff != nil && step > 0 && step != before {
		// The open diff follows the selection.
		v.following = true
		return used, tea.Batch(cmd, emit(diffMsg{v.dir, v.id, step}))
	}
	return used, cmd
}

// selectedStep is the step of the selected tool call, 0 with none.
func (v *tailView) selectedStep() int {
	if i := v.calls.cursor; i >= 0 && i < len(v.calls.rows) {
		return v.list.step(v.calls.rows[i].key)
	}
	return 0
}

func (v *tailView) help() []key.Binding {
	k := v.env.keys
	return append([]key.Binding{k.Diff, k.Pager, k.Kill, k.Retry, k.Filter}, judgeKeys(k, v.env.store.run(v.dir).state)...)
}

// rowHelp is the keys that act now: d on a tool call, kill or retry as the tail's status allows.
func (v *tailView) rowHelp() []key.Binding {
	k := v.env.keys
	var out []key.Binding
	if v.selectedStep() > 0 {
		out = append(out, k.Diff)
	}
	out = append(out, k.Pager)
	if _, stopped := v.env.store.run(v.dir).stoppedAt(); !stopped {
		if t := v.state(); t != nil {
			out = append(out, tailKeys(k, t)...)
		}
	}
	return append(append(out, k.Filter), judgeKeys(k, v.env.store.run(v.dir).state)...)
}
