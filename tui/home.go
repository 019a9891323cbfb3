package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// homeView is the first screen: a set of panes (probes, runs; the workshop adds writers)
// placed by homeLayout. Adding a pane is a field, an entry in the ring and a rectangle.
type homeView struct {
	env    *env
	ring   focusRing
	probes *probesPane // nil when the app follows run directories only (tare watch)
	runs   *runsPane
	// writers is the workshop's pane (nil when the app follows no experiments).
	writers *writersPane
	rects   []rect
}

func newHomeView(e *env, withProbes, withWriters bool) *homeView {
	h := &homeView{env: e, runs: newRunsPane(e)}
	if withProbes {
		h.probes = newProbesPane(e)
		h.ring.panes = []pane{h.probes, h.runs}
		h.ring.focus = 1 // runs first: they are what one comes to see
	} else {
		h.ring.panes = []pane{h.runs}
	}
	if withWriters {
		h.writers = newWritersPane(e)
		h.ring.panes = append(h.ring.panes, h.writers)
	}
	return h
}

func (h *homeView) setSize(body rect) {
	switch {
	case h.probes == nil && h.writers == nil:
		h.rects = []rect{body}
	case h.probes == nil:
		cols := stack(body, []int{0, 0})
		h.rects = []rect{cols[0], cols[1]}
	default:
		p, r, w := homeLayout(body, len(h.env.store.agentNames()), h.writers != nil)
		h.rects = []rect{p, r}
		if h.writers != nil {
			h.rects = append(h.rects, w)
		}
	}
	for i, p := range h.ring.panes {
		p.setSize(max(h.rects[i].W-2, 0), max(h.rects[i].H-2, 0))
	}
}

func (h *homeView) draw(c *canvas) {
	for i, p := range h.ring.panes {
		r := h.rects[i]
		focused := i == h.ring.focus
		c.put(r, h.env.st.box(p.title(), p.view(focused), r.W, r.H, focused))
	}
}

// probesPane lists each agent with its last reading and when it was taken.
type probesPane struct {
	env *env
	t   *table
}

func newProbesPane(e *env) *probesPane {
	t := newTable([]column{
		{title: "agent", width: 8},
		{title: "reading", flex: 2},
		{title: "room", width: 12},
		{title: "version", width: 12},
		{title: "taken", width: 9, right: true},
	}, "no agents known; run tare probe AGENT")
	t.setStyles(e.st)
	return &probesPane{env: e, t: t}
}

// title names the project the readings are for: a reading holds for one project only.
func (p *probesPane) title() string {
	if p.env.store.project == "" {
		return "Probes"
	}
	return "Probes · " + tildePath(p.env.store.project)
}
func (p *probesPane) setSize(w, h int)   { p.t.setSize(w, h) }
func (p *probesPane) capturing() bool    { return p.t.filtering }
func (p *probesPane) view(f bool) string { return p.t.view(p.env.st, f) }

func (p *probesPane) refresh() {
	s, now := p.env.store, p.env.now()
	var rows []row
	for _, a := range s.agentNames() {
		r, ok := s.probes[a]
		reading, t, taken, room := "no reading of this project yet", dim, "", ""
		if ok {
			reading, taken, room = r.Verdict, ago(r.At, now), shortRoom(r.Room)
			t = bad
			if r.Zero {
				t = good
			}
		}
		if s.probing[a] {
			reading, t = "probing…", warn
		}
		rows = append(rows, row{key: a, cells: []cell{{a, plain}, {reading, t}, {room, dim}, {r.Version, dim}, {taken, dim}}})
	}
	p.t.setRows(rows)
}

// shortRoom is a reading's room in a dozen columns; the reading itself says it in full.
func shortRoom(room string) string {
	switch {
	case room == "":
		return ""
	case strings.Contains(room, "host network"):
		return "host network"
	case strings.Contains(room, "model server"):
		return "model server"
	}
	return room
}

// tildePath shows a path under the operator's home as ~/...
func tildePath(p string) string {
	home, err := os.UserHomeDir()
	if err == nil && home != "" && home != "/" && (p == home || strings.HasPrefix(p, home+"/")) {
		return "~" + strings.TrimPrefix(p, home)
	}
	return p
}

