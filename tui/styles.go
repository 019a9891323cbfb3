package tui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// tone is what a cell means, so tables stay free of styles and each session colours them
// with its own renderer.
type tone int

const (
	plain tone = iota
	dim
	good
	bad
	warn
	accent
)

// styles are the app's looks, built for one renderer. Over ssh each session has its own
// renderer and colour profile, so no style is a package-level value.
type styles struct {
	r *lipgloss.Renderer

	header, crumb, footer lipgloss.Style
	title, titleFocused   lipgloss.Style
	border, borderFocused lipgloss.Style
	tones                 [accent + 1]lipgloss.Style
	selected              lipgloss.Style
	colHeader             lipgloss.Style
	status, statusErr     lipgloss.Style
	cursor                lipgloss.Style
	help                  help.Styles
	ascii                 bool
	// reverseOnly draws the selection in reverse video though no colour is drawn (NO_COLOR).
	reverseOnly bool
}

func newStyles(r *lipgloss.Renderer) styles {
	c := func(light, dark string) lipgloss.AdaptiveColor {
		return lipgloss.AdaptiveColor{Light: light, Dark: dark}
	}
	s := styles{r: r}
	s.header = r.NewStyle().Bold(true)
	s.crumb = r.NewStyle().Foreground(c("#5A56E0", "#7571F9")).Bold(true)
	s.footer = r.NewStyle().Foreground(c("#7D7D7D", "#8A8A8A"))
	s.title = r.NewStyle().Foreground(c("#555555", "#BBBBBB"))
	s.titleFocused = r.NewStyle().Foreground(c("#5A56E0", "#7571F9")).Bold(true)
	s.border = r.NewStyle().Foreground(c("#C2C2C2", "#444444"))
	s.borderFocused = r.NewStyle().Foreground(c("#5A56E0", "#7571F9"))
	s.tones[plain] = r.NewStyle()
	s.tones[dim] = r.NewStyle().Foreground(c("#8A8A8A", "#777777"))
	s.tones[good] = r.NewStyle().Foreground(c("#008700", "#04B575"))
	s.tones[bad] = r.NewStyle().Foreground(c("#D70000", "#FF5F5F"))
	s.tones[warn] = r.NewStyle().Foreground(c("#AF8700", "#FFD75F"))
	s.tones[accent] = r.NewStyle().Foreground(c("#5A56E0", "#7571F9"))
	s.selected = r.NewStyle().Reverse(true)
	s.colHeader = r.NewStyle().Bold(true).Foreground(c("#555555", "#BBBBBB"))
	s.status = r.NewStyle().Foreground(c("#008700", "#04B575"))
	s.statusErr = r.NewStyle().Foreground(c("#D70000", "#FF5F5F")).Bold(true)
	s.cursor = r.NewStyle().Reverse(true)
	key := r.NewStyle().Foreground(c("#5A56E0", "#7571F9"))
	desc := r.NewStyle().Foreground(c("#7D7D7D", "#8A8A8A"))
	sep := r.NewStyle().Foreground(c("#C2C2C2", "#555555"))
	s.help = help.Styles{Ellipsis: sep, ShortKey: key, ShortDesc: desc, ShortSeparator: sep, FullKey: key, FullDesc: desc, FullSeparator: sep}
	// termenv's Ascii profile drops every attribute; the pty pane then shows plain text too.
	s.ascii = r.ColorProfile() == termenv.Ascii
	// Settle the background now, before a program reads the terminal: asked later, from the
	// first View, the terminal's answer would race Bubble Tea's own reading of its input.
	r.HasDarkBackground()
	return s
}

func (s styles) tone(t tone, text string) string { return s.tones[t].Render(text) }

// statusTone colours a tail's or run's status word.
func statusTone(status string) tone {
	switch status {
	case "passed", "done":
		return good
	case "failed", "error", "crashed":
		return bad
	case "running", "live", "probing…", "checking":
		return warn
	case "rerun", "killed", noVerdict:
		return dim
	}
	return plain
}
