package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/engine/cliff"
	"tare/engine/journal"
	"tare/engine/run"
	"tare/engine/stats"
)

// CliffOptions is a cliff analysis: record a run (or take one recorded earlier) and find
// the step after which it was lost.
type CliffOptions struct {
	// RecordOptions records the run; with Run set only its Config, Bus, Progress, Argv,
	// Version and AllowDirty are used.
	RecordOptions
	// Run is a recording made earlier (tare record): analyse it without recording again. A
	// second analysis of the same recording counts the tails the first one spent.
	Run string
	// Tails is how many tails a round starts from one step; Budget the tails in all.
	Tails, Budget, Jobs int
	// GapBelow: a start whose upper 95% bound is below it is a model gap.
	GapBelow float64
	// On is where the tails run: local (this machine, also "") or slurm (backend.go). The
	// recording itself is always made here.
	On string
}

// cliffFile keeps the settings of a cliff analysis of an earlier recording (--run) in its
// run directory, so tare resume can finish it; a cliff that recorded its own run keeps them
// in recipe.json from the start.
const cliffFile = "cliff.json"

// cliffKey is the recipe's key for a cliff analysis's settings, when the cliff recorded its
// own run.
const cliffKey = "cliff"

// cliffSettings is cliff.json.
type cliffSettings struct {
	Tails    int     `json:"tails"`
	Budget   int     `json:"budget"`
	Jobs     int     `json:"jobs"`
	GapBelow float64 `json:"gap_below"`
	// On is the backend the tails run through ("slurm"; empty: this machine).
	On string `json:"on,omitempty"`
}

// CliffResult is what a cliff found, as --json gives it.
type CliffResult struct {
	// Result is "pinned", "not pinned", "gradual decline", "model gap", "no cliff" (no
	// difference detected: "no change" is the most probable explanation) or "passed" (the
	// recording itself passed its check: nothing to look for).
	Result string `json:"result"`
	// Step is the cliff (pinned) or the most likely one (not pinned); it is named only
	// when "one step" is the most probable explanation.
	Step int `json:"step,omitempty"`
	// Lo and Hi: for "not pinned", the central 90% of where the step is, if there is one.
	Lo int `json:"lo,omitempty"`
	Hi int `json:"hi,omitempty"`
	// Probability is the posterior probability that the rate falls at one step and that
	// step is Step, Near that it falls at one step within one step of Step (pinned means
	// Near >= 0.95): "no change" and "steady decline" count against both. StepOdds is how
	// many times better one step explains the tails than a steady decline (a Bayes factor).
	Probability float64    `json:"probability,omitempty"`
	Near        float64    `json:"within_one_step,omitempty"`
	StepOdds    float64    `json:"step_odds,omitempty"`
	Before      *StepRate  `json:"before,omitempty"`
	After       *StepRate  `json:"after,omitempty"`
	Call        string     `json:"call,omitempty"`
	Changes     []string   `json:"changes,omitempty"`
	Why         string     `json:"why"`
	Spent       int        `json:"tails"`
	Budget      int        `json:"budget"`
	NoVerdict   int        `json:"no_verdict"`
	Steps       []StepRate `json:"steps"`
	// Models is the posterior probability of each explanation of the tails, under a prior
	// of 1/3 each (cliff.PriorOneStep and the others).
	Models *CliffModels `json:"models,omitempty"`
	// Difference is Before's rate less After's, with its 95% interval. Before and After are
	// the steps just before and at the cliff (pinned, not pinned), or the start and the last
	// step (no cliff, gradual decline).
	Difference *RateDiff `json:"difference,omitempty"`
	// Cost is the recording's and the tails' together, every attempt's, on the relay's count
	// (CostUnmetered: the attempts and recordings it did not meter, priced on the agent's).
	Cost          float64 `json:"cost"`
	RecordingCost float64 `json:"recording_cost"`
	TailsCost     float64 `json:"tails_cost"`
	CostKnown     bool    `json:"cost_known"`
	CostUnmetered int     `json:"cost_unmetered,omitempty"`
	Simulated     bool    `json:"simulated,omitempty"`
	Recording     string  `json:"recording_check,omitempty"`
}