func (p *probesPane) update(msg tea.KeyMsg) (bool, tea.Cmd) {
	k := p.env.keys
	if !p.t.filtering {
		agent := p.t.selected()
		switch {
		case key.Matches(msg, k.Open) && agent != "":
			return true, emit(openReadingMsg{agent})
		case key.Matches(msg, k.Probe) && agent != "":
			return true, emit(probeMsg{agent})
		case key.Matches(msg, k.Attach) && agent != "":
			return true, emit(attachFormMsg{agent})
		}
	}
	return p.t.update(k, msg)
}

func (p *probesPane) help() []key.Binding {
	k := p.env.keys
	return []key.Binding{with(k.Open, "reading"), k.Probe, k.Attach, k.Filter}
}

func (p *probesPane) rowHelp() []key.Binding {
	k := p.env.keys
	agent := p.t.selected()
	if agent == "" {
		return []key.Binding{k.Filter}
	}
	var out []key.Binding
	if _, ok := p.env.store.probes[agent]; ok {
		out = append(out, with(k.Open, "reading"))
	}
	if !p.env.store.probing[agent] {
		out = append(out, k.Probe)
	}
	return append(out, k.Attach, k.Filter)
}

// runsPane lists every run, live and finished, newest first.
type runsPane struct {
	env *env
	t   *table
}

func newRunsPane(e *env) *runsPane {
	t := newTable([]column{
		{title: "run", flex: 3},
		{title: "kind", width: 9},
		{title: "state", width: 7},
		{title: "done/run/of", width: 11, right: true},
		{title: "pass so far", flex: 2},
		{title: "elapsed", width: 7, right: true},
		{title: "cost", width: 6, right: true},
	}, "no runs yet; n starts one")
	t.setStyles(e.st)
	return &runsPane{env: e, t: t}
}

func (p *runsPane) title() string      { return "Runs" }
func (p *runsPane) setSize(w, h int)   { p.t.setSize(w, h) }
func (p *runsPane) capturing() bool    { return p.t.filtering }
func (p *runsPane) view(f bool) string { return p.t.view(p.env.st, f) }

func (p *runsPane) refresh() {
	s, now := p.env.store, p.env.now()
	rows := make([]row, 0, len(s.order))
	for _, dir := range s.order {
		r := s.runs[dir]
		st := r.state
		done, running, budget := st.Counts()
		status := r.status()
		kind := st.Kind
		if kind == "" {
			kind = filepath.Base(filepath.Dir(dir))
		}
		rows = append(rows, row{key: dir, cells: []cell{
			{filepath.Base(dir), plain},
			{kind, plain},
			{status, statusTone(status)},
			{fmt.Sprintf("%d/%d/%d", done, running, budget), plain},
			{passSoFar(st), plain},
			{span(r.elapsed(now)), dim},
			{runCost(st), dim},
		}})
	}
	p.t.setRows(rows)
}

// passSoFar is each side's passes over its verdicts, and the tails left out with the rate's
// bounds had they all failed or passed: "a 3/5 +1nv 3/6–4/6 · b 1/4".
func passSoFar(st *journal.RunState) string {
	var parts []string
	for _, t := range st.Tally() {
		part := fmt.Sprintf("%s %d/%d", t.Side.Key, t.Passed, t.Verdicts)
		if t.NoVerdict > 0 {
			b := t.Bounds()
			part += fmt.Sprintf(" +%dnv %d/%d–%d/%d", t.NoVerdict, b.Passed, b.N(), b.Passed+b.LeftOut, b.N())
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " · ")
}

func (p *runsPane) update(msg tea.KeyMsg) (bool, tea.Cmd) {
	k := p.env.keys
	if !p.t.filtering {
		dir := p.t.selected()
		switch {
		case key.Matches(msg, k.Open) && dir != "":
			return true, emit(openRunMsg{dir})
		case key.Matches(msg, k.Resume) && dir != "":
			return true, emit(resumeMsg{dir})
		case key.Matches(msg, k.Delete) && dir != "":
			return true, emit(deleteMsg{dir})
		}
	}
	return p.t.update(k, msg)
}

func (p *runsPane) help() []key.Binding {
	k := p.env.keys
	return []key.Binding{k.Open, k.Resume, k.New, k.Delete, k.Filter}
}

func (p *runsPane) rowHelp() []key.Binding {
	k := p.env.keys
	dir := p.t.selected()
	if dir == "" {
		return []key.Binding{k.New, k.Filter}
	}
	out := []key.Binding{k.Open}
	switch p.env.store.run(dir).status() {
	case "crashed":
		out = append(out, k.Resume, k.Delete)
	case "live":
	default:
		out = append(out, k.Delete)
	}
	return append(out, k.New, k.Filter)
}
