package journal

import (
	"strings"
	"testing"
)

// TestPrintable: every control character but newline and tab, DEL, the C1 controls and bytes
// that are not UTF-8 come out escaped and visible; text, newlines, tabs and non-ASCII letters
// are kept; escaping twice changes nothing.
func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"go test ./...", "go test ./..."},
		{"line one\n\tline two", "line one\n\tline two"},
		{"héllo — 世界 ✓", "héllo — 世界 ✓"},
		{"\x1b]52;c;Y3VybA==\x07", `\x1b]52;c;Y3VybA==\x07`},
		{"\x1b[2J\x1b[31mred", `\x1b[2J\x1b[31mred`},
		{"ok\rFAKE", `ok\x0dFAKE`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
	} {
		got := Printable(tt.in)
		if got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := Printable(got); again != got {
			t.Errorf("Printable twice changed %q to %q", got, again)
		}
		if strings.ContainsAny(got, "\x1b\x07\r\x00\x7f\u009b\u0085") {
			t.Errorf("Printable(%q) = %q still holds a control character", tt.in, got)
		}
	}
}

// TestEventsCarryAgentTextEscaped: what a run publishes and journals has the agent's text
// escaped, and a journal written before (raw) is escaped when replayed, for every view.
func TestEventsCarryAgentTextEscaped(t *testing.T) {
	raw := "echo \x1b]52;c;Y3VybA==\x07 \x1b[2J"
	events := []Event{
		{Seq: 1, RunStarted: &RunStarted{Kind: "calibrate", Sides: []Side{{Key: "a", Agent: "claude"}}}},
		{Seq: 2, TailStarted: &TailStarted{ID: "a-0", Side: "a"}},
		{Seq: 3, ToolCall: &ToolCall{Tail: "a-0", Tool: "Bash\x1b[H", Summary: raw, Calls: 1, Usage: Usage{Unpriced: []string{"m\x07"}}}},
		{Seq: 4, TailFinished: &TailFinished{ID: "a-0", Status: "failed", Detail: "check exit 1: " + raw}},
		{Seq: 5, Phase: &Phase{Name: "cliff: the recording check exit 1: " + raw}},
		{Seq: 6, RunFinished: &RunFinished{Report: "steps\n  step 1 " + raw + "\n", Error: raw}},
	}
	st := Replay("run", events)
	tail := st.Tails["a-0"]
	for what, s := range map[string]string{"tool": tail.Tools[0].Tool, "summary": tail.Tools[0].Summary, "unpriced": tail.Tools[0].Usage.Unpriced[0],
		"detail": tail.Detail, "report": st.Report, "error": st.Error, "phase": Replay("run", events[:5]).Phase} {
		if strings.ContainsAny(s, "\x1b\x07") || !strings.Contains(s, `\x`) {
			t.Errorf("replayed %s %q is not escaped", what, s)
		}
	}
	if !strings.Contains(st.Report, "\n  step 1 ") {
		t.Errorf("the report lost its lines: %q", st.Report)
	}
	if events[2].ToolCall.Summary != raw {
		t.Error("escaping changed the caller's event in place")
	}
}