// CliffModels is the posterior over the explanations of a cliff's tails.
type CliffModels struct {
	NoChange float64 `json:"no_change"`
	OneStep  float64 `json:"one_step"`
	Decline  float64 `json:"steady_decline"`
}

// RateDiff is a difference of two pass rates with its 95% interval (stats.Diff).
type RateDiff struct {
	D  float64 `json:"d"`
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// StepRate is the tails from one step: their pass rate over verdicts, with its Wilson 95%
// interval.
type StepRate struct {
	Step      int     `json:"step"`
	Passed    int     `json:"passed"`
	Verdicts  int     `json:"verdicts"`
	Tails     int     `json:"tails"`
	Rate      float64 `json:"rate"`
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	NoVerdict int     `json:"no_verdict"`
}

func stepRate(step int, c cliff.Count) *StepRate {
	lo, hi := c.Interval()
	return &StepRate{Step: step, Passed: c.Passed, Verdicts: c.Verdicts, Tails: c.Tails, Rate: c.Rate(), Lo: lo, Hi: hi, NoVerdict: c.Tails - c.Verdicts}
}

// Cliff records the task (or opens o.Run), scores the recording, and when it failed spends
// tails from chosen steps until the step that lost it is pinned, the task is shown beyond
// the model, or the budget is spent. It returns the run directory and the result; the
// report is in report.txt.
func Cliff(ctx context.Context, o CliffOptions) (string, *CliffResult, error) {
	if err := o.Validate(); err != nil {
		return "", nil, err
	}
	set := o.settings()
	dir := o.Run
	if dir == "" {
		var err error
		o.RecordOptions.cliff = &set
		if dir, _, err = recordRun(ctx, o.RecordOptions); err != nil {
			return dir, nil, err
		}
	} else if o.Started != nil {
		o.Started(dir)
	}
	res, err := runCliff(ctx, dir, set, o.RecordOptions, o.Run != "")
	if errors.Is(err, errRecordingPassed) {
		return "", nil, fmt.Errorf("--run %s: %v; there is no cliff to find", dir, err)
	}
	return dir, res, err
}

// settings are the analysis's own settings, as its recipe keeps them.
func (o *CliffOptions) settings() cliffSettings {
	return cliffSettings{Tails: o.Tails, Budget: o.Budget, Jobs: o.Jobs, GapBelow: o.GapBelow, On: onRecipe(o.On)}
}

// Validate checks the options before anything is created or started: the search's
// settings, and either the recording to make (its project, script, check and caps) or the
// one --run names. Every bad input is one line naming the flag and the fix.
func (o *CliffOptions) Validate() error {
	set := o.settings()
	if set.Jobs < 1 {
		return fmt.Errorf("--jobs %d: run at least 1 tail at a time", set.Jobs)
	}
	if err := onPreflight(o.On, o.Config); err != nil {
		return err
	}
	// Everything but the recording's steps can be checked before anything starts.
	if err := (cliff.Config{Steps: 1, Tails: set.Tails, Budget: set.Budget, GapBelow: set.GapBelow}).Validate(); err != nil {
		return err
	}
	if o.Run != "" {
		if o.Caps.Set() {
			return fmt.Errorf("--max-cost/--max-tokens with --run %s: the caps are the recording's (tare record --max-cost); drop them here", o.Run)
		}
		if o.Env != "" {
			return fmt.Errorf("--env with --run %s: the tails run in the recording's own environment (its recipe.json keeps it); drop --env here", o.Run)
		}
		var err error
		if o.Run, err = filepath.Abs(o.Run); err != nil {
			return fmt.Errorf("--run %s: %v", o.Run, err)
		}
		return cliffRecording(o.Run)
	}
	if o.Check == "" {
		return errors.New("--check: cliff needs a check that scores a workspace (exit 0 passes)")
	}
	return o.RecordOptions.Validate()
}

// errRecordingPassed: --run names a recording whose run passed its check.
var errRecordingPassed = errors.New("the recording passed its check")

// cliffRecording says what is wrong with --run DIR, before anything is written to it.
func cliffRecording(dir string) error {
	recipe, err := run.ReadRecipe(dir)
	if err != nil {
		return err
	}
	if recipe.Kind != "record" {
		return fmt.Errorf("--run %s: cliff analyses a recording (tare record); this is a %s run", dir, recipe.Kind)
	}
	if recipe.Check == "" {
		return fmt.Errorf("--run %s: the recording has no check to score tails with; record it again with --check", dir)
	}
	rec, err := journal.ReadRecording(dir)
	if err != nil {
		return err
	}
	if len(rec.Steps) == 0 {
		return fmt.Errorf("--run %s: the recording made no tool calls, so it has no step to be lost at", dir)
	}
	return nil
}

// cliffPrefix names a cliff's tails: cliff-<step>-<n>.
const cliffPrefix = "cliff-"

// runCliff is the analysis on a recording's run directory: it can start over after a crash
// (tare resume), since every decision is made from the tails the journal holds.
func runCliff(ctx context.Context, dir string, set cliffSettings, o RecordOptions, fromRun bool) (*CliffResult, error) {
	recipe, err := run.ReadRecipe(dir)
	if err != nil {
		return nil, err
	}
	recording, err := journal.ReadRecording(dir)
	if err != nil {
		return nil, err
	}
	if st := recording.Stopped; st != nil {
		// Where the provider cut a run is not where the agent lost its way.
		return nil, fmt.Errorf("%s: the recording was %s; a cliff finds where the agent lost its way, and this run was cut by its provider: record the task again (tare cliff without --run)", dir, st.Line())
	}
	side := journal.Side{Key: "a", Agent: recording.Agent, Args: recording.Args}
	installs, err := findInstalls([]journal.Side{side}, o.Config, recipe.Project)
	if err != nil {
		return nil, err
	}
	r, err := run.Open(dir, o.Bus)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	store, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		return nil, err
	}
	if set.On != "" {
		// The recording's recipe says where it was recorded; the cliff's settings say where
		// its tails run (an analysis --run of an earlier recording may send them elsewhere).
		recipe.On = set.On
	}
	env, stop, err := newTailEnv(r, store, recipe, installs, o.Config)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := attachBackend(env, recipe, allowDirty(r)); err != nil {
		return nil, err
	}
	cfg := cliff.Config{Steps: len(recording.Steps), Tails: set.Tails, Budget: set.Budget, GapBelow: set.GapBelow}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &CliffResult{Budget: set.Budget, Simulated: recipe.ScriptText != ""}

	// The recording itself first: a run that passed has no cliff. Nothing is written
	// before this, so --run on a passed recording leaves it as it was.
	verdict, err := scoreRecording(ctx, env, recording)
	if err != nil {
		return nil, err
	}
	res.Recording = verdict.Detail
	if verdict.CouldNotRun {
		return nil, fmt.Errorf("scoring the recording: %s", verdict.Detail)
	}
	if verdict.Passed && fromRun {
		return nil, fmt.Errorf("%w (%s)", errRecordingPassed, verdict.Detail)
	}
	data, _ := json.MarshalIndent(set, "", "  ")
	if err := run.WriteFile(filepath.Join(dir, cliffFile), append(data, '\n')); err != nil {
		return nil, err
	}
	if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: "cliff: the recording " + verdict.Detail}}); err != nil {
		return nil, err
	}
	res.RecordingCost, res.CostKnown, res.CostUnmetered = recordingSpend(dir, recording)
	res.Cost = res.RecordingCost
	if verdict.Passed {
		res.Result, res.Why = "passed", "the recording passed its check ("+verdict.Detail+"): there is no cliff to find"
		return res, finishCliff(r, recipe, recording, res)
	}

	// Tails a crash interrupted are run again under their own ids first: every attempt
	// stays on the record, and the search counts only finished tails.
	var again []tailSpec
	for id, t := range r.Snapshot().Tails {
		if strings.HasPrefix(id, cliffPrefix) && !tailFinished(t) {
			spec, err := tailFrom(recording, side, t.Step, journal.HowNative, id, true)
			if err != nil {
				return nil, err
			}
			again = append(again, spec)
		}
	}
	sort.Slice(again, func(i, j int) bool { return again[i].ID < again[j].ID })
	if len(again) > 0 {
		var ids, attached []string
		for _, spec := range again {
			if _, ok := attachedJob(dir, recipe, o.Config, r.Snapshot().Tails[spec.ID]); ok {
				attached = append(attached, spec.ID) // its job outlived tare: followed, not rerun
			} else {
				ids = append(ids, spec.ID)
			}
		}
		if err := r.Emit(journal.Event{Resumed: &journal.Resumed{Rerun: ids, Reattached: attached}}); err != nil {
			return nil, err
		}
	}
	if err := runJobs(ctx, set.Jobs, again, func(ctx context.Context, spec tailSpec) error { return runTail(ctx, env, spec) }); err != nil {
		return nil, err
	}
	var d cliff.Decision
	for {
		obs, ids := cliffObservations(r.Snapshot())
		d = cliff.Decide(cfg, obs)
		if d.Kind != cliff.Running {
			break
		}
		if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: fmt.Sprintf("cliff: %d tails from step %d (%s)", d.Want, d.Step, d.Why)}}); err != nil {
			return nil, err
		}
		specs := make([]tailSpec, d.Want)
		for i := range specs {
			id := fmt.Sprintf("%s%d-%d", cliffPrefix, d.Step, ids[d.Step]+i)
			// A step without a capsule of its own starts from the nearest one, and its tails
			// say so (TailStarted.CapsuleFrom).
			if specs[i], err = tailFrom(recording, side, d.Step, journal.HowNative, id, true); err != nil {
				return nil, err
			}
		}
		if err := runJobs(ctx, set.Jobs, specs, func(ctx context.Context, spec tailSpec) error { return runTail(ctx, env, spec) }); err != nil {
			return nil, err
		}
	}
	fillCliffResult(res, d, store, recording, r.Snapshot())
	return res, env.runner().finish(finishCliff(r, recipe, recording, res))
}

