package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"tare/engine/journal"
)

// killFile is the request to stop a tail: any process (the app, over ssh too) may write it;
// the process that runs the tail sees it and stops that tail alone.
func killFile(runDir, tailID string) string {
	return filepath.Join(runDir, "control", "kill-"+tailID)
}

// RequestKill asks the process running runDir to stop one tail. The tail is journaled as
// ended with no verdict, reason killed, and the detail "killed by the operator after N calls".
func RequestKill(runDir, tailID string) error {
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
	return writeRunFile(killFile(runDir, tailID), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"))
}

// watchKill cancels a tail's context when a kill request for it appears. It returns a
// function that stops watching.
func watchKill(ctx context.Context, runDir, tailID string, cancel context.CancelCauseFunc) func() {
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
					cancel(journal.ErrKilled)
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
