package tui

import (
	"strings"
	"testing"

	"tare/engine"
)

// TestViewsShowAgentEscapesEscaped: a journal written raw (by a tare before escaping, or by
// hand) whose tool call and check detail hold OSC 52 and ESC[2J: the run view and the tail
// view show them escaped, and the drawn screen (ASCII profile: no styling escapes of its own)
// holds no ESC or BEL.
func TestViewsShowAgentEscapesEscaped(t *testing.T) {
	stateDir := t.TempDir()
	raw := "echo \x1b]52;c;Y3VybA==\x07 \x1b[2J"
	c := openRun(t, stateDir, "calibrate", "calibrate-esc")
	c.at(-min_(2), engine.Event{RunStarted: &engine.RunStarted{Kind: "calibrate", Project: "/src/x", Prompt: "p", Budget: 1, Jobs: 1,
		Sides: []engine.Side{{Key: "a", Agent: "claude"}}}})
	c.at(-min_(2), engine.Event{TailStarted: &engine.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	c.at(-min_(1), engine.Event{ToolCall: &engine.ToolCall{Tail: "a-0", Tool: "Bash", Summary: raw, Calls: 1}})
	c.at(-sec(30), engine.Event{TailFinished: &engine.TailFinished{ID: "a-0", Status: "failed", Detail: "check exit 1: " + raw, Calls: 1}})
	tm := newTestModel(t, stateDir, newStub(), 160, 40)
	selectRow(t, tm.home.runs.t, c.dir)
	tm.key("enter")
	check := func(view string) {
		t.Helper()
		if strings.ContainsAny(view, "\x1b\x07") {
			t.Errorf("the view holds a raw ESC or BEL:\n%q", view)
		}
		if !strings.Contains(view, `\x1b]52;c;`) {
			t.Errorf("the view does not show the escape escaped:\n%s", view)
		}
	}
	check(tm.View())
	selectRow(t, tm.run.tails.t, "a-0")
	tm.key("enter")
	if tm.page() != tailPage {
		t.Fatalf("enter on the tail: page %v", tm.pages)
	}
	check(tm.View())
}
