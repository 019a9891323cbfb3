package tui

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// keyHelp is the help for this moment, generated from the key map: the footer has the keys
// that act on the row under the cursor, ? every key of the view on top, pane by pane.
func (m *model) keyHelp() helpKeys {
	k := m.env.keys
	var short []key.Binding
	var groups []helpGroup
	switch m.page() {
	case termPage:
		return helpKeys{short: []key.Binding{k.Release}, groups: []helpGroup{{"Terminal", []key.Binding{k.Release}}}}
	case tailPage:
		short = append(m.tail.rowHelp(), k.Next, k.Back)
		groups = append(groups, helpGroup{"Tail " + m.tail.id, append(m.tail.help(), with(k.Next, "calls / detail"))})
	case readerPage:
		short = []key.Binding{k.Down, k.Up, k.HalfDown, k.Bottom, k.Back}
	case homePage, runPage:
		if p := m.ring().current(); p != nil {
			short = append(short, p.rowHelp()...)
		}
		for _, p := range m.ring().panes {
			if h := p.help(); len(h) > 0 {
				title, _, _ := strings.Cut(p.title(), " · ")
				groups = append(groups, helpGroup{title, h})
			}
		}
		if len(m.ring().panes) > 1 {
			short = append(short, k.Next)
		}
		if m.page() == runPage && m.live == "" {
			short = append(short, k.Back)
		}
	}
	if m.term != nil {
		// First: a program is running out of sight, and this is the way back to it.
		short = append([]key.Binding{with(k.Terminal, "terminal ("+m.term.Name()+")")}, short...)
	}
	short = append(short, k.Help, k.Quit)
	everywhere := []key.Binding{k.Next, k.Prev, k.Back}
	if m.live == "" {
		everywhere = append(everywhere, k.New)
	}
	if m.term != nil {
		everywhere = append(everywhere, k.Terminal, k.Release)
	}
	groups = append(groups,
		helpGroup{"Move", []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.HalfUp, k.HalfDown, k.Top, k.Bottom}},
		helpGroup{"Everywhere", append(everywhere, k.Help, k.Quit)})
	return helpKeys{short: short, groups: groups}
}

// View composes the screen: header, the page on top, footer, and an open dialog over them.
func (m *model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	c := newCanvas(m.w, m.h)
	c.put(m.scr.header, []string{m.header()})
	switch m.page() {
	case homePage:
		m.home.draw(c)
	case runPage:
		m.run.draw(c)
	case tailPage:
		m.tail.draw(c)
	case termPage:
		m.drawTerminal(c)
	case readerPage:
		m.reader.draw(c, m.env.st, m.scr.body)
	}
	c.put(m.scr.footer, []string{m.footer()})
	st := m.env.st
	switch {
	case m.form != nil:
		w := min(m.scr.body.W, 76)
		body := m.form.view(w - 2)
		r := centered(m.scr.body, w, strings.Count(body, "\n")+3)
		c.put(r, st.box(m.form.title, body, r.W, r.H, true))
	case m.confirm != nil:
		body := m.confirm.view(st)
		r := centered(m.scr.body, min(m.scr.body.W, 60), strings.Count(body, "\n")+3)
		c.put(r, st.box("Confirm", body, r.W, r.H, true))
	case m.showHelp:
		body := m.fullHelp(m.scr.body.W - 4)
		w := 0
		for _, l := range strings.Split(body, "\n") {
			w = max(w, ansi.StringWidth(l)+4)
		}
		r := centered(m.scr.body, min(w, m.scr.body.W), strings.Count(body, "\n")+3)
		c.put(r, st.box("Keys", body, r.W, r.H, true))
	}
	return c.String()
}

// fullHelp is the view's keys in columns, one a group under its title, in as many rows of
// columns as w needs.
func (m *model) fullHelp(w int) string {
	st := m.help.Styles
	var cols []string
	for _, g := range m.keyHelp().groups {
		var keys, descs []string
		for _, b := range g.keys {
			if b.Enabled() {
				keys, descs = append(keys, st.FullKey.Render(b.Help().Key)), append(descs, st.FullDesc.Render(b.Help().Desc))
			}
		}
		body := lipgloss.JoinHorizontal(lipgloss.Top, strings.Join(keys, "\n"), " ", strings.Join(descs, "\n"))
		cols = append(cols, m.env.st.header.Render(g.title)+"\n"+body)
	}
	for per := len(cols); per > 0; per-- {
		var rows []string
		for i := 0; i < len(cols); i += per {
			row := cols[i:min(i+per, len(cols))]
			spaced := make([]string, 0, 2*len(row))
			for n, c := range row {
				if n > 0 {
					spaced = append(spaced, "   ")
				}
				spaced = append(spaced, c)
			}
			rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, spaced...))
		}
		out := strings.Join(rows, "\n\n")
		if widest(out) <= w || per == 1 {
			return out
		}
	}
	return ""
}

func widest(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, ansi.StringWidth(l))
	}
	return w
}

// header is the breadcrumb on the left and the state of things on the right.
func (m *model) header() string {
	st := m.env.st
	crumbs := []string{"tare"}
	for _, p := range m.pages {
		switch p {
		case homePage:
			crumbs = append(crumbs, "home")
		case runPage:
			crumbs = append(crumbs, filepath.Base(m.run.dir))
		case tailPage:
			crumbs = append(crumbs, m.tail.id)
		case termPage:
			crumbs = append(crumbs, m.term.Name())
		case readerPage:
			crumbs = append(crumbs, "reading")
		}
	}
	left := st.crumb.Render(strings.Join(crumbs, " › "))
	live := 0
	for _, r := range m.env.store.runs {
		if r.status() == "live" {
			live++
		}
	}
	right := st.tone(dim, fmt.Sprintf("%d runs · %d live", len(m.env.store.runs), live))
	return fit(left, m.w-ansi.StringWidth(right)-1) + " " + right
}

// footer is the help for this moment on the left and the last status on the right.
func (m *model) footer() string {
	st := m.env.st
	status := m.status
	if status != "" {
		max := max(m.w/2, 20)
		status = ansi.Truncate(status, max, "…")
		if m.statusErr {
			status = st.statusErr.Render(status)
		} else {
			status = st.status.Render(status)
		}
	}
	sw := ansi.StringWidth(status)
	h := m.help
	// ? and q are the two keys a newcomer needs at any width: they are drawn first and the
	// other keys get what is left.
	k := m.env.keys
	var rest, always []key.Binding
	for _, b := range m.keyHelp().ShortHelp() {
		if b.Help().Key == k.Help.Help().Key || b.Help().Key == k.Quit.Help().Key {
			always = append(always, b)
		} else {
			rest = append(rest, b)
		}
	}
	h.Width = 0
	tail := h.ShortHelpView(always)
	tw := ansi.StringWidth(tail)
	h.Width = max(m.w-sw-tw-5, 0)
	left := h.ShortHelpView(rest)
	if left != "" && tail != "" {
		left += h.Styles.ShortSeparator.Inline(true).Render(h.ShortSeparator)
	}
	return fit(left+tail, m.w-sw-1) + " " + status
}
