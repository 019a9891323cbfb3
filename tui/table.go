package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// column is one column of a table: a fixed width, or flexible (it takes what the fixed
// ones leave, shared by weight).
type column struct {
	title string
	width int
	flex  int
	right bool
}

// cell is one table cell: its text and what it means (the pane's styles colour it).
type cell struct {
	text string
	tone tone
}

// row is one table row; key identifies it across refreshes so the cursor stays on it.
type row struct {
	key   string
	cells []cell
	// attempt is the tail attempt a cached row shows: a retry redraws it.
	attempt int
}

// table is the list every pane draws: a column header, a cursor, scrolling and a / filter.
// It only renders the rows that are visible, so a run with hundreds of tails costs what the
// screen shows.
type table struct {
	cols   []column
	all    []row
	rows   []row // after the filter
	cursor int
	offset int
	w, h   int
	empty  string

	filter    textinput.Model
	filtering bool
	// fill, when set, makes the cells of a row that has none when it is first drawn (or
	// filtered): a list of a million rows decodes what the screen shows.
	fill func(key string) []cell
}

func newTable(cols []column, empty string) *table {
	ti := textinput.New()
	ti.Prompt = "/"
	// A steady cursor: a blinking one would wake the program twice a second for nothing.
	ti.Cursor.SetMode(cursor.CursorStatic)
	return &table{cols: cols, empty: empty, filter: ti}
}

// setStyles gives the filter input the session's styles.
func (t *table) setStyles(s styles) {
	t.filter.PromptStyle = s.tones[accent]
	t.filter.TextStyle = s.tones[plain]
	t.filter.Cursor.Style = s.cursor
	t.filter.Cursor.TextStyle = s.tones[plain]
}

// setRows replaces the rows, keeping the cursor on the same key when it is still there.
func (t *table) setRows(rows []row) {
	for _, r := range rows {
		for j := range r.cells {
			r.cells[j].text = journal.Printable(r.cells[j].text) // agent text never reaches the terminal raw
		}
	}
	sel := t.selected()
	t.all = rows
	t.applyFilter()
	if sel != "" {
		for i, r := range t.rows {
			if r.key == sel {
				t.cursor = i
				break
			}
		}
	}
	t.clamp()
}

func (t *table) applyFilter() {
	q := strings.ToLower(strings.TrimSpace(t.filter.Value()))
	if q == "" {
		t.rows = t.all
		return
	}
	t.fillAll()
	t.rows = t.rows[:0:0]
	for _, r := range t.all {
		for _, c := range r.cells {
			if strings.Contains(strings.ToLower(c.text), q) {
				t.rows = append(t.rows, r)
				break
			}
		}
	}
}

// filled is row i of rows with its cells, made now when it has none.
func (t *table) filled(rows []row, i int) row {
	if rows[i].cells == nil && t.fill != nil {
		cells := t.fill(rows[i].key)
		for j := range cells {
			cells[j].text = journal.Printable(cells[j].text)
		}
		rows[i].cells = cells
	}
	return rows[i]
}

// fillAll makes every row's cells, for the filter to match them.
func (t *table) fillAll() {
	for i := range t.all {
		t.filled(t.all, i)
	}
}

// selected is the key of the row under the cursor, or "".
func (t *table) selected() string {
	if t.cursor < 0 || t.cursor >= len(t.rows) {
		return ""
	}
	return t.rows[t.cursor].key
}

func (t *table) setSize(w, h int) {
	t.w, t.h = w, h
	t.filter.Width = max(w-3, 1)
	t.clamp()
}

// page is how many rows fit under the header (and the filter line while it shows).
func (t *table) page() int {
	n := t.h - 1
	if t.filtering || t.filter.Value() != "" {
		n--
	}
	return max(n, 1)
}

func (t *table) clamp() {
	t.cursor = max(min(t.cursor, len(t.rows)-1), 0)
	page := t.page()
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+page {
		t.offset = t.cursor - page + 1
	}
	t.offset = max(min(t.offset, len(t.rows)-page), 0)
}

// startFilter opens the filter line; keys go to it until enter or esc.
func (t *table) startFilter() tea.Cmd {
	t.filtering = true
	t.clamp()
	return t.filter.Focus()
}

