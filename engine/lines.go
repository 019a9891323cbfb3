package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// PrintLines writes one line per event from sub until ctx ends, then the events already
// queued: what a long command shows when its output is not a terminal. Tool calls are left
// out (the journal has them); every final event is printed.
func PrintLines(ctx context.Context, sub *Subscription, w io.Writer) {
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case e := <-sub.C():
					if line := eventLine(e); line != "" {
						fmt.Fprintln(w, line)
					}
				default:
					return
				}
			}
		case e := <-sub.C():
			if line := eventLine(e); line != "" {
				fmt.Fprintln(w, line)
			}
			if e.RunFinished != nil {
				return
			}
		}
	}
}

func eventLine(e Event) string {
	ts := e.Time.Local().Format("15:04:05")
	switch {
	case e.RunStarted != nil:
		var sides []string
		for _, s := range e.RunStarted.Sides {
			sides = append(sides, s.Key+"="+sideLabel(s))
		}
		return fmt.Sprintf("%s %s started: %s, %d tails, %d at a time", ts, e.RunStarted.Kind, strings.Join(sides, " "), e.RunStarted.Budget, e.RunStarted.Jobs)
	case e.Phase != nil:
		return fmt.Sprintf("%s phase %s", ts, e.Phase.Name)
	case e.Probed != nil:
		return fmt.Sprintf("%s probe %s: %s", ts, e.Probed.Agent, e.Probed.Verdict)
	case e.TailStarted != nil:
		t := e.TailStarted
		again := ""
		if t.Attempt > 0 {
			again = fmt.Sprintf(" (attempt %d)", t.Attempt+1)
		}
		return fmt.Sprintf("%s tail %s started: side %s, %s from step %d%s", ts, t.ID, t.Side, t.How, t.Step, again)
	case e.TailFinished != nil:
		t := e.TailFinished
		return fmt.Sprintf("%s tail %s %s in %.0fs, %d tool calls: %s", ts, t.ID, t.Status, t.Seconds, t.Calls, t.Detail)
	case e.Resumed != nil:
		if len(e.Resumed.Rerun) == 0 {
			return ts + " resumed"
		}
		return fmt.Sprintf("%s resumed: rerunning %s, which a crash interrupted", ts, strings.Join(e.Resumed.Rerun, ", "))
	case e.RunFinished != nil:
		if e.RunFinished.Error != "" {
			return ts + " run stopped: " + e.RunFinished.Error
		}
		return ts + " run finished"
	}
	return ""
}