// tailFinished says whether a tail ended, with or without a verdict.
func tailFinished(t *journal.TailState) bool { return journal.Finished(t.Status) }

// tailVerdict says whether a finished tail reached a verdict (passed or failed), its first
// (a retry never replaces one); a tail that ended otherwise (not started, killed, stopped by
// its provider) tells nothing of its step.
func tailVerdict(t *journal.TailState) (verdict, passed bool) {
	a, ok := t.Counted()
	return ok, ok && a.Status == journal.StatusPassed
}

// cliffObservations counts the cliff's finished tails per step, and how many tail ids each
// step has used (finished or not), so new tails get fresh ones.
func cliffObservations(st *journal.RunState) (map[int]cliff.Count, map[int]int) {
	obs, ids := map[int]cliff.Count{}, map[int]int{}
	for id, t := range st.Tails {
		if !strings.HasPrefix(id, cliffPrefix) {
			continue
		}
		ids[t.Step]++
		if !tailFinished(t) {
			continue
		}
		c := obs[t.Step]
		c.Tails++
		if v, p := tailVerdict(t); v {
			c.Verdicts++
			if p {
				c.Passed++
			}
		}
		obs[t.Step] = c
	}
	return obs, ids
}

// scoreRecording runs the check on the recording's final workspace, restored afresh so that
// the check cannot change what the tails start from.
func scoreRecording(ctx context.Context, env *tailEnv, rec *journal.Recording) (checkResult, error) {
	work := filepath.Join(env.run.Dir(), "cliff-final")
	_ = os.RemoveAll(work)
	defer os.RemoveAll(work)
	if err := env.store.Restore(ctx, rec.Capsules[len(rec.Capsules)-1], work); err != nil {
		return checkResult{}, fmt.Errorf("restoring the recording's last capsule: %v", err)
	}
	image, err := env.roomImage(ctx)
	if err != nil {
		return checkResult{}, err
	}
	return runCheck(ctx, env.recipe.Check, work, time.Duration(env.recipe.CheckTimeout*float64(time.Second)), env.checkRoom(image), env.cfg), nil
}

