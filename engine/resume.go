package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"tare/capsule"
	"tare/config"
)

// ResumeOptions says which run to finish.
type ResumeOptions struct {
	Dir    string
	Config *config.Config
	Bus    *Bus
	// Retry names finished tails to run again (a failed tail retried from the app or with
	// tare resume --retry); their earlier attempts are kept beside them.
	Retry []string
}

// Resume finishes a run that a crash (or a kill) interrupted: finished tails are kept as
// the journal has them, a tail whose result was written but not journaled is taken from its
// result.json, a tail that was running is rerun (its folder kept beside it) and the journal
// says so, and the tails never started are run. Then the report is written.
func Resume(ctx context.Context, o ResumeOptions) (string, error) {
	rec, err := ReadRecipe(o.Dir)
	if err != nil {
		return "", err
	}
	if rec.Kind != "calibrate" {
		return "", fmt.Errorf("%s: tare resume finishes calibrate runs; this is a %s run", o.Dir, rec.Kind)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, JournalFile)); err != nil {
		return "", fmt.Errorf("%s: not a tare run (no %s); fix: give a directory that tare calibrate made", o.Dir, JournalFile)
	}
	r, err := openRun(o.Dir, o.Bus)
	if err != nil {
		return "", err
	}
	defer r.close()
	st := r.snapshot()
	for _, id := range o.Retry {
		t := st.Tails[id]
		if t == nil || t.Status == "running" {
			return "", fmt.Errorf("--retry %s: %s has no finished tail of that id", id, o.Dir)
		}
	}
	if st.Finished && st.Error == "" && len(o.Retry) == 0 {
		return st.Report, nil
	}
	store, err := capsule.Open(filepath.Join(o.Dir, "store"))
	if err != nil {
		return "", err
	}
	start, err := startCapsule(store)
	if err != nil {
		return "", err
	}
	installs, err := findInstalls(rec.Sides, o.Config)
	if err != nil {
		return "", err
	}
	var rerun []string
	for _, spec := range calibrateTails(rec, start) {
		t := st.Tails[spec.ID]
		if t == nil || t.Status != "running" {
			continue
		}
		if res, ok := readResult(filepath.Join(o.Dir, "tails", spec.ID)); ok {
			// The tail finished and wrote its result; only its journal line was lost.
			if err := r.emit(Event{TailFinished: res.finished()}); err != nil {
				return "", err
			}
			continue
		}
		rerun = append(rerun, spec.ID)
	}
	if err := r.emit(Event{Resumed: &Resumed{Rerun: append(rerun, o.Retry...)}}); err != nil {
		return "", err
	}
	return runCalibrate(ctx, r, rec, store, start, installs, o.Config, o.Retry...)
}

// startCapsule is a calibrate run's one capsule: the project before the run.
func startCapsule(store *capsule.Store) (capsule.Capsule, error) {
	list, err := store.List()
	if err != nil {
		return capsule.Capsule{}, err
	}
	for _, c := range list {
		if c.ID == "start" {
			return c, nil
		}
	}
	return capsule.Capsule{}, fmt.Errorf("%s: the run's store has no start capsule; the run cannot be finished", store.Dir())
}

func readResult(dir string) (TailResult, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return TailResult{}, false
	}
	var res TailResult
	if json.Unmarshal(data, &res) != nil || res.ID == "" {
		return TailResult{}, false
	}
	return res, true
}
