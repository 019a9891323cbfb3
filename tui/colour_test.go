package tui

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// NO_COLOR keeps the selection in reverse video (no colour codes at all); TERM=xterm-direct,
// a 24-bit colour terminal that says so by its name only, gets colour.
func TestColourFollowsTheTerminal(t *testing.T) {
	stateDir, _, _ := demoState(t)
	draw := func(term string, noColor bool) string {
		// The renderer as the app makes it: the profile from TERM (as termenv reads it).
		t.Setenv("TERM", term)
		t.Setenv("COLORTERM", "")
		if noColor {
			t.Setenv("NO_COLOR", "1")
		} else {
			t.Setenv("NO_COLOR", "")
		}
		r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithTTY(true), termenv.WithUnsafe())
		m := newModel(modelConfig{engine: newStub(), styles: sessionStyles(r, term, noColor), now: func() time.Time { return t0 },
			agents: []string{"claude"}, probes: true, project: demoProject})
		tm := &testModel{model: m, t: t, w: newWatcher(stateDir, nil, nil, nil), st: newStub()}
		tm.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
		tm.pollNow()
		return tm.View()
	}
	v := draw("xterm-256color", true)

	if !strings.Contains(v, "\x1b[7m") {
		t.Errorf("NO_COLOR: the selection is not in reverse video")
	}
	if colourSGR.MatchString(v) {
		t.Errorf("NO_COLOR: colour codes drawn")
	}
	if v := draw("xterm-direct", false); !strings.Contains(v, "\x1b[38;2;") {
		t.Errorf("xterm-direct: no 24-bit colour drawn")
	}
}

// colourSGR is a select graphic rendition that sets a colour.
var colourSGR = regexp.MustCompile(`\x1b\[(?:[0-9]+;)*(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])[;m]`)
