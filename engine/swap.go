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
	"tare/engine/stats"
)

// SwapOptions is a swap analysis: was it the workspace or the agent? Each of two agents makes
// an original run; at each cut (a fraction of that run's steps) each agent continues each
// workspace, its own natively and by handoff, the other's by handoff.
type SwapOptions struct {
	// RecordOptions holds the task, the check, the project and the script; its Side is unused.
	RecordOptions
	A, B Side
	// Cuts are fractions of each original's steps, increasing, in [0, 1].
	Cuts []float64
	// Tails per cut, workspace, agent and way of continuing.
	Tails, Jobs int
	// Handoff is what a handoff gives the continuing agent: "trail" (the written summary of
	// the steps so far) or "workspace" (nothing but the files).
	Handoff string
}

// swapSettings is the swap's part of recipe.json.
type swapSettings struct {
	Cuts    []float64 `json:"cuts"`
	Tails   int       `json:"tails"`
	Jobs    int       `json:"jobs"`
	Handoff string    `json:"handoff"`
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

// SwapEffect is a difference of pass rates with its 95% interval (Newcombe's).
type SwapEffect struct {
	Name        string  `json:"name"`
	Diff        float64 `json:"diff"`
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Significant bool    `json:"distinguishable"`
	// Meaning says which rates are compared, in words.
	Meaning string `json:"meaning"`
}

// SwapCut is one cut's table and effects.
type SwapCut struct {
	Cut     float64      `json:"cut"`
	StepA   int          `json:"step_a"`
	StepB   int          `json:"step_b"`
	Cells   []SwapCell   `json:"cells"`
	Effects []SwapEffect `json:"effects"`
}

// SwapResult is what swap found, as --json gives it.
type SwapResult struct {
	A         string    `json:"a"`
	B         string    `json:"b"`
	Handoff   string    `json:"handoff"`
	Cuts      []SwapCut `json:"cuts"`
	NoVerdict int       `json:"no_verdict"`
	Cost      float64   `json:"cost"`
	CostKnown bool      `json:"cost_known"`
	Simulated bool      `json:"simulated,omitempty"`
}

// Swap runs the analysis and returns its run directory and result; the report is in
// report.txt.
func Swap(ctx context.Context, o SwapOptions) (string, *SwapResult, error) {
	set := swapSettings{Cuts: o.Cuts, Tails: o.Tails, Jobs: o.Jobs, Handoff: o.Handoff}
	switch {
	case o.Prompt == "":
		return "", nil, errors.New("give the task as PROMPT")
	case o.Check == "":
		return "", nil, errors.New("--check: swap needs a check that scores a workspace (exit 0 passes)")
	case len(set.Cuts) == 0:
		return "", nil, errors.New("--cuts: give at least one cut, like 0,0.5,1")
	case set.Tails < 1:
		return "", nil, fmt.Errorf("--tails %d: give at least 1 tail per cut, workspace and agent", set.Tails)
	case set.Jobs < 1:
		return "", nil, fmt.Errorf("--jobs %d: run at least 1 tail at a time", set.Jobs)
	case set.Handoff != "trail" && set.Handoff != "workspace":
		return "", nil, fmt.Errorf("--handoff %q: give trail (the steps so far, written) or workspace (the files alone)", set.Handoff)
	}
	if err := checkPreflight(o.Check, o.CheckOnHost, NewCheckRoom(o.Config, o.CheckOnHost), configOrigin(o.Config)); err != nil {
		return "", nil, err
	}
	o.A.Key, o.B.Key = "a", "b"
	installs, err := findInstalls([]Side{o.A, o.B}, o.Config, o.Project)
	if err != nil {
		return "", nil, err
	}
	dir := o.Out
	if dir == "" {
		dir = FreeRunDir(filepath.Join(o.Config.StateDir, "swap"), o.Project, time.Now())
	}
	r, err := createRun(dir, o.Bus)
	if err != nil {
		return "", nil, err
	}
	defer r.close()
	rec := &Recipe{Tare: o.Version, Argv: o.Argv, Kind: "swap", Time: time.Now().UTC(), Project: o.Project,
		Prompt: o.Prompt, Check: o.Check, CheckTimeout: o.CheckTimeout.Seconds(), CheckRoom: NewCheckRoom(o.Config, o.CheckOnHost),
		AgentTimeout: o.AgentTimeout.Seconds(), Sides: []Side{o.A, o.B}, Jobs: set.Jobs, Keep: false, Agents: map[string]RecipeAgent{}, Swap: &set}
	for name, inst := range installs {
		a, _ := agent.ByName(name)
		rec.Agents[name] = RecipeAgent{Version: inst.Version, Bin: inst.Bin, Snapshots: agent.HookKind(a)}
	}
	if o.Script != "" {
		text, err := os.ReadFile(o.Script)
		if err != nil {
			return dir, nil, fmt.Errorf("--script %s: %v", o.Script, err)
		}
		rec.Script, rec.ScriptText, rec.Seed = o.Script, string(text), runSeed(o.Seed)
	}
	if err := writeRecipe(dir, rec); err != nil {
		return dir, nil, err
	}
	if err := r.emit(Event{RunStarted: &RunStarted{Kind: "swap", Project: o.Project, Prompt: o.Prompt, Check: o.Check,
		CheckRoom: checkWhere(rec), Sides: rec.Sides, Jobs: set.Jobs, Simulated: o.Script != ""}}); err != nil {
		return dir, nil, err
	}
	res, err := runSwap(ctx, r, rec, set, installs, o.RecordOptions)
	if err != nil {
		_ = r.emit(Event{RunFinished: &RunFinished{Error: err.Error()}})
	}
	return dir, res, err
}

// runSwap makes the two originals (each a recording of its own in a/ and b/) and the tails of
// every cut, then writes the report.
func runSwap(ctx context.Context, r *run, rec *Recipe, set swapSettings, installs map[string]agent.Install, o RecordOptions) (*SwapResult, error) {
	recs := map[string]*Recording{}
	envs := map[string]*tailEnv{}
	for i, side := range rec.Sides {
		if err := r.emit(Event{Phase: &Phase{Name: "original " + side.Key + ": " + sideLabel(side)}}); err != nil {
			return nil, err
		}
		dir := filepath.Join(r.dir, side.Key)
		recording, err := readRecording(dir)
		if err != nil {
			// Not recorded yet, or cut short by a crash: that attempt is kept beside the
			// new one.
			if _, err := setAside(dir); err != nil {
				return nil, err
			}
			ro := o
			// The two originals draw from the run's seed and the next one: the same script
			// must not make them the same run.
			ro.Prompt, ro.Project, ro.Check, ro.Script = rec.Prompt, rec.Project, rec.Check, ""
			ro.CheckTimeout = time.Duration(rec.CheckTimeout * float64(time.Second))
			ro.AgentTimeout = time.Duration(rec.AgentTimeout * float64(time.Second))
			ro.CheckOnHost = rec.CheckRoom.OnHost
			ro.Side, ro.Out, ro.Seed, ro.Bus = side, dir, rec.Seed+int64(i), nil
			ro.scriptText, ro.scriptName = rec.ScriptText, rec.Script
			if dir, recording, err = Record(ctx, ro); err != nil {
				return nil, fmt.Errorf("original %s (%s): %v", side.Key, side.Agent, err)
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
		recs[side.Key], envs[side.Key] = recording, env
	}
	type job struct {
		env  *tailEnv
		spec tailSpec
	}
	var jobs []job
	for ci, cut := range set.Cuts {
		for _, ws := range rec.Sides {
			recording := recs[ws.Key]
			step := cutStep(cut, len(recording.Steps))
			for _, who := range rec.Sides {
				hows := []string{"handoff"}
				if who.Key == ws.Key {
					hows = []string{"native", "handoff"}
				}
				for _, how := range hows {
					for n := range set.Tails {
						id := fmt.Sprintf("c%d-%s%s-%s-%d", ci, ws.Key, who.Key, how[:1], n)
						spec, err := tailFrom(recording, who, step, how, id, true)
						if err != nil {
							return nil, err
						}
						if how == "handoff" && set.Handoff == "workspace" && step > 0 {
							spec.Prompt = recording.Task
						}
						jobs = append(jobs, job{envs[ws.Key], spec})
					}
				}
			}
		}
	}
	if err := r.emit(Event{Phase: &Phase{Name: fmt.Sprintf("tails: %d", len(jobs))}}); err != nil {
		return nil, err
	}
	done := map[string]bool{}
	var rerun []string
	for id, t := range r.snapshot().Tails {
		if done[id] = tailFinished(t); !done[id] {
			rerun = append(rerun, id)
		}
	}
	if len(rerun) > 0 {
		sort.Strings(rerun)
		if err := r.emit(Event{Resumed: &Resumed{Rerun: rerun}}); err != nil {
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
	res := swapResult(rec, set, recs, r.snapshot())
	report := SwapReport(rec, res)
	if err := capsule.WriteFileAtomic(filepath.Join(r.dir, "report.txt"), []byte(report), 0o644); err != nil {
		return nil, err
	}
	data, _ := json.MarshalIndent(res, "", "  ")
	if err := capsule.WriteFileAtomic(filepath.Join(r.dir, "swap-result.json"), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return res, r.emit(Event{RunFinished: &RunFinished{Report: report}})
}

// cutStep is the step a cut falls on: the fraction of the run's steps, rounded.
func cutStep(cut float64, steps int) int { return int(math.Round(cut * float64(steps))) }

// swapResult counts each cell's tails and works out the effects.
func swapResult(rec *Recipe, set swapSettings, recs map[string]*Recording, st *RunState) *SwapResult {
	res := &SwapResult{A: sideLabel(rec.Sides[0]), B: sideLabel(rec.Sides[1]), Handoff: set.Handoff, CostKnown: true, Simulated: rec.ScriptText != ""}
	table := SwapTable(st)
	for ci, cut := range set.Cuts {
		c := SwapCut{Cut: cut, StepA: cutStep(cut, len(recs["a"].Steps)), StepB: cutStep(cut, len(recs["b"].Steps))}
		if ci < len(table) {
			c.Cells, c.Effects = table[ci].Cells, table[ci].Effects
		}
		for _, cell := range c.Cells {
			res.NoVerdict += cell.NoVerdict
		}
		res.Cuts = append(res.Cuts, c)
	}
	for id, t := range st.Tails {
		if swapTailID.MatchString(id) {
			u := t.TotalUsage() // every attempt's
			res.Cost += u.Cost
			if len(u.Unpriced) > 0 {
				res.CostKnown = false
			}
		}
	}
	return res
}

// swapTailID is a swap tail's id: c<cut>-<workspace><agent>-<n(ative)|h(andoff)>-<n>.
var swapTailID = regexp.MustCompile(`^c(\d+)-([ab])([ab])-([nh])-\d+$`)

// SwapTable is a swap run's cells and effects per cut, from its tails as the journal has
// them (the first verdict of each; no verdict left out), so the report and the app agree.
// Cut and the steps are left for the caller, who knows the recipe.
func SwapTable(st *RunState) []SwapCut {
	counts := map[int]map[string]*StepRate{}
	last := -1
	for id, t := range st.Tails {
		m := swapTailID.FindStringSubmatch(id)
		if m == nil {
			continue
		}
		var ci int
		fmt.Sscan(m[1], &ci)
		last = max(last, ci)
		if counts[ci] == nil {
			counts[ci] = map[string]*StepRate{}
		}
		key := m[2] + m[3] + m[4]
		n := counts[ci][key]
		if n == nil {
			n = &StepRate{}
			counts[ci][key] = n
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
	var cuts []SwapCut
	for ci := 0; ci <= last; ci++ {
		var c SwapCut
		get := func(k string) *StepRate {
			if n := counts[ci][k]; n != nil {
				return n
			}
			return &StepRate{}
		}
		for _, ws := range []string{"a", "b"} {
			for _, who := range []string{"a", "b"} {
				for _, how := range []string{"native", "handoff"} {
					if how == "native" && who != ws {
						continue
					}
					n := *get(ws + who + how[:1])
					n.NoVerdict = n.Tails - n.Verdicts
					if n.Verdicts > 0 {
						n.Rate = float64(n.Passed) / float64(n.Verdicts)
					}
					n.Lo, n.Hi = stats.Wilson(n.Passed, n.Verdicts)
					c.Cells = append(c.Cells, SwapCell{Workspace: ws, Agent: who, How: how, StepRate: n})
				}
			}
		}
		sum := func(keys ...string) (x, n int) {
			for _, k := range keys {
				x += get(k).Passed
				n += get(k).Verdicts
			}
			return
		}
		effect := func(name, meaning string, one, other []string) SwapEffect {
			xa, na := sum(one...)
			xb, nb := sum(other...)
			d, lo, hi := stats.Diff(xa, na, xb, nb)
			return SwapEffect{Name: name, Diff: d, Lo: lo, Hi: hi, Significant: na > 0 && nb > 0 && stats.Distinguishable(lo, hi), Meaning: meaning}
		}
		// Handoff cells only for the state and model effects, so that native against handoff
		// does not pass for either.
		c.Effects = []SwapEffect{
			effect("state", "a's workspace minus b's, the same agents continuing by handoff", []string{"aah", "abh"}, []string{"bah", "bbh"}),
			effect("model", "agent a minus agent b, on the same workspaces by handoff", []string{"aah", "bah"}, []string{"abh", "bbh"}),
			effect("handoff", "each agent on its own workspace, natively minus by handoff", []string{"aan", "bbn"}, []string{"aah", "bbh"}),
		}
		cuts = append(cuts, c)
	}
	return cuts
}

// SwapReport is the text report: per cut the table of pass rates and the three effects, and
// in words which of them are distinguishable from zero.
func SwapReport(rec *Recipe, res *SwapResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tare swap · %s\n  task      %s\n  check     %s\n  a         %s\n  b         %s\n  handoff   %s\n",
		rec.Project, rec.Prompt, rec.Check, res.A, res.B, res.Handoff)
	cell := func(c SwapCut, ws, who, how string) string {
		for _, x := range c.Cells {
			if x.Workspace == ws && x.Agent == who && x.How == how {
				return fmt.Sprintf("%d/%d %.2f (%.2f-%.2f)", x.Passed, x.Verdicts, x.Rate, x.Lo, x.Hi)
			}
		}
		return "-"
	}
	for _, c := range res.Cuts {
		fmt.Fprintf(&b, "\ncut %.2g (a at step %d, b at step %d)\n", c.Cut, c.StepA, c.StepB)
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "workspace \\ agent", "a continues", "b continues")
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "a's, handoff", cell(c, "a", "a", "handoff"), cell(c, "a", "b", "handoff"))
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "b's, handoff", cell(c, "b", "a", "handoff"), cell(c, "b", "b", "handoff"))
		fmt.Fprintf(&b, "  %-16s %-26s %-26s\n", "own, native", cell(c, "a", "a", "native"), cell(c, "b", "b", "native"))
		var seen []string
		for _, e := range c.Effects {
			mark := "not distinguishable from 0"
			if e.Significant {
				mark = "distinguishable from 0"
				seen = append(seen, e.Name)
			}
			fmt.Fprintf(&b, "  %-8s %+.2f (95%% %+.2f to %+.2f) %s: %s\n", e.Name+" effect", e.Diff, e.Lo, e.Hi, mark, e.Meaning)
		}
		switch len(seen) {
		case 0:
			b.WriteString("  in words  no effect is distinguishable from zero at 95% at this cut\n")
		default:
			fmt.Fprintf(&b, "  in words  at 95%%, the %s effect%s distinguishable from zero; the others are not\n", strings.Join(seen, " and the "), map[bool]string{true: " is", false: "s are"}[len(seen) == 1])
		}
	}
	cost := fmt.Sprintf("$%.4f (tare's prices)", res.Cost)
	if !res.CostKnown {
		cost = "unknown (a model tare has no price for)"
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

// resumeSwap finishes a swap a crash interrupted: the originals already recorded are kept,
// one cut short is recorded again (the interrupted attempt kept beside it), finished tails
// are not run again and the tails that were running are rerun, as the journal says.
func resumeSwap(ctx context.Context, o ResumeOptions, rec *Recipe) (string, error) {
	if len(o.Retry) > 0 {
		return "", fmt.Errorf("--retry: %s is a swap analysis; it reruns interrupted tails itself", o.Dir)
	}
	if rec.Swap == nil || len(rec.Sides) != 2 {
		return "", fmt.Errorf("%s: recipe.json holds no swap settings; the run cannot be finished", o.Dir)
	}
	installs, err := findInstalls(rec.Sides, o.Config, rec.Project)
	if err != nil {
		return "", err
	}
	r, err := openRun(o.Dir, o.Bus)
	if err != nil {
		return "", err
	}
	defer r.close()
	if _, err := runSwap(ctx, r, rec, *rec.Swap, installs, RecordOptions{Config: o.Config}); err != nil {
		return "", err
	}
	report, err := os.ReadFile(filepath.Join(o.Dir, "report.txt"))
	return string(report), err
}
