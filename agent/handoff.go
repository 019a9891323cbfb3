package agent

import (
	"fmt"
	"strings"
)

// Clipping of a handoff: enough to know what happened, short enough that
// the account never crowds out the task.
const (
	handoffArg    = 300 // a call's main argument
	handoffResult = 400 // a tool's output
	handoffText   = 400 // what the model said
	handoffLines  = 8   // lines of a tool's output
)

// RenderHandoff is the prompt a fresh session of any agent is started with
// to continue a run from a capsule: the task, then (unless workspaceOnly) a
// compact account of the steps so far (events, Trail.Events cut at a step's
// Events), then the instruction to continue from the workspace as it is.
func RenderHandoff(task string, events []Event, workspaceOnly bool) string {
	var b strings.Builder
	b.WriteString("Your task:\n\n")
	b.WriteString(strings.TrimSpace(task))
	b.WriteString("\n\n")
	if workspaceOnly {
		b.WriteString("Another session already worked on this task in this workspace (" + Work + "); its files are as that session left them.\n\n")
		b.WriteString("Continue the task from the current state of the workspace: look at what is there before you change it, do not start over, and finish the task.\n")
		return b.String()
	}
	results := map[string]Event{}
	for _, e := range events {
		if e.Kind == EventToolResult && e.ID != "" {
			results[e.ID] = e
		}
	}
	var account strings.Builder
	calls := 0
	for _, e := range events {
		switch e.Kind {
		case EventToolCall:
			calls++
			fmt.Fprintf(&account, "%d. %s\n", calls, summaryOf(e))
			if r, ok := results[e.ID]; ok {
				account.WriteString(resultOf(r))
			} else {
				account.WriteString("   → (no result)\n")
			}
		case EventToolResult:
			if e.ID == "" {
				account.WriteString(resultOf(e))
			}
		case EventAssistant:
			fmt.Fprintf(&account, "Said: %s\n", indent(clipLines(e.Text, handoffText, handoffLines), "  "))
		case EventUser:
			fmt.Fprintf(&account, "The operator said: %s\n", indent(clipLines(e.Text, handoffText, handoffLines), "  "))
		}
	}
	if calls == 0 {
		b.WriteString("Nothing has been done toward it yet: no tool has run.\n\n")
		b.WriteString("Start the task in the workspace (" + Work + ").\n")
		return b.String()
	}
	b.WriteString("Another session already worked on this task in this workspace (" + Work + "). What it did, in order (arguments and outputs clipped):\n\n")
	b.WriteString(account.String())
	b.WriteString("\nThe workspace is as those steps left it. Continue the task from there: do not redo what is done (check the files when unsure), and finish the task.\n")
	return b.String()
}

// summaryOf is a call's line: its tool and main argument.
func summaryOf(e Event) string {
	arg := strings.TrimSpace(e.Text)
	if arg == "" {
		return e.Tool
	}
	return e.Tool + ": " + indent(clipLines(arg, handoffArg, handoffLines), "   ")
}

// resultOf is a result's lines below its call.
func resultOf(e Event) string {
	label := "   → "
	if e.IsError {
		label = "   → error: "
	}
	out := strings.TrimSpace(e.Text)
	if out == "" {
		if e.IsError {
			return "   → error (no output)\n"
		}
		return "   → (no output)\n"
	}
	return label + indent(clipLines(out, handoffResult, handoffLines), "     ") + "\n"
}

// clipLines clips s to n runes and max lines.
func clipLines(s string, n, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > max {
		lines = append(lines[:max], fmt.Sprintf("… (%d more lines)", len(lines)-max))
	}
	return clip(strings.Join(lines, "\n"), n)
}

// indent puts prefix before every line but the first.
func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}
