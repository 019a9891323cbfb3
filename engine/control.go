package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"tare/capsule"
)

// ProbesDir is where the last reading of each agent, project and room is kept, below the
// state directory.
const ProbesDir = "probes"

// StoreReading keeps r as the last reading of its agent for its project and room
// (ReadingPath), where the app's probes pane finds it.
func StoreReading(stateDir string, r *Reading) error {
	data, err := json.MarshalIndent(struct {
		*Reading
		Verdict string `json:"verdict"`
		Zero    bool   `json:"zero"`
	}{r, r.Verdict(), r.Zero()}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(stateDir, ProbesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return capsule.WriteFileAtomic(ReadingPath(stateDir, r.Agent, r.Project, r.Room), append(data, '\n'), 0o644)
}

// killFile is the request to stop a tail: any process (the app, over ssh too) may write it;
// the process that runs the tail sees it and stops that tail alone.
func killFile(runDir, tailID string) string {
	return filepath.Join(runDir, "control", "kill-"+tailID)
}

// RequestKill asks the process running runDir to stop one tail. The tail is journaled as
// ended with no verdict, reason killed, and the detail "killed by the operator after N calls".
func RequestKill(runDir, tailID string) error {
	st, err := ReadJournalOutline(runDir) // the tail's status: no tool call needed
	if err != nil {
		return err
	}
	t := Replay(filepath.Base(runDir), st).Tails[tailID]
	if t == nil || t.Status != StatusRunning {
		return fmt.Errorf("tail %s of %s is not running", tailID, runDir)
	}
	if !Alive(runDir) {
		return fmt.Errorf("%s has no live process (it crashed?); fix: tare resume %s", runDir, runDir)
	}
	if err := os.MkdirAll(filepath.Dir(killFile(runDir, tailID)), 0o755); err != nil {
		return err
	}
	return capsule.WriteFileAtomic(killFile(runDir, tailID), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
}

// errKilled is the cause of a tail's context when the operator killed it.
var errKilled = errors.New("killed by the operator")

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
					cancel(errKilled)
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// Alive reports whether a process holds runDir's lock: the run is live, not crashed.
func Alive(runDir string) bool {
	f, err := os.Open(filepath.Join(runDir, "lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