// fillCliffResult turns the search's last decision into the result.
func fillCliffResult(res *CliffResult, d cliff.Decision, store *capsule.Store, rec *journal.Recording, st *journal.RunState) {
	obs, _ := cliffObservations(st)
	steps := make([]int, 0, len(obs))
	for s := range obs {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	for _, s := range steps {
		res.Steps = append(res.Steps, *stepRate(s, obs[s]))
		res.NoVerdict += obs[s].Tails - obs[s].Verdicts
	}
	res.Spent, res.Why = d.Spent, d.Why
	res.TailsCost = 0
	for id, t := range st.Tails {
		if strings.HasPrefix(id, cliffPrefix) {
			c, known, unmetered := tailSpend(t) // every attempt's, the relay's count
			res.TailsCost += c
			res.CostKnown = res.CostKnown && known
			res.CostUnmetered += unmetered
		}
	}
	res.Cost = res.RecordingCost + res.TailsCost
	res.Result = d.Kind.String()
	res.StepOdds = d.StepOdds
	if d.Kind == cliff.ModelGap {
		return
	}
	res.Models = &CliffModels{NoChange: d.Models.NoChange, OneStep: d.Models.OneStep, Decline: d.Models.Decline}
	switch d.Kind {
	case cliff.Pinned, cliff.NotPinned:
		if d.Kind == cliff.NotPinned {
			res.Lo, res.Hi = d.Models.Where.Range(0.05)
		}
		res.Step, res.Probability, res.Near = d.Hi, d.Probability, d.Near
		res.Before, res.After = stepRate(d.Hi-1, obs[d.Hi-1]), stepRate(d.Hi, obs[d.Hi])
		res.Call = journal.Printable(rec.Steps[d.Hi-1].Tool)
		if changes, err := store.Diff(rec.Capsules[d.Hi-1], rec.Capsules[d.Hi]); err == nil {
			for _, c := range changes {
				res.Changes = append(res.Changes, journal.Printable(changeLine(c)))
			}
		}
	default:
		res.Before, res.After = stepRate(0, obs[0]), stepRate(len(rec.Steps), obs[len(rec.Steps)])
	}
	if b, a := res.Before, res.After; b.Verdicts > 0 && a.Verdicts > 0 {
		diff, lo, hi := stats.Diff(b.Passed, b.Verdicts, a.Passed, a.Verdicts)
		res.Difference = &RateDiff{D: diff, Lo: lo, Hi: hi}
	}
}

// finishCliff writes the report and the result and journals the run's end.
func finishCliff(r *run.Run, recipe *run.Recipe, rec *journal.Recording, res *CliffResult) error {
	report := CliffReport(recipe, rec, res)
	if err := run.WriteFile(filepath.Join(r.Dir(), "report.txt"), []byte(report)); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(res, "", "  ")
	if err := run.WriteFile(filepath.Join(r.Dir(), "cliff-result.json"), append(data, '\n')); err != nil {
		return err
	}
	return r.Emit(journal.Event{RunFinished: &journal.RunFinished{Report: report}})
}

// CliffReport is the text report: its first line says what was found.
func CliffReport(recipe *run.Recipe, rec *journal.Recording, res *CliffResult) string {
	var b strings.Builder
	rate := func(s *StepRate) string {
		switch {
		case s.Tails == 0:
			return fmt.Sprintf("step %d: not measured", s.Step)
		case s.Verdicts == 0:
			return fmt.Sprintf("step %d: not measured (%d tails, none with a verdict)", s.Step, s.Tails)
		}
		return fmt.Sprintf("step %d: %d/%d passed (%.2f, 95%% interval %.2f-%.2f)", s.Step, s.Passed, s.Verdicts, s.Rate, s.Lo, s.Hi)
	}
	m := res.Models
	switch res.Result {
	case "pinned":
		fmt.Fprintf(&b, "cliff at step %d (%s within one step)\n", res.Step, pEquals(res.Near))
	case "not pinned":
		lead := "not pinned: "
		if m != nil {
			lead += fmt.Sprintf("one step is the likeliest explanation (%s); ", pEquals(m.OneStep))
		}
		fmt.Fprintf(&b, "%smost likely at step %d (%s, within one step %s)\n", lead, res.Step, pEquals(res.Probability), cliff.Prob(res.Near))
	case "gradual decline":
		if m != nil && m.Decline < cliff.PinnedMass {
			fmt.Fprintf(&b, "gradual decline: the likeliest explanation (%s), no single step named\n", pEquals(m.Decline))
		} else {
			b.WriteString("gradual decline: no single step\n")
		}
	case "model gap":
		b.WriteString("no cliff: model gap\n")
	case "no cliff":
		b.WriteString("no difference detected")
		if m != nil {
			fmt.Fprintf(&b, ": no change is the likeliest explanation (%s)", pEquals(m.NoChange))
		}
		b.WriteString("\n")
	case "passed":
		b.WriteString("no cliff: the recording passed\n")
	}
	fmt.Fprintf(&b, "  task      %s\n  agent     %s · %d steps recorded\n  check     %s\n", recipe.Prompt, sideLabel(recipe.Sides[0]), len(rec.Steps), recipe.Check)
	if res.Recording != "" {
		fmt.Fprintf(&b, "  recording %s\n", res.Recording)
	}
	named := res.Result == "pinned" || res.Result == "not pinned"
	if m != nil {
		// What "probability" means here: a posterior under these priors.
		fmt.Fprintf(&b, "  models    one step %s · steady decline %s · no change %s (prior 1/3 each)\n", cliff.Prob(m.OneStep), cliff.Prob(m.Decline), cliff.Prob(m.NoChange))
	}
	if res.Before != nil && !named {
		fmt.Fprintf(&b, "  start     %s\n  last      %s\n", rate(res.Before), rate(res.After))
	}
	if res.Before != nil && named {
		fmt.Fprintf(&b, "  before    %s\n  after     %s\n", rate(res.Before), rate(res.After))
	}
	if d := res.Difference; d != nil {
		fmt.Fprintf(&b, "  difference %+.2f (95%% interval %+.2f to %+.2f)\n", d.D, d.Lo, d.Hi)
	}
	if res.Before != nil && named {
		if res.Before.Verdicts > 0 && res.After.Verdicts > 0 && res.Before.Lo <= res.After.Hi {
			// Pinned is a posterior over every tail, not a test of these two steps alone.
			b.WriteString("  note      these two intervals overlap: the step is named from all the tails (the start's and the end's too), not from these two steps alone\n")
		}
		fmt.Fprintf(&b, "  the call  %s\n", res.Call)
		if len(res.Changes) == 0 {
			b.WriteString("  changed   no files\n")
		}
		for i, c := range res.Changes {
			label := "  changed   "
			if i > 0 {
				label = "            "
			}
			if i == 12 {
				fmt.Fprintf(&b, "%s... and %d more\n", label, len(res.Changes)-i)
				break
			}
			fmt.Fprintf(&b, "%s%s\n", label, c)
		}
	}
	fmt.Fprintf(&b, "  why       %s\n", res.Why)
	if res.Result != "passed" {
		nv := ""
		if res.NoVerdict > 0 {
			nv = fmt.Sprintf(" · %d no verdict, left out of the rates", res.NoVerdict)
		}
		fmt.Fprintf(&b, "  tails     %d of a budget of %d%s\n", res.Spent, res.Budget, nv)
		var parts []string
		for _, s := range res.Steps {
			parts = append(parts, fmt.Sprintf("%d: %d/%d", s.Step, s.Passed, s.Verdicts))
		}
		fmt.Fprintf(&b, "  per step  %s\n", strings.Join(parts, " · "))
	}
	cost := fmt.Sprintf("recording $%.4f + tails $%.4f = $%.4f (%s)", res.RecordingCost, res.TailsCost, res.Cost, costSource(res.CostUnmetered))
	if !res.CostKnown {
		cost = fmt.Sprintf("unknown (a model tare has no price for, or the recording's stream is unreadable; priced: recording $%.4f + tails $%.4f)", res.RecordingCost, res.TailsCost)
	}
	if res.Simulated {
		cost += " · simulated: tare's model server, no money spent"
	}
	fmt.Fprintf(&b, "  cost      %s\n", cost)
	return b.String()
}

// pEquals writes a probability as "p=0.97", or "p>0.99" at the top: never "p=1.00".
func pEquals(p float64) string {
	q := cliff.Prob(p)
	if strings.HasPrefix(q, ">") || strings.HasPrefix(q, "<") {
		return "p" + strings.ReplaceAll(q, " ", "")
	}
	return "p=" + q
}

// changeLine is one changed path as a report shows it: "+ added", "- removed", "M changed".
func changeLine(c capsule.Change) string {
	mark := map[capsule.ChangeKind]string{capsule.Added: "+", capsule.Removed: "-"}[c.Kind]
	if mark == "" {
		mark = "M"
	}
	return mark + " " + c.Path
}

// resumeCliff finishes a cliff analysis a crash interrupted: the recording first if it was
// cut short, then the search, which reruns the tails that were running and goes on from the
// tails the journal holds.
func resumeCliff(ctx context.Context, o ResumeOptions, rec *run.Recipe, set cliffSettings) (string, error) {
	if len(o.Retry) > 0 {
		return "", fmt.Errorf("--retry: %s is a cliff analysis; it reruns interrupted tails itself, and tare cliff --run %s --budget N spends more", o.Dir, o.Dir)
	}
	if _, err := journal.ReadRecording(o.Dir); err != nil {
		if _, err := resumeRecord(ctx, o, rec); err != nil {
			return "", err
		}
	}
	if _, err := runCliff(ctx, o.Dir, set, RecordOptions{Config: o.Config, Bus: o.Bus}, false); err != nil {
		return "", err
	}
	report, err := os.ReadFile(filepath.Join(o.Dir, "report.txt"))
	return string(report), err
}

// cliffOf says whether a recorded run is (or holds) a cliff analysis, and its settings.
func cliffOf(dir string, rec *run.Recipe) (cliffSettings, bool) {
	var set cliffSettings
	if ok, _ := rec.DecodeSettings(cliffKey, &set); ok {
		return set, true
	}
	data, err := os.ReadFile(filepath.Join(dir, cliffFile))
	if err != nil || json.Unmarshal(data, &set) != nil {
		return set, false
	}
	return set, true
}

// CliffCurve is what the app draws of a cliff: the pass rate of the tails from each step it
// tried, along the recording's steps, and the cliff once the report names it.
type CliffCurve struct {
	// Steps is the recording's last step, as far as the journal shows it.
	Steps  int
	Counts map[int]cliff.Count
	// Cliff is the step the report names ("cliff at step N"), 0 before.
	Cliff int
	// Verdict is the report's first line once there is one ("gradual decline: no single
	// step", "not pinned: ..."), "" before.
	Verdict string
	// Calls are the recording's tool calls, in order.
	Calls []journal.ToolCall
}

// CliffCurveOf reads a run's state as a cliff; ok is false for a run that is no cliff.
func CliffCurveOf(st *journal.RunState) (c CliffCurve, ok bool) {
	c.Counts, _ = cliffObservations(st)
	if st.Kind != "cliff" && len(c.Counts) == 0 {
		for id := range st.Tails {
			if strings.HasPrefix(id, cliffPrefix) {
				ok = true
			}
		}
		if !ok {
			return c, false
		}
	}
	c.Calls = st.Original
	c.Steps = len(st.Original)
	for s := range c.Counts {
		c.Steps = max(c.Steps, s)
	}
	for id, t := range st.Tails {
		if strings.HasPrefix(id, cliffPrefix) {
			c.Steps = max(c.Steps, t.Step)
		}
	}
	first, _, _ := strings.Cut(st.Report, "\n")
	c.Verdict = journal.Printable(first)
	if strings.HasPrefix(first, "cliff at step ") {
		fmt.Sscan(strings.TrimPrefix(first, "cliff at step "), &c.Cliff)
	}
	return c, true
}

// recordingUsage is what a recording's own run spent, from the stream it left in
// original/stdout.jsonl, priced as its tails are. ok is false when the stream cannot be
// read: the cost is then unknown, not 0.
func recordingUsage(dir string, rec *journal.Recording) (journal.Usage, bool) {
	a, err := agent.ByName(rec.Agent)
	if err != nil {
		return journal.Usage{}, false
	}
	f, err := os.Open(filepath.Join(dir, "original", "stdout.jsonl"))
	if err != nil {
		return journal.Usage{}, false
	}
	defer f.Close()
	r, err := a.ParseStream(f)
	if err != nil {
		return journal.Usage{}, false
	}
	sessions := filepath.Join(dir, "original", "session")
	u := runUsage(a, r, nil, sessions)
	return usageOf(u, runModels(a, r, u, nil, sessions)...), true
}
