package engine

import (
	"context"
	"fmt"
	"time"

	"tare/agent"
	"tare/engine/browser"
	"tare/engine/journal"
	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
)

// judgeNoiseKey is the recipe's key for a judge-noise run's settings.
const judgeNoiseKey = "judge_noise"

// judgeSettings are a judge-noise run's options as recipe.json keeps them: what tare resume
// needs to finish the run as it was started.
type judgeSettings struct {
	Dirs       []string      `json:"dirs"`
	Page       string        `json:"page"`
	Rubric     Rubric        `json:"rubric"`
	Judge      string        `json:"judge"`
	Times      int           `json:"times"`
	Timeout    time.Duration `json:"timeout"`
	Threshold  *float64      `json:"threshold,omitempty"`
	Tolerance  float64       `json:"tolerance,omitempty"`
	AllowDirty bool          `json:"allow_dirty,omitempty"`
}

// resumeJudgeNoise finishes a judge-noise run a crash (or a stop) interrupted. Judgements
// the journal has finished are kept as they are, never judged again. A judgement whose
// Slurm job outlived the killed tare is re-attached: followed to its end (its model served
// again) or, when it finished meanwhile, collected. One that was running here is judged
// again as a new attempt, the interrupted one kept on the record; the journal says which
// were rerun and which re-attached. Then the report is written as judge-noise writes it.
func resumeJudgeNoise(ctx context.Context, o ResumeOptions, rec *run.Recipe) (string, error) {
	if len(o.Retry) > 0 {
		return "", fmt.Errorf("--retry: %s is a judge-noise run, whose judgements are not retried one by one; fix: judge again with tare rerun %s", o.Dir, o.Dir)
	}
	var set judgeSettings
	ok, err := rec.DecodeSettings(judgeNoiseKey, &set)
	if err != nil {
		return "", fmt.Errorf("%s: %v", o.Dir, err)
	}
	if !ok || len(set.Dirs) == 0 || set.Times < 1 {
		return "", fmt.Errorf("%s: recipe.json has no judge_noise settings (a run from an older tare), so it cannot be finished; fix: judge again with tare rerun %s", o.Dir, o.Dir)
	}
	r, err := run.Open(o.Dir, o.Bus)
	if err != nil {
		return "", err
	}
	jr := &judgeJournal{r: r}
	closed := false
	defer func() {
		if !closed {
			r.Close()
		}
	}()
	st := r.Snapshot()
	if st.Finished && st.Error == "" {
		return st.Report, nil
	}
	jo := JudgeOptions{Dirs: set.Dirs, Page: set.Page, Rubric: set.Rubric, Judge: set.Judge, Times: set.Times, Jobs: max(rec.Jobs, 1),
		Seed: rec.Seed, Out: o.Dir, Timeout: set.Timeout, Config: o.Config, AllowDirty: set.AllowDirty, Threshold: set.Threshold, Tolerance: set.Tolerance,
		Kind: rec.Kind, On: rec.On}
	jr.o = jo
	env, err := judgeResumeEnv(ctx, jo, rec)
	if err != nil {
		return "", err
	}
	kept, err := keptJudgements(o.Dir, st)
	if err != nil {
		return "", err
	}
	// Nothing is written before here: a refused resume leaves the run as it was.
	var models *modelserver.Server
	if rec.ScriptText != "" {
		script, err := modelserver.ParseScript([]byte(rec.ScriptText), rec.Script)
		if err == nil {
			models, err = judgeModels(script, rec.Seed)
		}
		if err != nil {
			return "", err
		}
		defer models.Close()
	}
	env.models, env.journal = models, jr
	if env.backend, err = judgeBackend(jo, rec.On); err != nil {
		return "", err
	}
	var attach, todo []judgeWork
	var rerun, attached []string
	for k := range set.Times {
		for i := range set.Dirs {
			id := judgementID(i, k)
			t := st.Tails[id]
			switch {
			case t == nil:
				todo = append(todo, judgeWork{page: i, k: k})
			case journal.Finished(t.Status):
				if _, ok := kept[id]; !ok {
					return "", fmt.Errorf("%s: the journal has judgement %s finished but not what it found; the run cannot be finished", o.Dir, id)
				}
			default:
				// Running, or "rerun" when an earlier resume died before starting it again.
				if job, ok := attachedJob(o.Dir, rec, o.Config, t); ok && t.Status == journal.StatusRunning {
					// Its job outlived tare: followed to its end, not submitted again.
					attach = append(attach, judgeWork{page: i, k: k, attempt: t.Attempt.N, job: job})
					attached = append(attached, id)
					continue
				}
				todo = append(todo, judgeWork{page: i, k: k, attempt: t.Attempt.N + 1})
				rerun = append(rerun, id)
			}
		}
	}
	if err := r.Emit(journal.Event{Resumed: &journal.Resumed{Rerun: rerun, Reattached: attached}}); err != nil {
		return "", err
	}
	if jr.phase("judging") != nil {
		return "", jr.err()
	}
	grid := make([][]Judgement, len(set.Dirs))
	for i := range grid {
		grid[i] = make([]Judgement, set.Times)
	}
	for id, j := range kept {
		var i, k int
		if _, err := fmt.Sscanf(id, "p%d-%d", &i, &k); err == nil && i >= 1 && i <= len(grid) && k >= 1 && k <= set.Times {
			grid[i-1][k-1] = j
		}
	}
	pool := env.pool(ctx, grid, [2]int{set.Rubric.Lo, set.Rubric.Hi})
	// The re-attached jobs are followed first: their judges may be waiting on the model,
	// which is served again only once they are.
	for _, w := range attach {
		pool.run(w, func(ctx context.Context, w judgeWork) Judgement { return env.backend.reattach(ctx, env, w) })
	}
	rep := JudgeReport{Judge: set.Judge, Rubric: set.Rubric.Path, Scale: [2]int{set.Rubric.Lo, set.Rubric.Hi}, Seed: rec.Seed,
		Out: o.Dir, Simulated: models != nil, Tolerance: set.Tolerance}
	// Every page is rendered again (its staged folder went with the killed tare) and the
	// judge's room proven clean again, for the judgements still to run and for the report.
	stages, err := env.stageAll(ctx, &rep)
	defer removeStages(stages)
	if err != nil {
		pool.wait()
		closed = true
		jr.done("", err)
		return "", err
	}
	for i := range rep.Pages {
		rep.Pages[i].Judgements = grid[i]
	}
	for _, w := range todo {
		pool.run(w, env.fresh(stages[w.page], len(rep.Pages[w.page].Blocked) > 0))
	}
	if err := pool.wait(); err != nil {
		env.backend.finish(nil)
		closed = true
		jr.done("", err)
		return "", err
	}
	closed = true
	rep, err = env.finish(ctx, rep)
	if err != nil {
		return "", err
	}
	return rep.NoiseText(set.Threshold), nil
}

