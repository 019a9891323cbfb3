package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// A click focuses the pane under it and selects the row clicked; the wheel moves as the
// arrows do.
func TestMouseClickAndWheel(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 120, 30)
	runs := tm.home.runs.t
	r := tm.home.rects[1] // the Runs pane
	// Its second row is drawn under the border and the column header.
	tm.Update(tea.MouseMsg{X: r.X + 5, Y: r.Y + 3, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress})
	if tm.home.ring.focus != 1 || runs.cursor != 1 {
		t.Fatalf("click on the Runs pane's second row: focus %d, cursor %d", tm.home.ring.focus, runs.cursor)
	}
	tm.Update(tea.MouseMsg{X: r.X + 5, Y: r.Y + 3, Button: tea.MouseButtonWheelUp, Action: tea.MouseActionPress})
	if runs.cursor != 0 {
		t.Fatalf("wheel up: cursor %d", runs.cursor)
	}
	tm.Update(tea.MouseMsg{X: r.X + 5, Y: r.Y + 3, Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if runs.cursor != 1 {
		t.Fatalf("wheel down: cursor %d", runs.cursor)
	}

	tm.send(openRunMsg{cal})
	tm.send(openTailMsg{cal, "a-1"})
	c := tm.tail.callsR
	calls := tm.tail.calls
	want := calls.rows[calls.offset].key // the first row drawn
	tm.Update(tea.MouseMsg{X: c.X + 5, Y: c.Y + 2, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress})
	if got := calls.rows[calls.cursor].key; got != want {
		t.Fatalf("click on the first call drawn selects step %s, want %s", got, want)
	}
	if !strings.Contains(tm.View(), "Detail · step "+want) {
		t.Errorf("the detail did not follow the click:\n%s", tm.View())
	}
}
