package tui

import (
	"os/exec"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// isQuit reports whether cmd (or a command of its batch) quits the program.
func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if isQuit(c) {
				return true
			}
		}
	}
	return false
}

// q with a program alive in the terminal pane asks first: the program dies with the app.
// n keeps both; y quits. With nothing in the pane, q quits at once.
func TestQuitAsksWhileASessionLives(t *testing.T) {
	stateDir, _, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 100, 30)
	if !isQuit(tm.key_("q")) {
		t.Fatal("q without a terminal session did not quit")
	}

	term, err := StartTerminal("pi", exec.Command("/bin/sh", "-c", "sleep 60"), 40, 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	tm.term = term
	if isQuit(tm.key_("q")) {
		t.Fatal("q quit at once with pi alive in the terminal pane")
	}
	if v := tm.View(); !strings.Contains(v, "Quit tare?") || !strings.Contains(v, "pi is still running") {
		t.Fatalf("no confirmation on screen:\n%s", v)
	}
	if isQuit(tm.key_("n")) || term.Done() {
		t.Fatal("n quit or ended the session")
	}
	if strings.Contains(tm.View(), "Quit tare?") {
		t.Fatal("the confirmation stayed after n")
	}
	tm.key_("q")
	if !isQuit(tm.key_("y")) {
		t.Fatal("y did not quit")
	}
}

// key_ gives the model one key and returns its command unrun.
func (tm *testModel) key_(s string) tea.Cmd {
	_, cmd := tm.Update(keyMsg(s))
	return cmd
}
