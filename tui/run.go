package tui

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"tare/engine"
	"tare/engine/journal"
)

// runView is one run: two lines of summary, the pane of its kind (pass rates for a
// calibrate, the curve of a cliff, the table of a swap) and its tails.
type runView struct {
	env     *env
	dir     string
	summary pane // nil for a kind without one yet
	tails   *tailsPane
	ring    focusRing
	head    rect
	rects   []rect
}

func newRunView(e *env, dir string) *runView {
	v := &runView{env: e, dir: dir, tails: newTailsPane(e, dir)}
	v.summary = summaryPane(e, dir)
	if v.summary != nil {
		v.ring.panes = []pane{v.summary, v.tails}
		v.ring.focus = 1
	} else {
		v.ring.panes = []pane{v.tails}
	}
	v.ring.refresh()
	return v
}

// summaryPane is the pane a run's kind draws above its tails. New kinds add a case.
func summaryPane(e *env, dir string) pane {
	st := e.store.run(dir).state
	switch st.Kind {
	case "calibrate":
		return &tallyPane{env: e, dir: dir}
	case "swap":
		return &swapPane{env: e, dir: dir}
	case "judge-noise":
		return &noisePane{env: e, dir: dir}
	}
	// A cliff, or a recording a later tare cliff --run analyses.
	if _, ok := engine.CliffCurveOf(st); ok {
		return &cliffPane{env: e, dir: dir}
	}
	return nil
}

func (v *runView) entry() *runEntry { return v.env.store.run(v.dir) }

// refresh follows the store; a run whose first event arrived late gets its kind's pane now.
func (v *runView) refresh(body rect) {
	if v.summary == nil {
		if v.summary = summaryPane(v.env, v.dir); v.summary != nil {
			v.ring.panes = []pane{v.summary, v.tails}
			v.ring.focus = 1
			v.setSize(body)
		}
	}
	v.ring.refresh()
}

func (v *runView) setSize(body rect) {
	rows := 0
	if r, ok := v.summary.(interface{ rows() int }); ok {
		rows = r.rows()
	} else if v.summary != nil {
		rows = max(len(v.entry().state.Sides), 1)
	}
	head, summary, tails := runLayout(body, rows)
	v.head = head
	if v.summary != nil {
		v.rects = []rect{summary, tails}
	} else {
		v.rects = []rect{tails}
	}
	for i, p := range v.ring.panes {
		p.setSize(max(v.rects[i].W-2, 0), max(v.rects[i].H-2, 0))
	}
}

func (v *runView) draw(c *canvas) {
	c.put(v.head, block(v.headline(), v.head.W, v.head.H))
	for i, p := range v.ring.panes {
		r := v.rects[i]
		focused := i == v.ring.focus
		c.put(r, v.env.st.box(p.title(), p.view(focused), r.W, r.H, focused))
	}
}

