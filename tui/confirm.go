package tui

import tea "github.com/charmbracelet/bubbletea"

// confirm is a yes/no question that guards an action (kill a tail).
type confirm struct {
	question string
	// yes is what runs on y.
	yes tea.Cmd
}

func (c *confirm) view(s styles) string {
	return c.question + "\n\n" + s.tone(accent, "y") + " yes    " + s.tone(accent, "n") + " no"
}
