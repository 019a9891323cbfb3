package tui

import (
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// sessionStyles are the styles of one terminal: of type term, for a user who may have set
// NO_COLOR. termenv reads a "-direct" terminfo (xterm-direct: 24-bit colour, said by TERM
// alone) as having no colour at all, and NO_COLOR as no attributes at all; neither is so.
func sessionStyles(r *lipgloss.Renderer, term string, noColor bool) styles {
	switch {
	case noColor:
		r.SetColorProfile(termenv.Ascii) // an ssh session's renderer does not read NO_COLOR
	case strings.HasSuffix(term, "-direct"):
		r.SetColorProfile(termenv.TrueColor)
	}
	s := newStyles(r)
	// NO_COLOR asks for no colour; reverse video is not colour, and without it the selected
	// row is a lone ">" in a column.
	s.reverseOnly = noColor && term != "" && term != "dumb"
	return s
}

// reverseSGR is reverse video on and off, as ECMA-48 has them: the one attribute NO_COLOR
// keeps.
const reverseOn, reverseOff = "\x1b[7m", "\x1b[27m"

// selectedRow draws a selected row (reverse video).
func (s styles) selectedRow(text string) string {
	if s.reverseOnly {
		return reverseOn + text + reverseOff
	}
	return s.selected.Render(text)
}

// localStyles are the styles of this process's own terminal, written to through out.
func localStyles(out io.Writer) styles {
	return sessionStyles(lipgloss.NewRenderer(out), os.Getenv("TERM"), os.Getenv("NO_COLOR") != "")
}
