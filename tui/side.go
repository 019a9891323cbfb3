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
)

// tailRef names one tail of one run.
type tailRef struct{ dir, id string }

// sideKey is the tails pane's m and =: it reports whether it used the key.
func (p *tailsPane) sideKey(msg tea.KeyMsg, id string) (bool, tea.Cmd) {
	switch {
	case key.Matches(msg, p.env.keys.Mark) && id != "":
		// The pane's title shows the mark while it stands (a footer note would fade).
		p.env.mark = &tailRef{p.dir, id}
		return true, nil
	case key.Matches(msg, p.env.keys.Compare) && id != "":
		if p.env.mark == nil {
			return true, emit(noteMsg("no tail is marked: m marks one, then = on another lays them side by side"))
		}
		return true, loadSide(*p.env.mark, tailRef{p.dir, id}, p.t.w)
	}
	return false, nil
}

// loadSide reads and aligns two tails off the UI goroutine, and opens them in the reader.
func loadSide(a, b tailRef, width int) tea.Cmd {
	return func() tea.Msg {
		s, err := journal.CompareTails(context.Background(), a.dir, a.id, b.dir, b.id)
		if err != nil {
			return readerMsg{err: fmt.Errorf("side by side: %v", err)}
		}
		title := fmt.Sprintf("Side by side · %s ↔ %s", name(a), name(b))
		if s.Diverge >= 0 {
			title += fmt.Sprintf(" · diverge at step %d", s.Diverge+1)
		} else {
			title += " · same calls"
		}
		return readerMsg{title: title, text: renderSide(s, max(width, 60))}
	}
}

// markNote is the tails pane's title's mention of the marked tail.
func (p *tailsPane) markNote() string {
	if p.env.mark == nil {
		return ""
	}
	return " · marked " + name(*p.env.mark) + " (= beside it)"
}

func name(r tailRef) string { return r.id + " of " + filepath.Base(r.dir) }

// renderSide draws the aligned calls in two columns, one row a step: the first step where
// the tails differ is marked ▶ and named under the table; then each tail's workspace change.
func renderSide(s *journal.SideBySide, width int) string {
	col := (width - 9) / 2
	cell := func(d *journal.TailDetail, i int) string {
		if i < 0 {
			return "–"
		}
		c := d.Calls[i]
		return fmt.Sprintf("%d %s %s", i+1, c.Tool, strings.Join(strings.Fields(c.Input), " "))
	}
	pad := func(s string) string {
		s = ansi.Truncate(s, col, "…")
		return s + strings.Repeat(" ", max(col-ansi.StringWidth(s), 0))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "     %s │ %s\n", pad(s.TailA), pad(s.TailB))
	for k, st := range s.Steps {
		mark, sep := "  ", "│"
		switch {
		case k == s.Diverge:
			mark = "▶ "
		case !st.Same:
			mark = "≠ "
		}
		if st.Same {
			sep = "="
		}
		fmt.Fprintf(&b, "%s%3d %s %s %s\n", mark, k+1, pad(cell(s.A, st.A)), sep, pad(cell(s.B, st.B)))
	}
	if s.Diverge >= 0 {
		st := s.Steps[s.Diverge]
		fmt.Fprintf(&b, "\nfirst divergence at step %d: %s | %s\n", s.Diverge+1, cell(s.A, st.A), cell(s.B, st.B))
	} else {
		b.WriteString("\nthe tails made the same calls\n")
	}
	fmt.Fprintf(&b, "\n── %s ──\n%s\n── %s ──\n%s", s.TailA, strings.TrimRight(s.ChangesA, "\n"), s.TailB, strings.TrimRight(s.ChangesB, "\n"))
	return journal.Printable(b.String())
}