// update handles a key for the table. It reports whether the key was used.
func (t *table) update(k KeyMap, msg tea.KeyMsg) (bool, tea.Cmd) {
	if t.filtering {
		switch msg.Type {
		case tea.KeyEnter:
			t.filtering = false
			t.filter.Blur()
		case tea.KeyEsc:
			t.filtering = false
			t.filter.Blur()
			t.filter.SetValue("")
			t.applyFilter()
		default:
			var cmd tea.Cmd
			t.filter, cmd = t.filter.Update(msg)
			t.applyFilter()
			t.clamp()
			return true, cmd
		}
		t.clamp()
		return true, nil
	}
	switch {
	case key.Matches(msg, k.Up):
		t.cursor--
	case key.Matches(msg, k.Down):
		t.cursor++
	case key.Matches(msg, k.PageUp):
		t.cursor -= t.page()
	case key.Matches(msg, k.PageDown):
		t.cursor += t.page()
	case key.Matches(msg, k.HalfUp):
		t.cursor -= max(t.page()/2, 1)
	case key.Matches(msg, k.HalfDown):
		t.cursor += max(t.page()/2, 1)
	case key.Matches(msg, k.Top):
		t.cursor = 0
	case key.Matches(msg, k.Bottom):
		t.cursor = len(t.rows) - 1
	case key.Matches(msg, k.Filter):
		return true, t.startFilter()
	case msg.Type == tea.KeyEsc && t.filter.Value() != "":
		t.filter.SetValue("")
		t.applyFilter()
	default:
		return false, nil
	}
	t.clamp()
	return true, nil
}

// widths gives each column its width for the table's width; flexible columns share the
// rest, and when even the fixed ones do not fit, the rightmost are dropped.
func (t *table) widths() []int {
	out := make([]int, len(t.cols))
	fixed, flex := 0, 0
	for i, c := range t.cols {
		if c.flex > 0 {
			flex += c.flex
			fixed++ // the gap before it
			continue
		}
		out[i] = c.width
		fixed += c.width + 1
	}
	left := t.w - gutter - fixed + 1
	if left < flex*6 && flex > 0 {
		// Not enough room: drop fixed columns from the right until the flexible ones get 6 each.
		for i := len(t.cols) - 1; i >= 0 && left < flex*6; i-- {
			if t.cols[i].flex == 0 && out[i] > 0 {
				left += out[i] + 1
				out[i] = 0
			}
		}
	}
	left = max(left, 0)
	given := 0
	last := -1
	for i, c := range t.cols {
		if c.flex > 0 {
			out[i] = left * c.flex / max(flex, 1)
			given += out[i]
			last = i
		}
	}
	if last >= 0 {
		out[last] += left - given
	}
	return out
}

// gutter is the room left of the cells for the cursor mark, so the selection shows in
// every colour profile (reverse video alone is lost on an ASCII terminal).
const gutter = 2

// view draws the header and the visible rows, exactly w×h.
func (t *table) view(s styles, focused bool) string {
	if t.w <= 0 || t.h <= 0 {
		return ""
	}
	widths := t.widths()
	var b strings.Builder
	head := make([]string, 0, len(t.cols))
	for i, c := range t.cols {
		if widths[i] == 0 {
			continue
		}
		if c.right {
			head = append(head, fitRight(c.title, widths[i]))
		} else {
			head = append(head, fit(c.title, widths[i]))
		}
	}
	b.WriteString(s.colHeader.Render(fit(strings.Repeat(" ", gutter)+strings.Join(head, " "), t.w)))
	page := t.page()
	lines := 1
	if len(t.rows) == 0 {
		msg := t.empty
		if len(t.all) > 0 {
			msg = "no row matches the filter"
		}
		b.WriteString("\n" + s.tone(dim, fit(strings.Repeat(" ", gutter)+msg, t.w)))
		lines++
	}
	for i := t.offset; i < len(t.rows) && i < t.offset+page; i++ {
		r := t.filled(t.rows, i)
		b.WriteByte('\n')
		lines++
		sel := focused && i == t.cursor
		parts := make([]string, 0, len(r.cells))
		for j, c := range r.cells {
			if j >= len(widths) || widths[j] == 0 {
				continue
			}
			text := fit(c.text, widths[j])
			if t.cols[j].right {
				text = fitRight(c.text, widths[j])
			}
			if !sel && c.tone != plain {
				text = s.tone(c.tone, text)
			}
			parts = append(parts, text)
		}
		line := strings.Join(parts, " ")
		switch {
		case sel:
			line = s.selectedRow(fit("> "+line, t.w))
		case i == t.cursor:
			line = fit(s.tone(dim, "· ")+line, t.w)
		default:
			line = fit("  "+line, t.w)
		}
		b.WriteString(line)
	}
	if t.filtering || t.filter.Value() != "" {
		for ; lines < t.h-1; lines++ {
			b.WriteByte('\n')
		}
		b.WriteString("\n" + t.filter.View())
	}
	return b.String()
}
