package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tare/engine/journal"
)

// killFile is the request to stop a tail: any process (the app, over ssh too) may write it;
// the process that runs the tail sees it and stops that tail alone.
func killFile(runDir, tailID string) string {
	return filepath.Join(runDir, "control", "kill-"+tailID)
}

// RequestKill asks the process running runDir to stop one tail. The tail is journaled as
// ended with no verdict, reason killed, the detail "killed by the operator after N calls",
// and as: how the operator said the kill counts in the rate (journal.KillFailed, or
// journal.KillLeftOut as an infrastructure fault; journal.KillNotAsked from a path that
// could not ask, left out and said so).
func RequestKill(runDir, tailID string, as journal.KillAs) error {
	if !as.Valid() {
		return fmt.Errorf("kill %s: counts as %q; fix: %q (count as failed) or %q (leave out as an infrastructure fault)", tailID, as, journal.KillFailed, journal.KillLeftOut)
	}
	st, err := journal.ReadJournalOutline(runDir) // the tail's status: no tool call needed
	if err != nil {
		return err
	}
	t := journal.Replay(filepath.Base(runDir), st).Tails[tailID]
	if t == nil || t.Status != journal.StatusRunning {
		return fmt.Errorf("tail %s of %s is not running", tailID, runDir)
	}
	if !Alive(runDir) {
		return fmt.Errorf("%s has no live process (it crashed?); fix: tare resume %s", runDir, runDir)
	}
	if err := os.MkdirAll(filepath.Dir(killFile(runDir, tailID)), 0o755); err != nil {
		return err
	}
	text := time.Now().UTC().Format(time.RFC3339) + "\n" + killAsPrefix + string(as) + "\n"
	return WriteFile(killFile(runDir, tailID), []byte(text))
}

// killAsPrefix starts the kill request's line that carries the operator's answer.
const killAsPrefix = "counts as: "

// readKillAs is the answer a kill request carries; one that carries none (written by an
// older tare) or an unknown one was not asked.
func readKillAs(path string) journal.KillAs {
	data, err := os.ReadFile(path)
	if err != nil {
		return journal.KillNotAsked
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, killAsPrefix); ok {
			if as := journal.KillAs(v); as.Valid() {
				return as
			}
		}
	}
	return journal.KillNotAsked
}

// WatchKill cancels a tail's context when a kill request for it appears. It returns a
// function that stops watching.
func WatchKill(ctx context.Context, runDir, tailID string, cancel context.CancelCauseFunc) func() {
	path := killFile(runDir, tailID)
	_ = os.Remove(path) // a request for an earlier attempt does not kill this one
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := os.Stat(path); err == nil {
					cancel(journal.KillError{As: readKillAs(path)})
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
