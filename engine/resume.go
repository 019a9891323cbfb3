package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/run"
)

// ResumeOptions says which run to finish.
type ResumeOptions struct {
	Dir    string
	Config *config.Config
	Bus    *journal.Bus
	// Retry names finished tails to run again (a failed tail retried from the app or with
	// tare resume --retry); their earlier attempts are kept beside them. The rate still counts
	// each tail's first attempt that counts (journal.TailState.Counted): a retry replaces
	// only an attempt left out, never a failure, over budget or a kill counted as failed.
	Retry []string
}

// Resume finishes a run that a crash (or a kill) interrupted (a judge-noise run: see
// resumeJudgeNoise): finished tails are kept as the journal has them, a tail whose result was written but not journaled is taken from its
// result.json, a tail that was running is rerun (its folder kept beside it) and the journal
// says so, and the tails never started are run. Then the report is written.
func Resume(ctx context.Context, o ResumeOptions) (string, error) {
	rec, err := run.ReadRecipe(o.Dir)
	if err != nil {
		return "", err
	}
	if rec.Kind != "calibrate" && rec.Kind != "record" && rec.Kind != "swap" && rec.Kind != "judge-noise" {
		return "", fmt.Errorf("%s: tare resume finishes calibrate, record, cliff, swap and judge-noise runs; this is a %s run", o.Dir, rec.Kind)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, journal.JournalFile)); err != nil {
		return "", fmt.Errorf("%s: not a tare run (no %s); fix: give the run directory tare calibrate, record, cliff, swap or judge-noise made", o.Dir, journal.JournalFile)
	}
	if rec.Kind == "judge-noise" {
		return resumeJudgeNoise(ctx, o, rec)
	}
	if err := checkPreflight(rec.Check, false, rec.CheckRoom, filepath.Join(o.Dir, run.RecipeFile)); err != nil {
		return "", err
	}
	if rec.Kind == "swap" {
		return resumeSwap(ctx, o, rec)
	}
	if rec.Kind == "record" {
		if set, ok := cliffOf(o.Dir, rec); ok {
			return resumeCliff(ctx, o, rec, set)
		}
		return resumeRecord(ctx, o, rec)
	}
	r, err := run.Open(o.Dir, o.Bus)
	if err != nil {
		return "", err
	}
	defer r.Close()
	st := r.Snapshot()
	for _, id := range o.Retry {
		t := st.Tails[id]
		if t == nil || t.Status == journal.StatusRunning {
			return "", fmt.Errorf("--retry %s: %s has no finished tail of that id", id, o.Dir)
		}
	}
	if st.Finished && st.Error == "" && len(o.Retry) == 0 {
		return st.Report, nil
	}
	store, start, installs, err := resumeParts(o.Dir, rec, o.Config)
	if err != nil {
		return "", err
	}
	var rerun, attached []string
	for _, spec := range calibrateTails(rec, start) {
		t := st.Tails[spec.ID]
		if t == nil || t.Status != journal.StatusRunning {
			continue
		}
		if res, ok := readResult(filepath.Join(o.Dir, "tails", spec.ID)); ok {
			// The tail finished and wrote its result; only its journal line was lost.
			if err := r.Emit(journal.Event{TailFinished: res.Finished()}); err != nil {
				return "", err
			}
			continue
		}
		if _, ok := attachedJob(o.Dir, rec, o.Config, t); ok {
			// Its job outlived tare: followed to its end, not run again.
			attached = append(attached, spec.ID)
			continue
		}
		rerun = append(rerun, spec.ID)
	}
	if err := r.Emit(journal.Event{Resumed: &journal.Resumed{Rerun: append(rerun, o.Retry...), Reattached: attached}}); err != nil {
		return "", err
	}
	return runCalibrate(ctx, r, rec, store, start, installs, o.Config, o.Retry...)
}

// resumeRecord finishes a recorded run a crash interrupted. A tail that was running (a
// killed tare tail) is journaled as an error that says to run it again, or from its
// result.json if it wrote one. A recording that finished has its report written if the
// crash came before it; one that did not (or ended in an error) is recorded again from the
// run's start capsule, the interrupted attempt kept as original.attempt-N, and the journal
// says so.
func resumeRecord(ctx context.Context, o ResumeOptions, rec *run.Recipe) (string, error) {
	if len(o.Retry) > 0 {
		return "", fmt.Errorf("--retry: %s is a recorded run; continue it again with tare tail %s --step N", o.Dir, o.Dir)
	}
	if len(rec.Sides) != 1 {
		return "", fmt.Errorf("%s: recipe.json names %d sides, a recorded run has one; the run cannot be finished", o.Dir, len(rec.Sides))
	}
	r, err := run.Open(o.Dir, o.Bus)
	if err != nil {
		return "", err
	}
	defer r.Close()
	st := r.Snapshot()
	for id, t := range st.Tails {
		if t.Status != journal.StatusRunning {
			continue
		}
		res, ok := readResult(filepath.Join(o.Dir, "tails", id))
		if !ok {
			res = journal.TailResult{ID: id, Side: t.Side, Step: t.Step, How: t.How, Attempt: t.Attempt.N, Status: journal.StatusNoVerdict,
				Reason: journal.ReasonInterrupted, AgentExit: "interrupted", Check: fmt.Sprintf("tare stopped during this tail; run it again with tare tail %s --step %d", o.Dir, t.Step)}
		}
		if err := r.Emit(journal.Event{TailFinished: res.Finished()}); err != nil {
			return "", err
		}
	}
	if recording, err := journal.ReadRecording(o.Dir); err == nil {
		if st.Finished && st.Error == "" {
			return st.Report, nil
		}
		return finishRecord(r, rec, recording)
	}

	store, start, installs, err := resumeParts(o.Dir, rec, o.Config)
	if err != nil {
		return "", err
	}
	if _, err := setAside(filepath.Join(o.Dir, "original")); err != nil {
		return "", err
	}
	if err := r.Emit(journal.Event{Resumed: &journal.Resumed{Rerun: []string{"original"}}}); err != nil {
		return "", err
	}
	env, stop, err := newTailEnv(r, store, rec, installs, o.Config)
	if err != nil {
		return "", err
	}
	defer stop()
	if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: "original"}}); err != nil {
		return "", err
	}
	recording, err := record(ctx, env, rec.Sides[0], rec.Prompt, start)
	if err != nil {
		_ = r.Emit(journal.Event{RunFinished: &journal.RunFinished{Error: err.Error()}})
		return "", err
	}
	return finishRecord(r, rec, recording)
}

// resumeParts opens what finishing a run needs: its store, its start capsule and the
// agents of its sides.
func resumeParts(dir string, rec *run.Recipe, cfg *config.Config) (*capsule.Store, capsule.Capsule, map[string]agent.Install, error) {
	store, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		return nil, capsule.Capsule{}, nil, err
	}
	start, err := startCapsule(store)
	if err != nil {
		return nil, capsule.Capsule{}, nil, err
	}
	installs, err := findInstalls(rec.Sides, cfg, rec.Project)
	return store, start, installs, err
}

// startCapsule is the run's first capsule: the project before the run.
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

func readResult(dir string) (journal.TailResult, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return journal.TailResult{}, false
	}
	var res journal.TailResult
	if json.Unmarshal(data, &res) != nil || res.ID == "" {
		return journal.TailResult{}, false
	}
	res.Status, res.Reason = journal.NormalizeOutcome(res.Status, res.Reason, res.AgentExit+"; "+res.Check)
	return res, true
}
