package tui

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	enginerun "tare/engine/run"
)

// WatchLines is tare watch without a terminal: one plain line per event of each run (Line),
// on w, until every run has its report, or has no process left to write one, or ctx ends.
// A pipe or a log gets what the app would show, with no screen codes.
func WatchLines(ctx context.Context, dirs []string, w io.Writer) error {
	followers := make([]*follower, len(dirs))
	finished := make([]bool, len(dirs))
	for i, d := range dirs {
		followers[i] = newFollower(absDir(d))
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		open := 0
		for i, f := range followers {
			// Liveness first, then the journal: a run that wrote its report and ended in
			// between has the report in what is read.
			alive := enginerun.Alive(f.dir)
			events, err := f.poll()
			if err != nil {
				return fmt.Errorf("tare watch %s: %v", dirs[i], err)
			}
			for _, e := range events {
				if e.Run == "" {
					e.Run = filepath.Base(f.dir)
				}
				fmt.Fprintln(w, Line(e))
				switch {
				case e.RunFinished != nil:
					finished[i] = true
				case e.Resumed != nil:
					finished[i] = false
				}
			}
			if finished[i] {
				continue
			}
			if !alive {
				fmt.Fprintf(w, "%s has no live process and no report (it crashed?); fix: tare resume %s\n", filepath.Base(f.dir), dirs[i])
				finished[i] = true
				continue
			}
			open++
		}
		if open == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
