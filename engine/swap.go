package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/run"
	"tare/engine/stats"
	"tare/modelserver"
)

// SwapOptions is a swap analysis: was it the workspace or the agent? Each of two agents makes
// an original run; at each cut (a fraction of that run's steps) each agent continues each
// workspace, its own natively and by handoff, the other's by handoff.
type SwapOptions struct {
	// RecordOptions holds the task, the check, the project and the script; its Side is unused.
	RecordOptions
	A, B journal.Side
	// Cuts are fractions of each original's steps, increasing, in [0, 1].
	Cuts []float64
	// Tails per cut, workspace, agent and way of continuing.
	Tails, Jobs int
	// Detect, when above 0, sizes Tails instead: the fewest tails a cell with which a real
	// effect of this size (a difference of pass rates) is called with 80% power (SwapTailsFor).
	Detect float64
	// Originals is how many original runs each agent makes (0 or 1: one). With one, every
	// effect is about the two originals' workspaces; with several, each pair of originals
	// (the k-th of a and of b) is swapped as one swap, and the effects are the means over the
	// pairs with intervals over them: about the agents' runs.
	Originals int
	// Handoff is what a handoff gives the continuing agent: "trail" (the written summary of
	// the steps so far) or "workspace" (nothing but the files).
	Handoff string
	// On is where the tails run: local (this machine, also "") or slurm (backend.go). The
	// two originals are always recorded here.
	On string
}

// swapKey is the recipe's key for a swap's settings.
const swapKey = "swap"

// swapSettings is the swap's part of recipe.json.
type swapSettings struct {
	Cuts    []float64 `json:"cuts"`
	Tails   int       `json:"tails"`
	Jobs    int       `json:"jobs"`
	Handoff string    `json:"handoff"`
	// Detect is the effect --detect sized Tails for (0: --tails was given).
	Detect float64 `json:"detect,omitempty"`
	// Originals per agent; 0 in a recipe written before there could be more than one.
	Originals int `json:"originals,omitempty"`
}

// originals is how many original runs each agent makes.
func (s swapSettings) originals() int { return max(1, s.Originals) }

// originalDir is the folder of agent key's k-th original (from 0) in the run: a/ and b/ for
// the first, as a swap of one original has always had them, a2/, b2/, ... for the others.
func originalDir(key string, k int) string {
	if k == 0 {
		return key
	}
	return fmt.Sprintf("%s%d", key, k+1)
}

// swapTailName is a tail's id: c<cut>-<workspace><agent>-<n|h>-<n>, with o<k+1>- before it
// for the k-th pair of originals past the first.
func swapTailName(k, cut int, ws, who string, how journal.How, n int) string {
	id := fmt.Sprintf("c%d-%s%s-%s-%d", cut, ws, who, how[:1], n)
	if k > 0 {
		id = fmt.Sprintf("o%d-%s", k+1, id)
	}
	return id
}

// ParseCuts reads --cuts: fractions in [0, 1], strictly increasing.
func ParseCuts(s string) ([]float64, error) {
	var cuts []float64
	for _, f := range strings.Split(s, ",") {
		var c float64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &c); err != nil || math.IsNaN(c) {
			return nil, fmt.Errorf("--cuts %q: %q is not a number; give fractions of the run like 0,0.5,1", s, f)
		}
		if c < 0 || c > 1 {
			return nil, fmt.Errorf("--cuts %q: %g is outside [0, 1]; a cut is a fraction of the original run's steps", s, c)
		}
		if len(cuts) > 0 && c <= cuts[len(cuts)-1] {
			return nil, fmt.Errorf("--cuts %q: %g does not come after %g; give the cuts in increasing order", s, c, cuts[len(cuts)-1])
		}
		cuts = append(cuts, c)
	}
	return cuts, nil
}

// SwapCell is the tails of one workspace continued by one agent in one way.
type SwapCell struct {
	Workspace string `json:"workspace"` // "a" or "b": whose original run
	Agent     string `json:"agent"`     // "a" or "b": who continues
	How       string `json:"how"`       // native or handoff
	StepRate
}

// SwapEffect is one effect at one cut: the mean of two differences of pass rates (Parts),
// each between two cells that differ only in what the effect is about, the two weighed
// equally. Pooling the cells' tails instead would let a cell with more verdicts outweigh its
// partner, and uneven no-verdicts would then turn a model effect into a state effect that is
// not there. The interval is MOVER's (Zou and Donner) on the four cells' exact
// (Clopper-Pearson) intervals, at the level the swap's family of calls sets (SwapFamily).
type SwapEffect struct {
	Name        string  `json:"name"`
	Diff        float64 `json:"diff"`
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Significant bool    `json:"distinguishable"`
	// Measured: every cell the effect needs has a verdict. An effect that is not has no
	// estimate (Diff 0, the interval -1 to 1) and is never distinguishable.
	Measured bool `json:"measured"`
	// Meaning says which rates are compared, in words.
	Meaning string `json:"meaning"`
	// Parts are the two differences the effect is the mean of: the state effect per
	// continuing agent, the model effect per workspace, the handoff cost per agent.
	Parts []SwapPart `json:"parts"`
	// Called: the effect is one of the swap's calls (every measured effect but the state
	// effect at a control cut, which can only be noise).
	Called bool `json:"called"`
	// OnVerdicts: the verdicts alone call the effect. With tails left out (LeftOut, no
	// verdict) it is called (Significant) only when it still is with them counted the worst
	// way and the best: what was left out is not assumed to be random.
	OnVerdicts bool `json:"distinguishable_on_verdicts"`
	LeftOut    int  `json:"left_out"`
	// Callable is the smallest observed effect its cells' verdicts could have called at the
	// family's level (0 when none could): a call is never made below it, so a non-call says
	// nothing about effects smaller than this.
	Callable float64 `json:"smallest_callable"`
}

