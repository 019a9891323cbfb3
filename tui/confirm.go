package tui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// confirm is a yes/no question that guards an action (kill a tail, quit with a live session).
type confirm struct {
	question string
	// yes is what runs on y.
	yes tea.Cmd
	// no is the footer's note when the answer is no.
	no string
	// choices, when set, replace yes: each answer runs its own command (n still cancels).
	choices []choice
}

func (c *confirm) view(s styles) string {
	if len(c.choices) > 0 {
		var lines []string
		for _, ch := range c.choices {
			lines = append(lines, s.tone(accent, ch.key)+" "+ch.label)
		}
		return c.question + "\n\n" + strings.Join(lines, "\n") + "\n" + s.tone(accent, "n") + " cancel"
	}
	return c.question + "\n\n" + s.tone(accent, "y") + " yes    " + s.tone(accent, "n") + " no"
}

// choice is one answer of a question with more than yes and no: its key, what it says, and
// what runs on it.
type choice struct {
	key, label string
	cmd        tea.Cmd
}

// chosen is the choice that key k picks, if the question has choices.
func (c *confirm) chosen(k tea.KeyMsg) (choice, bool) {
	for _, ch := range c.choices {
		if k.String() == ch.key {
			return ch, true
		}
	}
	return choice{}, false
}