// headline is the run in two lines: what it is, and where it stands.
func (v *runView) headline() string {
	r := v.entry()
	st, s := r.state, v.env.st
	first := []string{s.tone(accent, orDash(st.Kind)), orDash(st.Project)}
	if st.Prompt != "" {
		first = append(first, fmt.Sprintf("%q", st.Prompt))
	}
	done, running, budget := st.Counts()
	status := r.status()
	counts := fmt.Sprintf("%d done · %d running · of %d", done, running, budget)
	if _, stopped := r.stoppedAt(); stopped {
		// Nothing runs them now: the counts say what the tails table says.
		counts = fmt.Sprintf("%d done · %d interrupted · of %d", done, running, budget)
	}
	second := []string{
		s.tone(statusTone(status), status),
		"phase " + orDash(st.Phase),
		counts,
		span(r.elapsed(v.env.now())),
		runCostLabelled(st),
	}
	if st.Check != "" {
		second = append(second, "check: "+st.Check)
	}
	if st.Error != "" {
		second = append(second, s.tone(bad, st.Error))
	}
	return strings.Join(first, " · ") + "\n" + strings.Join(second, " · ")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// tallyPane is a calibrate's pass rate per side, with its Wilson interval drawn as a bar.
type tallyPane struct {
	env  *env
	dir  string
	w, h int
}

func (p *tallyPane) title() string                     { return "Pass rate" }
func (p *tallyPane) setSize(w, h int)                  { p.w, p.h = w, h }
func (p *tallyPane) refresh()                          {}
func (p *tallyPane) capturing() bool                   { return false }
func (p *tallyPane) help() []key.Binding               { return nil }
func (p *tallyPane) rowHelp() []key.Binding            { return nil }
func (p *tallyPane) update(tea.KeyMsg) (bool, tea.Cmd) { return false, nil }

func (p *tallyPane) view(bool) string {
	st := p.env.store.run(p.dir).state
	s := p.env.st
	live := "running"
	if _, stopped := p.env.store.run(p.dir).stoppedAt(); stopped {
		live = "interrupted"
	}
	tallies := st.Tally()
	lw := min(max(p.w/4, 8), 28)
	nums := func(t journal.SideTally, running bool) string {
		counts := fmt.Sprintf("%d/%d", t.Passed, t.Verdicts)
		rate, interval := "  –", "    –    "
		if r, ok := t.Rate(); ok {
			rate = percent(r)
			interval = percent(t.Lo) + "–" + percent(t.Hi)
		}
		if running {
			return fmt.Sprintf(" %5s %4s %9s %2d %s %7s", counts, rate, interval, t.Running, live, cost(t.Usage))
		}
		return fmt.Sprintf(" %5s %4s %9s %7s", counts, rate, interval, cost(t.Usage))
	}
	// What each rate leaves out, in one column for every side: it matters more than how many
	// still run, and its counts whole more than its reasons cut. The bar takes what is left.
	outs := make([]string, len(tallies))
	width := func() int {
		w := 0
		for _, o := range outs {
			w = max(w, ansi.StringWidth(o))
		}
		return w
	}
	for i, t := range tallies {
		outs[i] = t.LeftOut()
	}
	running := true
	room := func() int { return p.w - lw - 1 - len([]rune(nums(journal.SideTally{}, running))) - 3 - 12 }
	if width() > room() {
		running = false
	}
	if width() > room() {
		for i, t := range tallies {
			outs[i] = leftOutCounts(t)
		}
	}
	ow := min(width(), max(room(), 8))
	var lines []string
	for i, t := range tallies {
		label := t.Side.Key + " " + strings.Join(append([]string{t.Side.Agent}, t.Side.Args...), " ")
		tail := nums(t, running)
		switch {
		case outs[i] != "":
			tail += " · " + fit(outs[i], ow)
		case ow > 0:
			tail += strings.Repeat(" ", ow+3)
		}
		bw := p.w - lw - 1 - ansi.StringWidth(tail)
		lines = append(lines, fit(label, lw)+" "+passBar(s, t, bw)+tail)
	}
	if len(lines) == 0 {
		lines = append(lines, s.tone(dim, "no sides yet"))
	}
	return strings.Join(lines, "\n")
}

// leftOutCounts is LeftOut without the reasons, for a narrow pane: "1 no verdict, 4/9–5/9
// · 1 retried". The bounds stay: a rate with tails left out is never shown without them.
func leftOutCounts(t journal.SideTally) string {
	var parts []string
	if t.NoVerdict > 0 {
		b := t.Bounds()
		parts = append(parts, fmt.Sprintf("%d no verdict, %d/%d–%d/%d", t.NoVerdict, b.Passed, b.N(), b.Passed+b.LeftOut, b.N()))
	}
	if t.Retried > 0 {
		parts = append(parts, fmt.Sprintf("%d retried", t.Retried))
	}
	return strings.Join(parts, " · ")
}

// passBar draws a pass rate on [0, 1] in w cells: the interval as a thick line over a thin
// track, the rate itself as a dot. With no finished tail it is the bare track.
func passBar(s styles, t journal.SideTally, w int) string {
	if w < 3 {
		return strings.Repeat(" ", max(w, 0))
	}
	cells := []rune(strings.Repeat("·", w))
	p, ok := t.Rate()
	if !ok {
		return s.tone(dim, string(cells))
	}
	lo := int(math.Floor(t.Lo * float64(w)))
	hi := int(math.Ceil(t.Hi*float64(w))) - 1
	for i := max(lo, 0); i <= min(hi, w-1); i++ {
		cells[i] = '━'
	}
	at := min(int(p*float64(w)), w-1)
	cells[at] = '●'
	// One colour, whatever the rate: a green or red that turns on mid-run when an interval
	// clears 0.5 is a test peeked at after every tail, and it errs far more often than 5%.
	// Colour says only what a finished test says (a tail's verdict, --until-separated's stop).
	return s.tone(accent, string(cells))
}

// tailsPane is a run's tails as a live table.
type tailsPane struct {
	env *env
	dir string
	t   *table
	// done keeps the rows of finished tails, which no longer change: a refresh rebuilds
	// only the live ones, so a run with thousands of tails costs what is running.
	done map[string]row
	// order is how the rows are sorted (s cycles): tailOrders[order].
	order int
	// find is the open search line (f), nil while closed.
	find *findLine
}

// tailOrders are the tails pane's sorts: as they started, live first by status, longest
// first, dearest first. Ties keep the start order.
var tailOrders = []struct {
	name string
	less func(a, b *journal.TailState, now time.Time) bool
}{
	{"start", nil},
	{"status", func(a, b *journal.TailState, _ time.Time) bool { return statusRank(a.Status) < statusRank(b.Status) }},
	{"time", func(a, b *journal.TailState, now time.Time) bool { return a.Elapsed(now) > b.Elapsed(now) }},
	{"cost", func(a, b *journal.TailState, _ time.Time) bool { return a.TotalUsage().Cost > b.TotalUsage().Cost }},
}

// statusRank puts what needs a look first: running, then failed, no verdict, passed.
func statusRank(s journal.Status) int {
	switch s {
	case journal.StatusRunning:
		return 0
	case journal.StatusFailed:
		return 1
	case journal.StatusNoVerdict:
		return 2
	case journal.StatusPassed:
		return 4
	}
	return 3
}

func newTailsPane(e *env, dir string) *tailsPane {
	t := newTable([]column{
		{title: "tail", width: 8},
		{title: "side", width: 4},
		{title: "from", width: 4, right: true},
		{title: "status", width: 11}, // "interrupted"
		{title: "elapsed", width: 7, right: true},
		{title: "calls", width: 5, right: true},
		{title: "tokens", width: 6, right: true},
		{title: "cost", width: 6, right: true},
		{title: "detail", flex: 1},
	}, "no tails yet")
	t.setStyles(e.st)
	return &tailsPane{env: e, dir: dir, t: t, done: map[string]row{}}
}

func (p *tailsPane) title() string {
	if p.order > 0 {
		return "Tails of " + filepath.Base(p.dir) + " · by " + tailOrders[p.order].name + p.markNote()
	}
	return "Tails of " + filepath.Base(p.dir) + p.markNote()
}
func (p *tailsPane) setSize(w, h int)   { p.t.setSize(w, h) }
func (p *tailsPane) capturing() bool    { return p.t.filtering || p.find != nil }
func (p *tailsPane) view(f bool) string { return p.findView(p.t.view(p.env.st, f)) }

func (p *tailsPane) refresh() {
	r := p.env.store.run(p.dir)
	st, now := r.state, p.env.now()
	stoppedAt, stopped := r.stoppedAt()
	if stopped {
		now = stoppedAt // a stopped run's tails count no time
	}
	rows := make([]row, 0, len(st.Order))
	for _, id := range st.Order {
		t := st.Tails[id]
		finished := t.Status != journal.StatusRunning
		if r, ok := p.done[id]; ok && finished && r.cells[3].text == statusCell(t).text && r.attempt == t.Attempt.N {
			rows = append(rows, r)
			continue
		}
		from := fmt.Sprint(t.Step)
		if t.How == "fresh" || t.How == "" {
			from = "–"
		}
		detail := t.Detail
		if t.Status == journal.StatusRunning && len(t.Tools) > 0 {
			last := t.Tools[len(t.Tools)-1]
			detail = last.Tool + " " + last.Summary
		}
		if t.Status == journal.StatusRunning && !t.Checking.IsZero() {
			detail = checkingNote(t, now)
		}
		if _, ok := stalledCell(t); ok {
			detail = stalledNote(t)
		}
		if stopped && !finished {
			detail = "r resumes the run"
			if len(t.Tools) > 0 {
				last := t.Tools[len(t.Tools)-1]
				detail += " · last: " + last.Tool + " " + last.Summary
			}
		}
		if len(t.Earlier) > 0 {
			detail = attemptNote(t) + " · " + detail
		}
		if t.Place != nil {
			detail = placeCell(t) + " · " + detail
		}
		status := statusCell(t)
		if t.Status == journal.StatusRunning && !t.Checking.IsZero() {
			status = cell{"checking", statusTone("checking")}
		}
		if pending(t) {
			status = cell{"pending", dim}
		}
		if stopped && !finished {
			status = interrupted
		}
		row := row{key: id, attempt: t.Attempt.N, cells: []cell{
			{id, plain},
			{t.Side, plain},
			{from, dim},
			status,
			{span(t.Elapsed(now)), dim},
			{fmt.Sprint(t.Calls), plain},
			{tokens(t.TotalUsage()), dim},
			{cost(t.TotalUsage()), dim},
			{detail, dim},
		}}
		if finished {
			p.done[id] = row
		} else {
			delete(p.done, id) // retried: live again
		}
		rows = append(rows, row)
	}
	if less := tailOrders[p.order].less; less != nil {
		sort.SliceStable(rows, func(i, j int) bool { return less(st.Tails[rows[i].key], st.Tails[rows[j].key], now) })
	}
	p.t.setRows(rows)
}

// attemptNote says which attempt a retried tail shows and which one its side counts:
// "attempt 2 · counts attempt 1: failed".
func attemptNote(t *journal.TailState) string {
	note := fmt.Sprintf("attempt %d", t.Attempt.N+1)
	if a, ok := t.Counted(); ok {
		if a.N != t.Attempt.N {
			note += fmt.Sprintf(" · counts attempt %d: %s", a.N+1, a.Label())
		}
	} else if t.Status != journal.StatusRunning {
		note += " · no verdict in any"
	}
	return note
}

func (p *tailsPane) update(msg tea.KeyMsg) (bool, tea.Cmd) {
	k := p.env.keys
	if !p.t.filtering {
		id := p.t.selected()
		if ok, cmd := p.findKey(msg); ok {
			return ok, cmd
		}
		if ok, cmd := p.sideKey(msg, id); ok {
			return ok, cmd
		}
		switch {
		case key.Matches(msg, k.Open) && id != "":
			return true, emit(openTailMsg{p.dir, id})
		case key.Matches(msg, k.Retry) && id != "":
			return true, emit(retryMsg{p.dir, id})
		case key.Matches(msg, k.Kill) && id != "":
			return true, emit(killMsg{p.dir, id})
		case key.Matches(msg, k.Shot) && id != "":
			return true, showShot(p.env.store.run(p.dir).state.Tails[id])
		case key.Matches(msg, k.Pager):
			return true, emit(pagerMsg{runFiles(p.dir)})
		case key.Matches(msg, k.Sort):
			p.order = (p.order + 1) % len(tailOrders)
			p.refresh()
			return true, nil
		}
	}
	return p.t.update(k, msg)
}

func (p *tailsPane) help() []key.Binding {
	k := p.env.keys
	return append(append([]key.Binding{k.Open, k.Kill, k.Retry, k.Resume, k.Sort, k.Pager, k.Filter}, judgeKeys(k, p.env.store.run(p.dir).state)...), k.Find, k.Side)
}

func (p *tailsPane) rowHelp() []key.Binding {
	k := p.env.keys
	r := p.env.store.run(p.dir)
	var out []key.Binding
	t := r.state.Tails[p.t.selected()]
	_, stopped := r.stoppedAt()
	if t != nil {
		out = append(out, k.Open)
		if !stopped { // nothing runs its tails to kill
			out = append(out, tailKeys(k, t)...)
		}
	}
	if r.status() == "crashed" {
		out = append(out, k.Resume)
	}
	out = append(out, k.Sort, k.Pager, k.Filter)
	if t != nil {
		out = append(append(out, judgeKeys(k, r.state)...), k.Side)
	}
	return append(out, k.Find)
}

// tailKeys are the keys a tail's status leaves open: kill while it runs, retry once it failed
// or ended with no verdict.
func tailKeys(k KeyMap, t *journal.TailState) []key.Binding {
	switch t.Status {
	case journal.StatusRunning:
		return []key.Binding{k.Kill}
	case journal.StatusFailed, journal.StatusNoVerdict:
		return []key.Binding{k.Retry}
	}
	return nil
}