// SwapPart is one of an effect's two differences, with its interval at the family's level.
// The parts are shown, not called: only the effects count among the calls.
type SwapPart struct {
	Name     string  `json:"name"`
	Diff     float64 `json:"diff"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Measured bool    `json:"measured"`
}

// SwapCut is one cut's table and effects.
type SwapCut struct {
	Cut   float64 `json:"cut"`
	StepA int     `json:"step_a"`
	StepB int     `json:"step_b"`
	// Control: both workspaces are the untouched project (step 0), so a state effect here
	// can only be noise: it is shown and never called. The model and handoff effects are
	// called here as at any cut: agent a against b from the same untouched project is the
	// cleanest A/B comparison a swap has.
	Control bool `json:"control"`
	// Level is the confidence of each effect's interval: 1 - alpha/calls (SwapFamily).
	Level   float64      `json:"level"`
	Cells   []SwapCell   `json:"cells"`
	Effects []SwapEffect `json:"effects"`
	// StepsA and StepsB are each original's step at this cut, with more than one original
	// per agent (StepA and StepB are then the first's).
	StepsA []int `json:"steps_a,omitempty"`
	StepsB []int `json:"steps_b,omitempty"`
	// Originals is how many pairs of originals the effects are over (0 or 1: one pair, and
	// the effects are about those two workspaces).
	Originals int `json:"originals,omitempty"`
}

// Cell is the cut's cell of workspace ws continued by agent who, natively or by handoff.
func (c SwapCut) Cell(ws, who, how string) (SwapCell, bool) {
	for _, x := range c.Cells {
		if x.Workspace == ws && x.Agent == who && x.How == how {
			return x, true
		}
	}
	return SwapCell{}, false
}

// SwapFamily is how swap keeps its calls honest together: every measured effect (but the
// state effect at a control cut) is one call ("distinguishable from zero"), and each interval is
// made at 1 - Alpha/Calls (Bonferroni), so the chance that any call is made where no effect
// is real stays at most Alpha.
type SwapFamily struct {
	Method string  `json:"method"`
	Alpha  float64 `json:"alpha"`
	Calls  int     `json:"calls"`
	Level  float64 `json:"level"`
}

// SwapResult is what swap found, as --json gives it.
type SwapResult struct {
	A         string     `json:"a"`
	B         string     `json:"b"`
	Handoff   string     `json:"handoff"`
	Tails     int        `json:"tails"`
	Detect    float64    `json:"detect,omitempty"`
	Originals int        `json:"originals"`
	Cuts      []SwapCut  `json:"cuts"`
	Family    SwapFamily `json:"family"`
	NoVerdict int        `json:"no_verdict"`
	// Cost is the two recordings' and the tails' together, every attempt's, on the relay's
	// count (CostUnmetered: the attempts and recordings it did not meter, priced on the
	// agent's).
	Cost          float64 `json:"cost"`
	RecordingCost float64 `json:"recording_cost"`
	TailsCost     float64 `json:"tails_cost"`
	CostKnown     bool    `json:"cost_known"`
	CostUnmetered int     `json:"cost_unmetered,omitempty"`
	Simulated     bool    `json:"simulated,omitempty"`
}

// Swap runs the analysis and returns its run directory and result; the report is in
// report.txt.
func Swap(ctx context.Context, o SwapOptions) (string, *SwapResult, error) {
	if err := o.Validate(); err != nil {
		return "", nil, err
	}
	set := swapSettings{Cuts: o.Cuts, Tails: o.Tails, Jobs: o.Jobs, Handoff: o.Handoff, Detect: o.Detect, Originals: o.Originals}
	o.A.Key, o.B.Key = "a", "b"
	installs, err := findInstalls([]journal.Side{o.A, o.B}, o.Config, o.Project)
	if err != nil {
		return "", nil, err
	}
	e, err := buildEnv(ctx, o.Env, o.Config, o.Progress)
	if err != nil {
		return "", nil, err
	}
	r, err := run.New(o.Out, filepath.Join(o.Config.StateDir, "swap"), runName(o.Project, o.Env), o.Bus)
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	dir := r.Dir()
	if o.Started != nil {
		o.Started(dir)
	}
	o.Started = nil // the originals' recordings are folders of this run, not runs to show
	rec := &run.Recipe{Tare: o.Version, Argv: o.Argv, Kind: "swap", Time: time.Now().UTC(), Project: o.Project, Env: recipeEnv(e, o.Project == ""),
		Prompt: o.Prompt, Check: o.Check, CheckTimeout: o.CheckTimeout.Seconds(), CheckRoom: run.NewCheckRoom(o.Config, o.CheckOnHost),
		AgentTimeout: o.AgentTimeout.Seconds(), Sides: []journal.Side{o.A, o.B}, Jobs: set.Jobs, Keep: false, Agents: map[string]run.RecipeAgent{}, On: onRecipe(o.On)}
	if err := rec.SetSettings(swapKey, set); err != nil {
		return dir, nil, err
	}
	for name, inst := range installs {
		a, _ := agent.ByName(name)
		rec.Agents[name] = run.RecipeAgent{Version: inst.Version, Bin: inst.Bin, Snapshots: agent.HookKind(a)}
	}
	if o.Script != "" {
		text, err := os.ReadFile(o.Script)
		if err != nil {
			return dir, nil, fmt.Errorf("--script %s: %v", o.Script, err)
		}
		rec.Script, rec.ScriptText, rec.Seed = o.Script, string(text), run.Seed(o.Seed)
	}
	if err := run.WriteRecipe(dir, rec); err != nil {
		return dir, nil, err
	}
	if err := r.Emit(journal.Event{RunStarted: &journal.RunStarted{Kind: "swap", Project: o.Project, Prompt: o.Prompt, Check: o.Check,
		CheckRoom: checkWhere(rec), Sides: rec.Sides, Jobs: set.Jobs, Simulated: o.Script != ""}}); err != nil {
		return dir, nil, err
	}
	res, err := runSwap(ctx, r, rec, set, installs, o.RecordOptions)
	if err != nil {
		_ = r.Emit(journal.Event{RunFinished: &journal.RunFinished{Error: err.Error()}})
	}
	return dir, res, err
}

// Validate checks the options before anything is created or started, and makes the
// project's path absolute; with Detect it sizes Tails. Every bad input is one line naming the
// flag and the fix.
func (o *SwapOptions) Validate() error {
	set := swapSettings{Cuts: o.Cuts, Tails: o.Tails, Jobs: o.Jobs, Handoff: o.Handoff, Detect: o.Detect, Originals: o.Originals}
	if o.Detect != 0 {
		if set.originals() > 1 {
			// With several pairs the calls are over the pairs, and what they can call depends on
			// how many pairs there are, not on tails a cell (smallestCallableOver).
			return fmt.Errorf("--detect with --originals %d: --detect sizes tails a cell for one pair of originals; over pairs the number of pairs decides what can be called (about 10 or more at the default cuts); fix: drop --detect and give --tails", set.Originals)
		}
		var err error
		if set.Tails, err = SwapTailsFor(o.Detect, o.Cuts); err != nil {
			return err
		}
		o.Tails = set.Tails
	}
	switch {
	case o.Prompt == "":
		return errors.New("give the task as PROMPT")
	case o.Check == "":
		return errors.New("--check: swap needs a check that scores a workspace (exit 0 passes)")
	case len(set.Cuts) == 0:
		return errors.New("--cuts: give at least one cut, like 0,0.5,1")
	case set.Tails < 1:
		return fmt.Errorf("--tails %d: give at least 1 tail per cut, workspace and agent", set.Tails)
	case set.Jobs < 1:
		return fmt.Errorf("--jobs %d: run at least 1 tail at a time", set.Jobs)
	case set.Originals < 0 || set.Originals > maxOriginals:
		return fmt.Errorf("--originals %d: give 1 (effects about the two originals) to %d original runs per agent", set.Originals, maxOriginals)
	case set.Handoff != "trail" && set.Handoff != "workspace":
		return fmt.Errorf("--handoff %q: give trail (the steps so far, written) or workspace (the files alone)", set.Handoff)
	}
	var err error
	if o.Env, err = checkEnv(o.Env); err != nil {
		return err
	}
	if o.Project != "" || o.Env == "" {
		if o.Project, err = probe.ProjectDir(o.Project, o.AllowDirty); err != nil {
			return err
		}
	}
	if o.Script != "" {
		if _, err := modelserver.LoadScript(o.Script); err != nil {
			return err
		}
	}
	if err := checkPreflight(o.Check, o.CheckOnHost, run.NewCheckRoom(o.Config, o.CheckOnHost), configOrigin(o.Config)); err != nil {
		return err
	}
	return onPreflight(o.On, o.Config)
}

// runSwap makes the two originals (each a recording of its own in a/ and b/) and the tails of
// every cut, then writes the report.
func runSwap(ctx context.Context, r *run.Run, rec *run.Recipe, set swapSettings, installs map[string]agent.Install, o RecordOptions) (*SwapResult, error) {
	recs := map[string]*journal.Recording{}
	envs := map[string]*tailEnv{}
	var first *tailEnv
	for k := range set.originals() {
		for i, side := range rec.Sides {
			name := originalDir(side.Key, k)
			label := "original " + name + ": " + sideLabel(side)
			if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: label}}); err != nil {
				return nil, err
			}
			dir := filepath.Join(r.Dir(), name)
			recording, err := journal.ReadRecording(dir)
			for made := 0; err != nil || recording.Stopped != nil; made++ {
				// Not recorded yet, cut short by a crash, or ended by the provider (its workspaces
				// would be where the provider cut it, not where the agent took it): recorded again,
				// the earlier attempt kept beside the new one. Twice stopped, the swap stops and
				// says why; tare resume records it again.
				if err == nil && made == 2 {
					return nil, fmt.Errorf("original %s (%s) was %s, in two recordings: a run the provider ended says nothing about the agent, so no workspace of it is swapped; both attempts are kept beside %s; run tare resume %s to record it again",
						name, side.Agent, recording.Stopped.Line(), dir, r.Dir())
				}
				if _, err := setAside(dir); err != nil {
					return nil, err
				}
				ro := o
				// Each original draws from the run's seed plus its own number: the same script
				// must not make two originals the same run.
				ro.Prompt, ro.Project, ro.Check, ro.Script = rec.Prompt, rec.Project, rec.Check, ""
				ro.CheckTimeout = time.Duration(rec.CheckTimeout * float64(time.Second))
				ro.AgentTimeout = time.Duration(rec.AgentTimeout * float64(time.Second))
				ro.CheckOnHost = rec.CheckRoom.OnHost
				if ro.Env = ""; rec.Env != nil {
					ro.Env = rec.Env.Dir // each original is built from (or found by) the run's environment
				}
				ro.Side, ro.Out, ro.Seed, ro.Bus = side, dir, rec.Seed+int64(len(rec.Sides)*k+i), nil
				ro.scriptText, ro.scriptName = rec.ScriptText, rec.Script
				if dir, recording, err = Record(ctx, ro); err != nil {
					return nil, fmt.Errorf("original %s (%s): %v", name, side.Agent, err)
				}
			}
			store, err := capsule.Open(filepath.Join(dir, "store"))
			if err != nil {
				return nil, err
			}
			env, stop, err := newTailEnv(r, store, rec, installs, o.Config)
			if err != nil {
				return nil, err
			}
			defer stop()
			if first == nil {
				if err := attachBackend(env, rec, o.AllowDirty || allowDirty(r)); err != nil {
					return nil, err
				}
				first = env
			} else {
				env.backend = first.backend // one queue, one shared folder
			}
			recs[name], envs[name] = recording, env
		}
	}
	type job struct {
		env  *tailEnv
		spec tailSpec
	}
	var jobs []job
	for k := range set.originals() {
		for ci, cut := range set.Cuts {
			for _, ws := range rec.Sides {
				recording := recs[originalDir(ws.Key, k)]
				step := cutStep(cut, len(recording.Steps))
				for _, who := range rec.Sides {
					hows := []journal.How{journal.HowHandoff}
					if who.Key == ws.Key {
						hows = []journal.How{journal.HowNative, journal.HowHandoff}
					}
					for _, how := range hows {
						for n := range set.Tails {
							spec, err := tailFrom(recording, who, step, how, swapTailName(k, ci, ws.Key, who.Key, how, n), true)
							if err != nil {
								return nil, err
							}
							if how == journal.HowHandoff && set.Handoff == "workspace" && step > 0 {
								spec.Prompt = recording.Task
							}
							jobs = append(jobs, job{envs[originalDir(ws.Key, k)], spec})
						}
					}
				}
			}
		}
	}
	if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: fmt.Sprintf("tails: %d", len(jobs))}}); err != nil {
		return nil, err
	}
	done := map[string]bool{}
	var rerun, attached []string
	for id, t := range r.Snapshot().Tails {
		if done[id] = tailFinished(t); !done[id] {
			if _, ok := attachedJob(r.Dir(), rec, o.Config, t); ok {
				attached = append(attached, id) // its job outlived tare: followed, not rerun
			} else {
				rerun = append(rerun, id)
			}
		}
	}
	if len(rerun)+len(attached) > 0 {
		sort.Strings(rerun)
		sort.Strings(attached)
		if err := r.Emit(journal.Event{Resumed: &journal.Resumed{Rerun: rerun, Reattached: attached}}); err != nil {
			return nil, err
		}
	}
	var todo []tailSpec
	envOf := map[string]*tailEnv{}
	for _, j := range jobs {
		if !done[j.spec.ID] {
			todo = append(todo, j.spec)
			envOf[j.spec.ID] = j.env
		}
	}
	if err := runJobs(ctx, set.Jobs, todo, func(ctx context.Context, spec tailSpec) error { return runTail(ctx, envOf[spec.ID], spec) }); err != nil {
		return nil, err
	}
	res := swapResult(r.Dir(), rec, set, recs, r.Snapshot())
	report := SwapReport(rec, res)
	if err := run.WriteFile(filepath.Join(r.Dir(), "report.txt"), []byte(report)); err != nil {
		return nil, err
	}
	data, _ := json.MarshalIndent(res, "", "  ")
	if err := run.WriteFile(filepath.Join(r.Dir(), "swap-result.json"), append(data, '\n')); err != nil {
		return nil, err
	}
	return res, first.runner().finish(r.Emit(journal.Event{RunFinished: &journal.RunFinished{Report: report}}))
}

// cutStep is the step a cut falls on: the fraction of the run's steps, rounded.
func cutStep(cut float64, steps int) int { return int(math.Round(cut * float64(steps))) }

// swapResult counts each cell's tails and works out the effects.
func swapResult(runDir string, rec *run.Recipe, set swapSettings, recs map[string]*journal.Recording, st *journal.RunState) *SwapResult {
	res := &SwapResult{A: sideLabel(rec.Sides[0]), B: sideLabel(rec.Sides[1]), Handoff: set.Handoff, Tails: set.Tails, Detect: set.Detect,
		CostKnown: true, Simulated: rec.ScriptText != ""}
	table := SwapTable(st)
	res.Family = SwapFamilyOf(table)
	res.Originals = set.originals()
	for ci, cut := range set.Cuts {
		c := SwapCut{Cut: cut, StepA: cutStep(cut, len(recs["a"].Steps)), StepB: cutStep(cut, len(recs["b"].Steps))}
		if res.Originals > 1 {
			for k := range res.Originals {
				c.StepsA = append(c.StepsA, cutStep(cut, len(recs[originalDir("a", k)].Steps)))
				c.StepsB = append(c.StepsB, cutStep(cut, len(recs[originalDir("b", k)].Steps)))
			}
		}
		if ci < len(table) {
			c.Cells, c.Effects, c.Control, c.Level, c.Originals = table[ci].Cells, table[ci].Effects, table[ci].Control, table[ci].Level, table[ci].Originals
		}
		for _, cell := range c.Cells {
			res.NoVerdict += cell.NoVerdict
		}
		res.Cuts = append(res.Cuts, c)
	}
	for id, t := range st.Tails {
		if swapTailID.MatchString(id) {
			c, known, unmetered := tailSpend(t) // every attempt's, the relay's count
			res.TailsCost += c
			res.CostKnown = res.CostKnown && known
			res.CostUnmetered += unmetered
		}
	}
	for k := range set.originals() {
		for _, side := range rec.Sides {
			name := originalDir(side.Key, k)
			c, known, unmetered := recordingSpend(filepath.Join(runDir, name), recs[name])
			res.RecordingCost += c
			res.CostKnown = res.CostKnown && known
			res.CostUnmetered += unmetered
		}
	}
	res.Cost = res.RecordingCost + res.TailsCost
	return res
}

// swapTailID is a swap tail's id: c<cut>-<workspace><agent>-<n(ative)|h(andoff)>-<n>, with
// o<k>- before it for the k-th pair of originals past the first (swapTailName).
var swapTailID = regexp.MustCompile(`^(?:o(\d+)-)?c(\d+)-([ab])([ab])-([nh])-\d+$`)

// SwapTable is a swap run's cells and effects per cut, from its tails as the journal has
// them (the first verdict of each; no verdict left out), so the report and the app agree.
// Cut and the steps are left for the caller, who knows the recipe; a cut is a control when
// all its tails start from step 0.
func SwapTable(st *journal.RunState) []SwapCut {
	counts := map[int]map[int]map[string]*StepRate{} // cut, original (from 0), cell
	moved := map[int]bool{}                          // cuts with a tail from past step 0
	last, originals := -1, 1
	for id, t := range st.Tails {
		m := swapTailID.FindStringSubmatch(id)
		if m == nil {
			continue
		}
		k := 0
		if m[1] != "" {
			fmt.Sscan(m[1], &k)
			k-- // o2 is the second pair, from 0 the first
		}
		var ci int
		fmt.Sscan(m[2], &ci)
		last, originals = max(last, ci), max(originals, k+1)
		if counts[ci] == nil {
			counts[ci] = map[int]map[string]*StepRate{}
		}
		if counts[ci][k] == nil {
			counts[ci][k] = map[string]*StepRate{}
		}
		moved[ci] = moved[ci] || t.Step > 0
		key := m[3] + m[4] + m[5]
		n := counts[ci][k][key]
		if n == nil {
			n = &StepRate{}
			counts[ci][k][key] = n
		}
		if !tailFinished(t) {
			continue
		}
		n.Tails++
		if v, p := tailVerdict(t); v {
			n.Verdicts++
			if p {
				n.Passed++
			}
		}
	}
	table := make([][]map[string]StepRate, last+1)
	control := make([]bool, last+1)
	for ci := range table {
		table[ci] = make([]map[string]StepRate, originals)
		for k := range originals {
			table[ci][k] = map[string]StepRate{}
			for key, n := range counts[ci][k] {
				table[ci][k][key] = *n
			}
		}
		control[ci] = !moved[ci]
	}
	if originals == 1 {
		one := make([]map[string]StepRate, len(table))
		for ci := range table {
			one[ci] = table[ci][0]
		}
		return swapCuts(one, control)
	}
	return swapCutsOverOriginals(table, control)
}

// swapEffects are the three effects, each the mean of two differences of cells (keys
// workspace, agent, n(ative) or h(andoff)). The state and model effects compare handoff
// cells only, so that how a tail continues does not pass for either.
var swapEffects = []struct {
	name, meaning string
	parts         [2]struct{ name, plus, minus string }
}{
	{"state", "a's workspace minus b's, the same agent continuing by handoff; the two agents weigh equally",
		[2]struct{ name, plus, minus string }{{"a continues", "aah", "bah"}, {"b continues", "abh", "bbh"}}},
	{"model", "agent a minus agent b, on the same workspace by handoff; the two workspaces weigh equally",
		[2]struct{ name, plus, minus string }{{"on a's", "aah", "abh"}, {"on b's", "bah", "bbh"}}},
	{"handoff", "each agent on its own workspace, natively minus by handoff; the two agents weigh equally",
		[2]struct{ name, plus, minus string }{{"agent a", "aan", "aah"}, {"agent b", "bbn", "bbh"}}},
}

// swapAlpha is the chance of any false call over all of a swap's calls together.
const swapAlpha = 0.05

// swapCuts turns each cut's counts per cell (keys as in swapEffects) into its table and
// effects, the calls corrected for their number over every effect called (swapCalled).
func swapCuts(counts []map[string]StepRate, control []bool) []SwapCut {
	calls := 0
	for ci, c := range counts {
		for _, e := range swapEffects {
			if swapCalled(e.name, control[ci]) && cellsMeasured(c, e.parts[0].plus, e.parts[0].minus, e.parts[1].plus, e.parts[1].minus) {
				calls++
			}
		}
	}
	// Each rate's exact interval at the family's level, combined by MOVER: Wilson's would
	// be narrower, and with a few tails a cell too narrow to keep the family's error.
	level := swapAlpha / float64(max(1, calls))
	exact := func(x, n int) (float64, float64) { return stats.ClopperPearson(x, n, level) }
	term := func(c map[string]StepRate, k string, coef float64) stats.Term {
		return stats.Term{Coef: coef, X: c[k].Passed, N: c[k].Verdicts}
	}
	var cuts []SwapCut
	for ci, c := range counts {
		cut := SwapCut{Control: control[ci], Level: 1 - swapAlpha/float64(max(1, calls))}
		for _, ws := range []string{"a", "b"} {
			for _, who := range []string{"a", "b"} {
				for _, how := range []string{"native", "handoff"} {
					if how == "native" && who != ws {
						continue
					}
					n := c[ws+who+how[:1]]
					n.NoVerdict = n.Tails - n.Verdicts
					if n.Verdicts > 0 {
						n.Rate = float64(n.Passed) / float64(n.Verdicts)
					}
					n.Lo, n.Hi = stats.Wilson(n.Passed, n.Verdicts) // a rate, not a call: 95%
					cut.Cells = append(cut.Cells, SwapCell{Workspace: ws, Agent: who, How: how, StepRate: n})
				}
			}
		}
		for _, e := range swapEffects {
			var terms []stats.Term
			var ns [4]int
			eff := SwapEffect{Name: e.name, Meaning: e.meaning}
			for i, p := range e.parts {
				d, lo, hi, ok := stats.MoverOn([]stats.Term{term(c, p.plus, 1), term(c, p.minus, -1)}, exact)
				eff.Parts = append(eff.Parts, SwapPart{Name: p.name, Diff: d, Lo: lo, Hi: hi, Measured: ok})
				terms = append(terms, term(c, p.plus, 0.5), term(c, p.minus, -0.5))
				ns[2*i], ns[2*i+1] = c[p.plus].Verdicts, c[p.minus].Verdicts
			}
			eff.Diff, eff.Lo, eff.Hi, eff.Measured = stats.MoverOn(terms, exact)
			eff.Called = eff.Measured && swapCalled(e.name, cut.Control)
			eff.OnVerdicts = eff.Called && stats.Distinguishable(eff.Lo, eff.Hi)
			eff.Significant = eff.OnVerdicts
			if eff.Called {
				eff.Callable, _ = smallestCallable(ns, level)
			}
			// Tails with no verdict are not assumed to be left out at random: the effect is
			// called only when it is, with the same sign, with them counted the worst way for
			// that sign and the best (Horowitz and Manski).
			var filled [2][]stats.Term // [0]: the plus cells' left out failed, the minus cells' passed; [1]: the other way
			for _, p := range e.parts {
				for _, k := range []struct {
					key  string
					coef float64
				}{{p.plus, 0.5}, {p.minus, -0.5}} {
					n := c[k.key]
					left := n.Tails - n.Verdicts
					eff.LeftOut += left
					low, high := stats.Term{Coef: k.coef, X: n.Passed, N: n.Tails}, stats.Term{Coef: k.coef, X: n.Passed + left, N: n.Tails}
					if k.coef < 0 {
						low, high = high, low
					}
					filled[0], filled[1] = append(filled[0], low), append(filled[1], high)
				}
			}
			if eff.OnVerdicts && eff.LeftOut > 0 {
				_, worstLo, _, _ := stats.MoverOn(filled[0], exact)
				_, _, bestHi, _ := stats.MoverOn(filled[1], exact)
				eff.Significant = (eff.Lo > 0 && worstLo > 0) || (eff.Hi < 0 && bestHi < 0)
			}
			cut.Effects = append(cut.Effects, eff)
		}
		cuts = append(cuts, cut)
	}
	return cuts
}

// swapCalled says whether an effect is called at a cut: every one but the state effect at a
// control cut, where both workspaces are the untouched project.
func swapCalled(name string, control bool) bool { return !control || name != "state" }

// SwapFamilyOf is the family the cuts' calls were made in: every measured effect but the
// state effects of control cuts.
func SwapFamilyOf(cuts []SwapCut) SwapFamily {
	f := SwapFamily{Method: "bonferroni", Alpha: swapAlpha, Level: 1 - swapAlpha}
	for _, c := range cuts {
		for _, e := range c.Effects {
			if e.Called {
				f.Calls++
			}
		}
		f.Level = c.Level
	}
	return f
}

// SwapReport is the text report: per cut the table of pass rates and the three effects,
// and in words which of them are distinguishable from zero, the calls corrected for their
// number (SwapFamily), and a control cut's state effect shown but not called.
func SwapReport(rec *run.Recipe, res *SwapResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tare swap · %s\n  task      %s\n  check     %s\n  a         %s\n  b         %s\n  handoff   %s\n",
		startLabel(rec), rec.Prompt, rec.Check, res.A, res.B, res.Handoff)
	level := fmt.Sprintf("%.4g%%", 100*res.Family.Level)
	if res.Detect > 0 {
		fmt.Fprintf(&b, "  tails     %d a cell, sized by --detect %g: a real effect of %g at rates near one half is called with 80%% power\n", res.Tails, res.Detect, res.Detect)
	}
	fmt.Fprintf(&b, "  calls     %s\n", swapFamilyLine(res.Family))
	cell := func(c SwapCut, ws, who, how string) string {
		if x, ok := c.Cell(ws, who, how); ok {
			if x.Verdicts == 0 {
				return fmt.Sprintf("no verdict (%d tails)", x.Tails)
			}
			return fmt.Sprintf("%d/%d %.2f (%.2f-%.2f)", x.Passed, x.Verdicts, x.Rate, x.Lo, x.Hi)
		}
		return "-"
	}
	if res.Originals > 1 {
		fmt.Fprintf(&b, "  estimand  %d original runs per agent, the k-th of a's and of b's swapped as one swap: every effect is the\n"+
			"            mean over the %d pairs, its interval over the pairs (a betting interval for a bounded mean: valid\n"+
			"            at any number of pairs, wide with few), so it is about the agents' runs, not two workspaces\n", res.Originals, res.Originals)
	} else {
		b.WriteString("  estimand  one original run per agent: every effect is about these two runs' workspaces (a's original\n" +
			"            and b's at each cut), not about the agents' runs in general; another pair of originals may differ\n" +
			"            (--originals N swaps N pairs and speaks of the agents)\n")
	}
	for _, c := range res.Cuts {
		if len(c.StepsA) > 0 {
			fmt.Fprintf(&b, "\ncut %.2g (a's originals at steps %s, b's at %s; the cells pool the pairs' tails)\n", c.Cut, strings.ReplaceAll(joinInts(c.StepsA), " ", ","), strings.ReplaceAll(joinInts(c.StepsB), " ", ","))
		} else {
			fmt.Fprintf(&b, "\ncut %.2g (a's original at step %d, b's at step %d)\n", c.Cut, c.StepA, c.StepB)
		}
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "workspace \\ agent", "a continues", "b continues")
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "a's, handoff", cell(c, "a", "a", "handoff"), cell(c, "a", "b", "handoff"))
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "b's, handoff", cell(c, "b", "a", "handoff"), cell(c, "b", "b", "handoff"))
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "own, native", cell(c, "a", "a", "native"), cell(c, "b", "b", "native"))
		var seen, unmeasured []string
		smallest := 0.0 // the largest of the non-calls' smallest callable effects
		for _, e := range c.Effects {
			mark := "not distinguishable from 0"
			switch {
			case !e.Measured:
				mark = "not measured (a cell has no verdict)"
				unmeasured = append(unmeasured, e.Name)
			case !e.Called:
				mark = "control, no call"
			case e.Significant:
				mark = "distinguishable from 0"
				seen = append(seen, e.Name)
			case e.OnVerdicts:
				mark = fmt.Sprintf("not distinguishable from 0 with its %d %s left out counted the worst and the best way (on verdicts alone it would be)", e.LeftOut, plural(e.LeftOut, "tail"))
			case e.Callable > 0 && c.Originals > 1:
				mark = fmt.Sprintf("not distinguishable from 0 (%d pairs of originals call only an effect of %.2f or more, every pair agreeing)", c.Originals, e.Callable)
				smallest = math.Max(smallest, e.Callable)
			case e.Callable > 0:
				mark = fmt.Sprintf("not distinguishable from 0 (these cells call only an effect of %.2f or more)", e.Callable)
				smallest = math.Max(smallest, e.Callable)
			case c.Originals > 1:
				mark = fmt.Sprintf("not distinguishable from 0 (%d pairs of originals are too few to call any effect at this level)", c.Originals)
				smallest = math.Inf(1)
			default:
				mark = "not distinguishable from 0 (too few verdicts to call any effect)"
				smallest = math.Inf(1)
			}
			if e.Measured {
				fmt.Fprintf(&b, "  %-14s %+.2f (%s %s to %s) %s: %s\n", e.Name+" effect", e.Diff, level, bound(e.Lo), bound(e.Hi), mark, e.Meaning)
			} else {
				fmt.Fprintf(&b, "  %-14s %s: %s\n", e.Name+" effect", mark, e.Meaning)
			}
			var parts []string
			for _, p := range e.Parts {
				if p.Measured {
					parts = append(parts, fmt.Sprintf("%s %+.2f (%s to %s)", p.Name, p.Diff, bound(p.Lo), bound(p.Hi)))
				} else {
					parts = append(parts, p.Name+" not measured")
				}
			}
			fmt.Fprintf(&b, "  %-14s %s\n", "", strings.Join(parts, " · "))
		}
		if c.Control {
			b.WriteString("  control   both workspaces are the untouched project (step 0): the state effect here can only be noise and\n" +
				"            is not called; the model and handoff effects are, agent a against b from the same start\n")
		}
		switch {
		case len(seen) == 0:
			fmt.Fprintf(&b, "  in words  no effect is distinguishable from zero at this cut%s%s\n", smallestNote(smallest, c.Originals), unmeasuredNote(unmeasured))
		default:
			fmt.Fprintf(&b, "  in words  the %s effect%s distinguishable from zero; the others are not%s%s\n", strings.Join(seen, " and the "), map[bool]string{true: " is", false: "s are"}[len(seen) == 1], smallestNote(smallest, c.Originals), unmeasuredNote(unmeasured))
		}
	}
	cost := fmt.Sprintf("recordings $%.4f + tails $%.4f = $%.4f (%s)", res.RecordingCost, res.TailsCost, res.Cost, costSource(res.CostUnmetered))
	if !res.CostKnown {
		cost = fmt.Sprintf("unknown (a model tare has no price for; priced: recordings $%.4f + tails $%.4f)", res.RecordingCost, res.TailsCost)
	}
	if res.Simulated {
		cost += " · simulated: tare's model server, no money spent"
	}
	nv := ""
	if res.NoVerdict > 0 {
		nv = fmt.Sprintf("\n  no verdict %d tails, left out of the rates", res.NoVerdict)
	}
	fmt.Fprintf(&b, "\n  cost      %s%s\n", cost, nv)
	return b.String()
}

// swapFamilyLine says how the calls were corrected for their number.
func swapFamilyLine(f SwapFamily) string {
	if f.Calls == 0 {
		return "none: no effect was measured (intervals at 95%)"
	}
	return fmt.Sprintf("%d (the measured effects; at a cut at step 0 the model and handoff effects); Bonferroni: each effect's interval at %.4g%% (MOVER on exact per-cell limits), so all %d together call a zero effect distinguishable at most %.0f%% of the time",
		f.Calls, 100*f.Level, f.Calls, 100*f.Alpha)
}

// cellsMeasured says whether every one of the cells named has a verdict.
func cellsMeasured(c map[string]StepRate, keys ...string) bool {
	for _, k := range keys {
		if c[k].Verdicts == 0 {
			return false
		}
	}
	return true
}

// smallestNote says what the cut's non-calls cannot rule out: effects below the size its
// cells could call.
func smallestNote(smallest float64, originals int) string {
	switch {
	case smallest == 0:
		return ""
	case originals > 1 && math.IsInf(smallest, 1):
		return "; too few pairs of originals to call any effect, so a non-call here rules nothing out (give more --originals)"
	case originals > 1:
		return fmt.Sprintf("; with these originals only an effect of %.2f or more could be called, so a non-call rules out nothing smaller (more --originals narrow it)", smallest)
	case math.IsInf(smallest, 1):
		return "; a cell has too few verdicts to call any effect, so a non-call here rules nothing out (--detect sizes the cells)"
	}
	return fmt.Sprintf("; with these tails only an observed effect of %.2f or more could be called, so a non-call rules out nothing smaller (--detect D sizes the cells for an effect D)", smallest)
}

// bound prints an interval's bound to two decimals, or three where two would read as zero:
// a bound of -0.002 beside "distinguishable from 0" must not print as -0.00.
func bound(x float64) string {
	switch a := math.Abs(x); {
	case a == 0 || a >= 0.005:
		return fmt.Sprintf("%+.2f", x)
	case a >= 0.0005:
		return fmt.Sprintf("%+.3f", x)
	}
	return fmt.Sprintf("%+.1g", x)
}

func unmeasuredNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "; not measured: " + strings.Join(names, ", ")
}

// resumeSwap finishes a swap a crash interrupted: the originals already recorded are kept,
// one cut short is recorded again (the interrupted attempt kept beside it), finished tails
// are not run again and the tails that were running are rerun, as the journal says.
func resumeSwap(ctx context.Context, o ResumeOptions, rec *run.Recipe) (string, error) {
	if len(o.Retry) > 0 {
		return "", fmt.Errorf("--retry: %s is a swap analysis; it reruns interrupted tails itself", o.Dir)
	}
	var set swapSettings
	ok, err := rec.DecodeSettings(swapKey, &set)
	if err != nil {
		return "", fmt.Errorf("%s: %v", o.Dir, err)
	}
	if !ok || len(rec.Sides) != 2 {
		return "", fmt.Errorf("%s: recipe.json holds no swap settings; the run cannot be finished", o.Dir)
	}
	installs, err := findInstalls(rec.Sides, o.Config, rec.Project)
	if err != nil {
		return "", err
	}
	r, err := run.Open(o.Dir, o.Bus)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if _, err := runSwap(ctx, r, rec, set, installs, RecordOptions{Config: o.Config}); err != nil {
		return "", err
	}
	report, err := os.ReadFile(filepath.Join(o.Dir, "report.txt"))
	return string(report), err
}
