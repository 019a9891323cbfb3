package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// The tail view's lower pane shows what the selected call did, from the agent's own stream
// (a real Claude Code stream-json): the agent's text before it, its input, its output; and
// for the tail, the agent's stderr and how the agent and the check ended. It follows the
// selection.
func TestTailDetailPane(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	dir := filepath.Join(cal, "tails", "a-1") // side a is claude
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stream, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "claude_trail_stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"stdout.jsonl": string(stream),
		"stderr.log":   "warning: the model is slow today\n",
		"result.json":  `{"id":"a-1","agent_exit":"agent exit 0","check":"check exit 1: 2 failures"}`,
		"check.log":    "--- FAIL: TestGreet\n    greet_test.go:12: got Hello, want hello\nFAIL\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tm := newTestModel(t, stateDir, newStub(), 120, 40)
	tm.send(openRunMsg{cal})
	tm.send(openTailMsg{cal, "a-1"})
	selectRow(t, tm.tail.calls, "2")
	tm.tail.showDetail()
	v := tm.View()
	for _, want := range []string{"Detail · step 2", "step 2 · Write", "before   Writing the notes.", "input", "/work/notes/a.txt",
		"output   File created successfully", "agent    agent exit 0", "check    check exit 1: 2 failures",
		"printed  --- FAIL: TestGreet", "greet_test.go:12: got Hello, want hello", "stderr   warning: the model is slow today"} {
		if !strings.Contains(v, want) {
			t.Errorf("the detail lacks %q:\n%s", want, v)
		}
	}
	tm.key("j") // step 3 of the list: the pane follows
	if v := tm.View(); !strings.Contains(v, "Detail · step 3") || !strings.Contains(v, "echo one > one.txt") {
		t.Errorf("the detail did not follow the selection:\n%s", v)
	}
}

// Keys that arrive in one read ("jjj" typed fast, a held key, keys pasted over ssh: Bubble
// Tea hands them over as one message of three runes) move the cursor as three keys do.
func TestKeysInOneReadAllAct(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	one := newTestModel(t, stateDir, newStub(), 120, 40)
	one.send(openRunMsg{cal})
	for range 3 {
		one.key("j")
	}
	three := newTestModel(t, stateDir, newStub(), 120, 40)
	three.send(openRunMsg{cal})
	start := three.run.tails.t.cursor
	three.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjj")})
	if got, want := three.run.tails.t.cursor, one.run.tails.t.cursor; got != want || got == start {
		t.Errorf("after jjj in one read the cursor is on row %d, after three j %d (it started on %d)", got, want, start)
	}
	pasted := newTestModel(t, stateDir, newStub(), 120, 40)
	pasted.send(openRunMsg{cal})
	pasted.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjj"), Paste: true})
	if got, want := pasted.run.tails.t.cursor, one.run.tails.t.cursor; got != want {
		t.Errorf("after jjj pasted the cursor is on row %d, after three j %d", got, want)
	}
}
