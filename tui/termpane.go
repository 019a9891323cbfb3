package tui

import (
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// termStartedMsg is the answer to attach: the terminal, started off the UI goroutine.
type termStartedMsg struct {
	t   *Terminal
	err error
}

// termMsg says the terminal's screen changed (or its program exited).
type termMsg struct {
	t      *Terminal
	exited bool
}

// waitTerminal waits for the terminal to change and reports it, at most once a frame: a
// program that prints fast costs one View per frame, not one per write.
func waitTerminal(t *Terminal, last time.Time) tea.Cmd {
	return func() tea.Msg {
		<-t.Changed()
		if d := frameTime - time.Since(last); d > 0 {
			time.Sleep(d)
		}
		return termMsg{t: t, exited: t.Done()}
	}
}

func (m *model) attach(req AttachRequest) tea.Cmd {
	agent := req.Agent
	if m.term != nil && !m.term.Done() {
		m.fail(fmt.Errorf("%s is still running in the terminal; t returns to it", m.term.Name()))
		return nil
	}
	m.closeTerminal()
	if m.eng == nil {
		m.fail(errReadOnly)
		return nil
	}
	eng, w, h := m.eng, max(m.scr.body.W-2, 2), max(m.scr.body.H-2, 1)
	return func() tea.Msg {
		cmd, err := eng.Attach(req)
		if err != nil {
			return termStartedMsg{err: fmt.Errorf("attach %s: %v", agent, err)}
		}
		t, err := StartTerminal(agent, cmd, w, h)
		return termStartedMsg{t: t, err: err}
	}
}

// closeTerminal hangs up the terminal's program, if any.
func (m *model) closeTerminal() {
	if m.term == nil {
		return
	}
	if err := m.term.Close(); err != nil {
		m.log.Printf("terminal %s: %v", m.term.Name(), err)
	}
	m.term = nil
}

// drawTerminal fills the body with the terminal pane; its title names the way back.
func (m *model) drawTerminal(c *canvas) {
	r := m.scr.body
	title := m.term.Name() + " · attached · ctrl+] back to tare"
	if m.term.Done() {
		title = m.term.Name() + " · exited · esc to close"
	}
	c.put(r, m.env.st.box(title, m.term.view(m.env.st, true), r.W, r.H, true))
}
