package tui

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"tare/engine/journal"
)

// Line is one event as a line of plain text, for a terminal-less run (a log, a pipe, CI):
// "12:04:05 calibrate-x tail a-3 passed 42s 14 calls $0.12 — check ok".
func Line(e journal.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s ", e.Time.Local().Format("15:04:05"), e.Run)
	switch {
	case e.RunStarted != nil:
		r := e.RunStarted
		sides := make([]string, len(r.Sides))
		for i, s := range r.Sides {
			sides[i] = s.Key + "=" + strings.Join(append([]string{s.Agent}, s.Args...), " ")
		}
		fmt.Fprintf(&b, "%s started: %d tails, %d at a time, sides %s", r.Kind, r.Budget, r.Jobs, strings.Join(sides, ", "))
	case e.Phase != nil:
		fmt.Fprintf(&b, "phase %s", e.Phase.Name)
	case e.TailStarted != nil:
		t := e.TailStarted
		fmt.Fprintf(&b, "tail %s started (side %s, %s", t.ID, t.Side, t.How)
		if t.How != "fresh" {
			fmt.Fprintf(&b, " from step %d", t.Step)
		}
		if t.CapsuleFrom != nil {
			fmt.Fprintf(&b, ", which has no capsule: starts from step %d's", *t.CapsuleFrom)
		}
		if t.Attempt > 0 {
			fmt.Fprintf(&b, ", attempt %d", t.Attempt+1)
		}
		b.WriteString(")")
	case e.ToolCall != nil:
		t := e.ToolCall
		fmt.Fprintf(&b, "tail %s #%d %s %s", t.Tail, t.Calls, t.Tool, t.Summary)
		if t.Seconds > 0 {
			fmt.Fprintf(&b, " (%.1fs)", t.Seconds)
		}
	case e.TailFinished != nil:
		t := e.TailFinished
		status := statusWord(t.Status)
		if t.Status == journal.StatusNoVerdict || t.Status == "error" {
			a := journal.Attempt{Status: journal.StatusNoVerdict, Reason: t.Reason, Kill: t.Kill}
			status = noVerdict + " (" + a.Label() + ")"
			if counted, ok := a.Counts(); ok {
				status = string(counted) + ", " + status // over budget, or a kill counted as failed
			}
		}
		fmt.Fprintf(&b, "tail %s %s %.0fs %d calls %s", t.ID, status, t.Seconds, t.Calls, cost(t.Usage))
		if t.Detail != "" {
			fmt.Fprintf(&b, " — %s", t.Detail)
		}
	case e.TailChecking != nil:
		fmt.Fprintf(&b, "tail %s checking (its agent ended; the check has %s)", e.TailChecking.ID, span(time.Duration(e.TailChecking.TimeoutSeconds*float64(time.Second))))
	case e.Probed != nil:
		fmt.Fprintf(&b, "probe %s: %s", e.Probed.Agent, e.Probed.Verdict)
	case e.Placed != nil:
		b.WriteString(e.Placed.Describe())
	case e.Resumed != nil:
		fmt.Fprintf(&b, "resumed; rerunning %s", orDash(strings.Join(e.Resumed.Rerun, ", ")))
	case e.RunFinished != nil:
		if e.RunFinished.Error != "" {
			fmt.Fprintf(&b, "finished with an error: %s", e.RunFinished.Error)
		} else {
			b.WriteString("finished")
		}
	default:
		b.WriteString(e.Kind())
	}
	return journal.Printable(strings.ReplaceAll(b.String(), "\n", " "))
}

// PrintLines writes Line for each event until events closes or ctx ends, then the events
// already queued. It is the one plain-line printer: of a long command whose output is not a
// terminal (events from its bus: every final event is printed, the bus never drops one; tool
// calls may be dropped under load, the journal has them all), and of the live run without
// a terminal or once the view is left (events from the run's journal). It keeps taking
// events after a failed write, so a publisher never waits on it, and returns that error.
func PrintLines(ctx context.Context, events <-chan journal.Event, w io.Writer) error {
	var werr error
	put := func(e journal.Event) {
		if _, err := fmt.Fprintln(w, Line(e)); err != nil && werr == nil {
			werr = err
		}
	}
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case e, ok := <-events:
					if !ok {
						return werr
					}
					put(e)
				default:
					return werr
				}
			}
		case e, ok := <-events:
			if !ok {
				return werr
			}
			put(e)
		}
	}
}
