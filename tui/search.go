package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// findLine is the open search line of the tails pane.
type findLine struct{ in textinput.Model }

func newFindLine(s styles, w int) *findLine {
	ti := textinput.New()
	ti.Prompt = "find: "
	ti.Cursor.SetMode(cursor.CursorStatic)
	ti.PromptStyle = s.tones[accent]
	ti.TextStyle = s.tones[plain]
	ti.Width = max(w-8, 1)
	ti.Focus()
	return &findLine{in: ti}
}

// findKey handles a key while the tails pane's search line is open (it takes every key),
// or f, which opens it.
func (p *tailsPane) findKey(msg tea.KeyMsg) (bool, tea.Cmd) {
	if p.find == nil {
		if key.Matches(msg, p.env.keys.Find) {
			p.find = newFindLine(p.env.st, p.t.w)
			return true, nil
		}
		return false, nil
	}
	switch msg.Type {
	case tea.KeyEsc:
		p.find = nil
		return true, nil
	case tea.KeyEnter:
		q := strings.TrimSpace(p.find.in.Value())
		p.find = nil
		if q == "" {
			return true, nil
		}
		return true, searchTails(p.dir, q)
	}
	var cmd tea.Cmd
	p.find.in, cmd = p.find.in.Update(msg)
	return true, cmd
}

// findView draws the search line over the pane's last line while it is open.
func (p *tailsPane) findView(view string) string {
	if p.find == nil {
		return view
	}
	lines := strings.Split(view, "\n")
	lines[len(lines)-1] = p.find.in.View()
	return strings.Join(lines, "\n")
}

// searchTails searches every tail of the run off the UI goroutine. It opens the reader at
// once and fills it as the tails are read, the footer counting them: a run of thousands of
// tails is searched without the app waiting for the end (see searchMsg).
func searchTails(dir, q string) tea.Cmd {
	s := &search{dir: dir, q: q, ch: make(chan searchMsg)}
	go s.run()
	return s.next
}
