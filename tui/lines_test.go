package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

func TestLine(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 4, 5, 0, time.Local)
	score, two := 7, 2
	for _, tc := range []struct {
		e    journal.Event
		want string
	}{
		{journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 10, Jobs: 2, Sides: []journal.Side{{Key: "a", Agent: "claude", Args: []string{"--model", "haiku"}}, {Key: "b", Agent: "codex"}}}},
			"12:04:05 r calibrate started: 10 tails, 2 at a time, sides a=claude --model haiku, b=codex"},
		{journal.Event{TailStarted: &journal.TailStarted{ID: "s3-1", Side: "a", Step: 3, How: "native", Attempt: 1}},
			"12:04:05 r tail s3-1 started (side a, native from step 3, attempt 2)"},
		{journal.Event{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Summary: "make test", Seconds: 2.25, Calls: 4}},
			"12:04:05 r tail a-0 #4 Bash make test (2.2s)"},
		{journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: "failed", Detail: "make test: 2 failures\nmore", Seconds: 42, Calls: 4, Score: &score, Usage: journal.Usage{Cost: 0.125}}},
			"12:04:05 r tail a-0 failed 42s 4 calls $0.12 — make test: 2 failures more"},
		{journal.Event{TailFinished: &journal.TailFinished{ID: "b-0", Status: journal.StatusNoVerdict, Reason: journal.ReasonQuota,
			Detail: "ended by the provider (quota): Quota exceeded.; not checked", Seconds: 3}},
			"12:04:05 r tail b-0 no verdict (quota) 3s 0 calls $0.00 — ended by the provider (quota): Quota exceeded.; not checked"},
		{journal.Event{TailFinished: &journal.TailFinished{ID: "a-1", Status: journal.StatusNoVerdict, Reason: journal.ReasonKilled, Kill: journal.KillFailed,
			Detail: "killed by the operator after 3 calls; not checked", Seconds: 9, Calls: 3}},
			"12:04:05 r tail a-1 failed, no verdict (killed, counted as failed) 9s 3 calls $0.00 — killed by the operator after 3 calls; not checked"},
		{journal.Event{TailFinished: &journal.TailFinished{ID: "a-2", Status: journal.StatusNoVerdict, Reason: journal.ReasonKilled,
			Detail: "killed by the operator after 3 calls; not checked", Seconds: 9, Calls: 3}},
			"12:04:05 r tail a-2 no verdict (killed, not asked) 9s 3 calls $0.00 — killed by the operator after 3 calls; not checked"},
		{journal.Event{TailStarted: &journal.TailStarted{ID: "h-3", Side: "b", Step: 3, How: "handoff", CapsuleFrom: &two}},
			"12:04:05 r tail h-3 started (side b, handoff from step 3, which has no capsule: starts from step 2's)"},
		{journal.Event{Resumed: &journal.Resumed{Rerun: []string{"a-1", "b-0"}}}, "12:04:05 r resumed; rerunning a-1, b-0"},
		{journal.Event{RunFinished: &journal.RunFinished{Error: "budget spent"}}, "12:04:05 r finished with an error: budget spent"},
	} {
		tc.e.Time, tc.e.Run = at, "r"
		if got := Line(tc.e); got != tc.want {
			t.Errorf("Line(%s)\n got %q\nwant %q", tc.e.Kind(), got, tc.want)
		}
	}
}

// Without a terminal, LiveRun prints one line per event of the journal as it is written,
// and returns when the run finishes.
func TestLiveRunPrintsLinesWithoutATerminal(t *testing.T) {
	stateDir := t.TempDir()
	r := openRun(t, stateDir, "calibrate", "plain")
	outFile, err := os.Create(filepath.Join(t.TempDir(), "lines"))
	if err != nil {
		t.Fatal(err)
	}
	bus := journal.NewBus()
	done := make(chan error, 1)
	go func() { done <- LiveRun(context.Background(), LiveOptions{Dir: r.dir, Out: outFile, Bus: bus}) }()
	for _, e := range []journal.Event{
		{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 1, Jobs: 1, Sides: []journal.Side{{Key: "a", Agent: "claude"}}}},
		{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}},
		{TailFinished: &journal.TailFinished{ID: "a-0", Status: "passed", Passed: true, Calls: 1}},
		{RunFinished: &journal.RunFinished{Report: "1/1"}},
	} {
		r.j.Append(&e)
		bus.Publish(e)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LiveRun did not return after the run finished")
	}
	outFile.Close()
	data, _ := os.ReadFile(outFile.Name())
	got := string(data)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], "plain calibrate started: 1 tails, 1 at a time, sides a=claude") ||
		!strings.HasSuffix(lines[2], "tail a-0 passed 0s 1 calls $0.00") || !strings.HasSuffix(lines[3], "plain finished") {
		t.Fatalf("lines:\n%s", got)
	}
}

func TestKeyBytes(t *testing.T) {
	for _, tc := range []struct {
		k         tea.KeyMsg
		appCursor bool
		want      string
	}{
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("é")}, false, "é"},
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x"), Alt: true}, false, "\x1bx"},
		{tea.KeyMsg{Type: tea.KeyEnter}, false, "\r"},
		{tea.KeyMsg{Type: tea.KeyBackspace}, false, "\x7f"},
		{tea.KeyMsg{Type: tea.KeyCtrlC}, false, "\x03"},
		{tea.KeyMsg{Type: tea.KeyTab}, false, "\t"},
		{tea.KeyMsg{Type: tea.KeyEsc}, false, "\x1b"},
		{tea.KeyMsg{Type: tea.KeySpace}, false, " "},
		{tea.KeyMsg{Type: tea.KeyUp}, false, "\x1b[A"},
		{tea.KeyMsg{Type: tea.KeyUp}, true, "\x1bOA"},
		{tea.KeyMsg{Type: tea.KeyShiftTab}, false, "\x1b[Z"},
		{tea.KeyMsg{Type: tea.KeyF5}, false, "\x1b[15~"},
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("pasted"), Paste: true}, false, "pasted"},
	} {
		if got := string(keyBytes(tc.k, tc.appCursor, false)); got != tc.want {
			t.Errorf("%v (app cursor %v): %q, want %q", tc.k, tc.appCursor, got, tc.want)
		}
	}
	if got := string(keyBytes(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("p"), Paste: true}, false, true)); got != "\x1b[200~p\x1b[201~" {
		t.Errorf("bracketed paste: %q", got)
	}
}
