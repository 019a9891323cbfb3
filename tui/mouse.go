package tui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// tabled is a pane whose body is a table, so a click can select its row.
type tabled interface{ rowsTable() *table }

func (p *probesPane) rowsTable() *table { return p.t }
func (p *runsPane) rowsTable() *table   { return p.t }
func (p *tailsPane) rowsTable() *table  { return p.t }

// mouse handles the wheel (it moves as the arrow keys do, in whatever has the keys) and a
// left click (it focuses the pane under it and selects the row). Dialogs and the terminal
// pane keep the mouse out.
func (m *model) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.form != nil || m.confirm != nil || m.showHelp || m.page() == termPage {
		return nil
	}
	switch {
	case msg.Button == tea.MouseButtonWheelUp && msg.Action == tea.MouseActionPress:
		return m.key(tea.KeyMsg{Type: tea.KeyUp})
	case msg.Button == tea.MouseButtonWheelDown && msg.Action == tea.MouseActionPress:
		return m.key(tea.KeyMsg{Type: tea.KeyDown})
	case msg.Button != tea.MouseButtonLeft || msg.Action != tea.MouseActionPress:
		return nil
	}
	switch m.page() {
	case homePage, runPage:
		rects := m.home.rects
		if m.page() == runPage {
			rects = m.run.rects
		}
		ring := m.ring()
		for i, r := range rects {
			if i >= len(ring.panes) || !inside(r, msg.X, msg.Y) {
				continue
			}
			ring.focus = i
			if tp, ok := ring.panes[i].(tabled); ok {
				clickRow(tp.rowsTable(), r, msg.Y)
			}
		}
	case tailPage:
		v := m.tail
		switch {
		case inside(v.callsR, msg.X, msg.Y):
			v.onDiff = false
			before := v.selectedStep()
			clickRow(v.calls, v.callsR, msg.Y)
			if v.selectedStep() != before {
				v.showDetail()
				if v.diff != nil {
					v.following = true
					return emit(diffMsg{v.dir, v.id, v.selectedStep()})
				}
			}
		case inside(v.diffR, msg.X, msg.Y):
			v.onDiff = true
		}
	}
	return nil
}

func inside(r rect, x, y int) bool { return x >= r.X && x < r.X+r.W && y >= r.Y && y < r.Y+r.H }

// clickRow selects the row drawn at screen row y of a table boxed in r (a border line, then
// the column header, then the rows from the table's offset).
func clickRow(t *table, r rect, y int) {
	i := t.offset + y - r.Y - 2
	if i >= t.offset && i < len(t.rows) {
		t.cursor = i
		t.clamp()
	}
}
