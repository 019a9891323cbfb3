package tui

import tea "github.com/charmbracelet/bubbletea"

// confirm is a yes/no question that guards an action (kill a tail, quit with a live session).
type confirm struct {
	question string
	// yes is what runs on y.
	yes tea.Cmd
	// no is the footer's note when the answer is no.
	no string
}

func (c *confirm) view(s styles) string {
	return c.question + "\n\n" + s.tone(accent, "y") + " yes    " + s.tone(accent, "n") + " no"
}
