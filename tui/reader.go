package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
	"tare/engine/probe"
)

// reader is a page of text the operator scrolls through: a probe reading, every line of it.
type reader struct {
	title string
	vp    viewport.Model
	// search, when set, is the search whose hits the reader shows as they come.
	search *search
}

func newReader(title, text string) *reader {
	vp := viewport.New(0, 0)
	vp.SetContent(text)
	return &reader{title: title, vp: vp}
}

func (r *reader) setSize(body rect) {
	r.vp.Width, r.vp.Height = max(body.W-2, 0), max(body.H-2, 0)
}

// update scrolls; it reports whether it used the key (esc is the root's: it goes back).
func (r *reader) update(k KeyMap, msg tea.KeyMsg) bool {
	switch {
	case key.Matches(msg, k.Up):
		r.vp.ScrollUp(1)
	case key.Matches(msg, k.Down):
		r.vp.ScrollDown(1)
	case key.Matches(msg, k.PageUp):
		r.vp.PageUp()
	case key.Matches(msg, k.PageDown):
		r.vp.PageDown()
	case key.Matches(msg, k.HalfUp):
		r.vp.HalfPageUp()
	case key.Matches(msg, k.HalfDown):
		r.vp.HalfPageDown()
	case key.Matches(msg, k.Top):
		r.vp.GotoTop()
	case key.Matches(msg, k.Bottom):
		r.vp.GotoBottom()
	default:
		return false
	}
	return true
}

func (r *reader) draw(c *canvas, s styles, body rect) {
	title := r.title
	if !r.vp.AtTop() || !r.vp.AtBottom() {
		title += fmt.Sprintf(" · %d%%", int(r.vp.ScrollPercent()*100))
	}
	c.put(body, s.box(title, r.vp.View(), body.W, body.H, true))
}

// readerMsg is text to open in the reader, read off the UI goroutine.
type readerMsg struct {
	title, text string
	err         error
}

// loadReading reads a probe reading's file and renders it as tare probe prints it.
func loadReading(p probe.Summary) tea.Cmd {
	return func() tea.Msg {
		title := "Reading · " + p.Agent
		data, err := os.ReadFile(p.Path)
		if err != nil {
			return readerMsg{title: title, err: fmt.Errorf("reading of %s: %v; fix: p takes a new one", p.Agent, err)}
		}
		var r probe.Reading
		if err := json.Unmarshal(data, &r); err != nil {
			return readerMsg{title: title, err: fmt.Errorf("reading of %s (%s): %v; fix: p takes a new one", p.Agent, p.Path, err)}
		}
		// The reading names files of the project, whose names an agent may have chosen.
		text := journal.Printable(strings.TrimRight(r.Render(), "\n"))
		return readerMsg{title: fmt.Sprintf("%s · %s · %s", title, r.Verdict(), p.At.Local().Format("2006-01-02 15:04")), text: text}
	}
}
