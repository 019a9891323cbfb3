package tui

import (
	"strings"
	"testing"

	"tare/engine/journal"
)

// TestViewsShowAgentEscapesEscaped: a journal written raw (by a tare before escaping, or by
// hand) whose tool call and check detail hold OSC 52 and ESC[2J: the run view and the tail
// view show them escaped, and the drawn screen (ASCII profile: no styling escapes of its own)
// holds no ESC or BEL.
func TestViewsShowAgentEscapesEscaped(t *testing.T) {
	stateDir := t.TempDir()
	raw := "echo \x1b]52;c;Y3VybA==\x07 \x1b[2J"
	c := openRun(t, stateDir, "calibrate", "calibrate-esc")
	c.at(-min_(2), journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: "/src/x", Prompt: "p", Budget: 1, Jobs: 1,
		Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
	c.at(-min_(2), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	c.at(-min_(1), journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Summary: raw, Calls: 1}})
	c.at(-sec(30), journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: "failed", Detail: "check exit 1: " + raw, Calls: 1}})
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

// TestCostsSayUnknownAndSimulated: a tail whose model has no price shows "?" for its cost,
// never $0.00, the run's total says "$0.50?", and a run on tare's model server says its dollars
// are simulated.
func TestCostsSayUnknownAndSimulated(t *testing.T) {
	stateDir := t.TempDir()
	c := openRun(t, stateDir, "calibrate", "calibrate-sim")
	c.at(-min_(2), journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: "/src/x", Prompt: "p", Budget: 2, Jobs: 1, Simulated: true,
		Sides: []journal.Side{{Key: "a", Agent: "pi"}, {Key: "b", Agent: "codex"}}}})
	c.at(-min_(2), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	c.at(-min_(1), journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: "passed", Passed: true, Calls: 1,
		Usage: journal.Usage{Input: 5000, Output: 300, Model: "tare-model", Unpriced: []string{"tare-model"}}}})
	c.at(-min_(1), journal.Event{TailStarted: &journal.TailStarted{ID: "b-0", Side: "b", How: "fresh"}})
	c.at(-sec(30), journal.Event{TailFinished: &journal.TailFinished{ID: "b-0", Status: "passed", Passed: true, Calls: 1,
		Usage: journal.Usage{Input: 5000, Output: 300, Cost: 0.5, Model: "gpt-5.1-codex"}}})
	tm := newTestModel(t, stateDir, newStub(), 160, 40)
	if home := tm.View(); !strings.Contains(home, "$0.50?") {
		t.Errorf("the Runs pane does not say part of the cost is unknown:\n%s", home)
	}
	selectRow(t, tm.home.runs.t, c.dir)
	tm.key("enter")
	view := tm.View()
	if !strings.Contains(view, "$0.50? simulated") {
		t.Errorf("the run's header does not say its cost is partly unknown and simulated:\n%s", view)
	}
	if l := lineWith(view, "a-0"); !strings.Contains(l, " ? ") && !strings.HasSuffix(strings.TrimRight(l, " │┃"), "?") {
		t.Errorf("tail a-0's cost is not shown as unknown: %q", l)
	}
	if strings.Contains(lineWith(view, "a-0"), "$0.00") {
		t.Errorf("tail a-0's unknown cost is shown as $0.00")
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