// judgeResumeEnv checks what finishing the judge-noise run needs before anything is
// written: its page folders as the run judged them, the judge agent, the browser, and Slurm
// when the run was made --on slurm.
func judgeResumeEnv(ctx context.Context, o JudgeOptions, rec *run.Recipe) (*judgeEnv, error) {
	if err := ValidatePages(o.Dirs, o.Page); err != nil {
		return nil, err
	}
	for _, d := range o.Dirs {
		root, err := fingerprint(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", d, err)
		}
		if want := rec.Inputs["page "+d]; root != want {
			return nil, fmt.Errorf("%s: the page folder changed since %s judged it, so its judgements would not be of one page; fix: restore it, or judge it anew with tare rerun %s",
				d, o.Out, o.Out)
		}
	}
	words, err := splitWords(o.Judge)
	if err != nil || len(words) == 0 {
		return nil, fmt.Errorf("%s: recipe.json's judge %q is not an agent and its arguments; the run cannot be finished", o.Out, o.Judge)
	}
	a, err := agent.ByName(words[0])
	if err != nil {
		return nil, err
	}
	inst, err := room.FindAgent(a, o.Config, o.Dirs...)
	if err != nil {
		return nil, err
	}
	if _, err := browser.Find(); err != nil {
		return nil, err
	}
	if o.On == OnSlurm {
		// The jobs ran, so the nodes saw the shared directory: only the controller is asked.
		if err := SlurmPreflight(ctx, o.Config, false); err != nil {
			return nil, err
		}
	}
	return &judgeEnv{o: o, agent: a, inst: inst, args: words[1:]}, nil
}

// keptJudgements are the judgements the journal has finished, as their last journal line
// has them: kept, never judged again.
func keptJudgements(dir string, st *journal.RunState) (map[string]Judgement, error) {
	events, err := journal.ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	kept := map[string]Judgement{}
	for _, e := range events {
		f := e.TailFinished
		if f == nil || f.Judge == nil {
			continue
		}
		if t := st.Tails[f.ID]; t == nil || !journal.Finished(t.Status) {
			continue
		}
		kept[f.ID] = Judgement{Score: f.Judge.Score, Reason: f.Judge.Reason, Error: f.Judge.Error, Seconds: f.Seconds, Usage: f.Usage}
	}
	return kept, nil
}
