package agent

import (
	"strings"
	"testing"
)

func TestRenderHandoff(t *testing.T) {
	events := []Event{
		{Kind: EventTask, Text: "Make the tests pass."},
		{Kind: EventAssistant, Text: "Looking first."},
		{Kind: EventToolCall, Tool: "Bash", ID: "a", Text: "go test ./..."},
		{Kind: EventToolCall, Tool: "Read", ID: "b", Text: "x.go"},
		{Kind: EventToolResult, Tool: "Read", ID: "b", Text: "package x"},
		{Kind: EventToolResult, Tool: "Bash", ID: "a", Text: "FAIL x 0.1s", IsError: true},
		{Kind: EventUser, Text: "Continue."},
		{Kind: EventToolCall, Tool: "Write", ID: "c", Text: "x.go"},
		{Kind: EventToolResult, Tool: "Write", ID: "c"},
	}
	long := strings.Repeat("line\n", 30)
	tests := []struct {
		name          string
		task          string
		events        []Event
		workspaceOnly bool
		want          string
	}{
		{"steps", "Make the tests pass.", events, false, `Your task:

Make the tests pass.

Another session already worked on this task in this workspace (/work). What it did, in order (arguments and outputs clipped):

Said: Looking first.
1. Bash: go test ./...
   → error: FAIL x 0.1s
2. Read: x.go
   → package x
The operator said: Continue.
3. Write: x.go
   → (no output)

The workspace is as those steps left it. Continue the task from there: do not redo what is done (check the files when unsure), and finish the task.
`},
		{"workspace only", "  Make the tests pass.\n", events, true, `Your task:

Make the tests pass.

Another session already worked on this task in this workspace (/work); its files are as that session left them.

Continue the task from the current state of the workspace: look at what is there before you change it, do not start over, and finish the task.
`},
		{"step 0", "Make the tests pass.", events[:2], false, `Your task:

Make the tests pass.

Nothing has been done toward it yet: no tool has run.

Start the task in the workspace (/work).
`},
		{"clipped", "T", []Event{
			{Kind: EventToolCall, Tool: "Bash", ID: "a", Text: "cat <<EOF\n" + long + "EOF"},
			{Kind: EventToolResult, Tool: "Bash", ID: "a", Text: long},
			{Kind: EventToolCall, Tool: "Bash", ID: "b", Text: "sleep 999"},
		}, false, `Your task:

T

Another session already worked on this task in this workspace (/work). What it did, in order (arguments and outputs clipped):

1. Bash: cat <<EOF
   line
   line
   line
   line
   line
   line
   line
   … (24 more lines)
   → line
     line
     line
     line
     line
     line
     line
     line
     … (22 more lines)
2. Bash: sleep 999
   → (no result)

The workspace is as those steps left it. Continue the task from there: do not redo what is done (check the files when unsure), and finish the task.
`},
	}
	for _, tt := range tests {
		if got := RenderHandoff(tt.task, tt.events, tt.workspaceOnly); got != tt.want {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", tt.name, got, tt.want)
		}
	}
}

// A handoff from a real trail, cut at a step, holds that step's calls and none after it.
func TestRenderHandoffFromTrail(t *testing.T) {
	tr, err := Codex{}.Trail(readTestdata(t, "codex_trail_session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := RenderHandoff(tr.Task, tr.Events[:tr.Steps[2].Events], false)
	for _, want := range []string{"Do the five steps.", "1. exec_command: ls", "3. exec_command: echo one > one.txt", "4. exec_command: echo two > two.txt"} {
		if !strings.Contains(got, want) {
			t.Errorf("handoff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "four") || strings.Contains(got, "failing") {
		t.Errorf("handoff shows steps after the cut:\n%s", got)
	}
}
