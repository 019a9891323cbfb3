package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
)

// CalibrateOptions is a calibrate run: N fresh starts of a task per side.
type CalibrateOptions struct {
	// Prompt is the task, for every side without a prompt of its own.
	Prompt string
	Sides  []journal.Side
	// Check is a shell command run in each finished workspace; exit 0 passes. Empty: a run
	// counts when its agent exits 0, and every workspace is kept.
	Check        string
	CheckTimeout time.Duration
	// CheckOnHost is the operator's opt-in to run the check on the host instead of its room.
	CheckOnHost  bool
	AgentTimeout time.Duration
	Runs, Jobs   int
	Keep         bool
	// Project is the folder each run starts from; with Env and no Project, the image's
	// WORKDIR contents are the start.
	Project string
	// Env is an environment folder (a Dockerfile and its context): every room of the run,
	// the check's included, is rooted in its image (--env; "": the host's).
	Env string
	// Out is the run directory (default: <state>/calibrate/<project>-<time>).
	Out string
	// Started, when set, is told the run directory once it exists and before the run goes on:
	// a caller that did not name one (Out) learns it here, to show the run.
	Started func(dir string)
	Config  *config.Config
	// Script makes every side talk to tare's own model server replaying this script;
	// empty means each agent's real provider.
	Script string
	Seed   int64
	// Caps are --max-cost/--max-tokens, enforced at the relay.
	Caps       run.Caps
	AllowDirty bool
	// Argv is the command line, kept in the recipe.
	Argv []string
	// Bus receives the run's events as they are journaled (nil: none).
	Bus *journal.Bus
	// Progress receives the probe's lines (nil: none).
	Progress io.Writer
	// Version is tare's version, kept in the recipe.
	Version string
	// On is where the tails run: "local" (or empty) in this process, "slurm" as one sbatch
	// job each (config [cluster]).
	On string
	// UntilSeparated starts runs of the two sides in pairs until the sides' pass rates are
	// separated at 95% (anytime-valid) or MaxRuns runs per side have started; Runs is unused.
	UntilSeparated bool
	MaxRuns        int
	// Detect is the difference of pass rates the report gives --until-separated's run
	// count for (--detect; 0: none).
	Detect float64
}

// ParseSides turns --side specs ("claude --model haiku") and --side-prompt KEY=PROMPT
// items into sides keyed a, b, c...
func ParseSides(specs, prompts []string) ([]journal.Side, error) {
	if len(specs) == 0 {
		return nil, errors.New("--side: give at least one side, e.g. --side claude --side \"codex -m gpt-5\"")
	}
	var sides []journal.Side
	for i, spec := range specs {
		words, err := splitWords(spec)
		if err != nil || len(words) == 0 {
			return nil, fmt.Errorf("--side %q: want an agent and its arguments, e.g. \"claude --model haiku\"", spec)
		}
		if _, err := agent.ByName(words[0]); err != nil {
			return nil, fmt.Errorf("--side %q: %v", spec, err)
		}
		sides = append(sides, journal.Side{Key: string(rune('a' + i)), Agent: words[0], Args: words[1:]})
	}
	for _, item := range prompts {
		key, text, ok := strings.Cut(item, "=")
		i := -1
		for j, s := range sides {
			if s.Key == key {
				i = j
			}
		}
		if !ok || i < 0 || text == "" {
			return nil, fmt.Errorf("--side-prompt %q: want KEY=PROMPT with KEY one of %s", item, sideKeys(sides))
		}
		sides[i].Prompt = text
	}
	return sides, nil
}

func sideKeys(sides []journal.Side) string {
	var keys []string
	for _, s := range sides {
		keys = append(keys, s.Key)
	}
	return strings.Join(keys, ", ")
}

// Calibrate runs each side N times from a fresh start of the task, in rooms, scored by the
// check, and returns the report: pass rate with its Wilson 95% interval, judge scores, time,
// tokens and cost per side. The run directory holds the journal, recipe, usage and report.
func Calibrate(ctx context.Context, o CalibrateOptions) (dir, report string, err error) {
	if err := o.Validate(); err != nil {
		return "", "", err
	}
	installs, err := findInstalls(o.Sides, o.Config, o.Project)
	if err != nil {
		return "", "", err
	}
	e, err := buildEnv(ctx, o.Env, o.Config, o.Progress)
	if err != nil {
		return "", "", err
	}
	r, err := run.New(o.Out, filepath.Join(o.Config.StateDir, "calibrate"), runName(o.Project, o.Env), o.Bus)
	if err != nil {
		return "", "", err
	}
	defer r.Close()
	dir = r.Dir()
	if o.Started != nil {
		o.Started(dir)
	}
	store, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		return dir, "", err
	}
	project, dropStart, err := envStart(e, o.Project, dir)
	if err != nil {
		return dir, "", err
	}
	defer dropStart()
	start, err := store.Snap(ctx, project, "start")
	if err != nil {
		return dir, "", fmt.Errorf("taking the project's capsule: %v", err)
	}
	rec := &run.Recipe{
		Tare: o.Version, Argv: o.Argv, Kind: "calibrate", Time: time.Now().UTC(), Project: o.Project, Fingerprint: start.Root, Env: recipeEnv(e, o.Project == ""),
		Prompt: o.Prompt, Check: o.Check, CheckTimeout: o.CheckTimeout.Seconds(), AgentTimeout: o.AgentTimeout.Seconds(),
		Sides: o.Sides, Agents: map[string]run.RecipeAgent{}, Runs: o.Runs, Jobs: o.Jobs, Keep: o.Keep || o.Check == "", Seed: o.Seed,
		CheckRoom: run.NewCheckRoom(o.Config, o.CheckOnHost), On: onRecipe(o.On),
	}
	if o.Caps.Set() {
		rec.Caps = &o.Caps
	}
	if o.UntilSeparated {
		if err := rec.SetSettings(separateKey, separateSettings{MaxRuns: o.MaxRuns, Detect: o.Detect}); err != nil {
			return dir, "", err
		}
	}
	for name, inst := range installs {
		rec.Agents[name] = run.RecipeAgent{Version: inst.Version, Bin: inst.Bin, Snapshots: "none (calibrate takes no step capsules)"}
	}
	if o.Script != "" {
		text, err := os.ReadFile(o.Script)
		if err != nil {
			return dir, "", fmt.Errorf("--script %s: %v", o.Script, err)
		}
		rec.Script, rec.ScriptText = o.Script, string(text)
		rec.Seed = run.Seed(o.Seed)
	}
	if err := run.WriteRecipe(dir, rec); err != nil {
		return dir, "", err
	}
	if err := r.Emit(journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: o.Project, Prompt: o.Prompt, Check: o.Check,
		CheckRoom: checkWhere(rec), Sides: o.Sides, Budget: len(o.Sides) * o.Runs, Jobs: o.Jobs, Simulated: o.Script != ""}}); err != nil {
		return dir, "", err
	}
	if err := probeSides(ctx, r, o.Sides, project, o.Config, o.AllowDirty, o.Progress); err != nil {
		_ = r.Emit(journal.Event{RunFinished: &journal.RunFinished{Error: err.Error()}})
		return dir, "", err
	}
	report, err = runCalibrate(ctx, r, rec, store, start, installs, o.Config)
	return dir, report, err
}

// Validate checks the options before anything is created or started, and makes the
// project's path absolute: every bad input is one line naming the flag and the fix.
func (o *CalibrateOptions) Validate() error {
	var err error
	if o.Env, err = checkEnv(o.Env); err != nil {
		return err
	}
	if o.Project != "" || o.Env == "" {
		if o.Project, err = probe.ProjectDir(o.Project, o.AllowDirty); err != nil {
			return err
		}
	}
	if err := o.validateSeparate(); err != nil {
		return err
	}
	if o.UntilSeparated {
		o.Runs = o.MaxRuns // the tails are listed up to the maximum; the test stops them sooner
	}
	if o.Runs < 1 {
		return fmt.Errorf("--runs %d: want 1 or more", o.Runs)
	}
	if o.Jobs < 1 {
		return fmt.Errorf("--jobs %d: want 1 or more", o.Jobs)
	}
	if o.Prompt == "" {
		for _, s := range o.Sides {
			if s.Prompt == "" {
				return errors.New("give a prompt, or a --side-prompt for every side")
			}
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
	if err := onPreflight(o.On, o.Config); err != nil {
		return err
	}
	return o.Caps.Check(o.Script, sideAgents(o.Sides)...)
}

// findInstalls finds every side's agent CLI before anything is written, never one inside
// the projects.
func findInstalls(sides []journal.Side, cfg *config.Config, projects ...string) (map[string]agent.Install, error) {
	out := map[string]agent.Install{}
	for _, s := range sides {
		if _, ok := out[s.Agent]; ok {
			continue
		}
		a, err := agent.ByName(s.Agent)
		if err != nil {
			return nil, err
		}
		inst, err := room.FindAgent(a, cfg, projects...)
		if err != nil {
			return nil, err
		}
		out[s.Agent] = inst
	}
	return out, nil
}

// probeSides proves a room clean for each agent before any tail runs, and journals each
// reading; a reading that is not "tare: 0.00" stops the run unless allowDirty.
func probeSides(ctx context.Context, r *run.Run, sides []journal.Side, project string, cfg *config.Config, allowDirty bool, progress io.Writer) error {
	if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: "probe"}}); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range sides {
		if seen[s.Agent] {
			continue
		}
		seen[s.Agent] = true
		a, _ := agent.ByName(s.Agent)
		reading, err := probe.Probe(ctx, probe.ProbeOptions{Agent: a, Project: project, Config: cfg, Progress: progress, AllowDirty: allowDirty})
		if err != nil {
			return err
		}
		if err := r.Emit(journal.Event{Probed: &journal.Probed{Agent: s.Agent, Verdict: reading.Verdict(), Zero: reading.Zero(), Text: reading.Render()}}); err != nil {
			return err
		}
		_ = probe.StoreReading(cfg.StateDir, reading) // the app's probes pane; the journal has it anyway
		if !reading.Zero() && !allowDirty {
			return fmt.Errorf("%s: %s; %v", s.Agent, reading.Verdict(), ErrDirty)
		}
	}
	return nil
}

// calibrateTails lists a calibrate run's tails in the order they are started: run i of
// every side, then run i+1.
func calibrateTails(rec *run.Recipe, start capsule.Capsule) []tailSpec {
	var specs []tailSpec
	for i := 0; i < rec.Runs; i++ {
		for _, s := range rec.Sides {
			prompt := rec.Prompt
			if s.Prompt != "" {
				prompt = s.Prompt
			}
			specs = append(specs, tailSpec{ID: fmt.Sprintf("%s-%d", s.Key, i), Side: s, How: journal.HowFresh, Prompt: prompt, Start: start})
		}
	}
	return specs
}

// runCalibrate runs the tails the journal does not hold as finished (and those in again,
// finished or not), then writes the report.
func runCalibrate(ctx context.Context, r *run.Run, rec *run.Recipe, store *capsule.Store, start capsule.Capsule,
	installs map[string]agent.Install, cfg *config.Config, again ...string) (string, error) {
	sep, err := separateOf(rec)
	if err != nil {
		return "", fmt.Errorf("%s: %v", r.Dir(), err)
	}
	env, stop, err := newTailEnv(r, store, rec, installs, cfg)
	if err != nil {
		return "", err
	}
	defer stop()
	if err := attachBackend(env, rec, allowDirty(r)); err != nil {
		return "", err
	}
	if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: "tails"}}); err != nil {
		return "", err
	}
	done := map[string]bool{}
	for id, t := range r.Snapshot().Tails {
		done[id] = journal.Finished(t.Status)
	}
	for _, id := range again {
		done[id] = false
	}
	var todo []tailSpec
	for _, spec := range calibrateTails(rec, start) {
		if !done[spec.ID] {
			todo = append(todo, spec)
		}
	}
	if err := runJobs(ctx, rec.Jobs, todo, func(ctx context.Context, spec tailSpec) error {
		// Checked when a slot is free, so the journal holds every run that has ended.
		if sep != nil && !separationStarts(r, rec, *sep, spec) {
			return nil
		}
		return runTail(ctx, env, spec)
	}); err != nil {
		return "", err
	}
	if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: "report"}}); err != nil {
		return "", err
	}
	st := r.Snapshot()
	report := calibrateReport(rec, st)
	if err := writeReport(r.Dir(), report, rec, st); err != nil {
		return "", err
	}
	if err := writeUsage(r.Dir(), st); err != nil {
		return "", err
	}
	return report, env.runner().finish(r.Emit(journal.Event{RunFinished: &journal.RunFinished{Report: report}}))
}

// runJobs runs f over specs with at most jobs at once, in order. The first error that is
// not a tail's own (the journal failed, or ctx ended) stops new starts and is returned
// after the running ones end.
func runJobs(ctx context.Context, jobs int, specs []tailSpec, f func(context.Context, tailSpec) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, spec := range specs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(spec tailSpec) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(ctx, spec); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}(spec)
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// splitWords splits a side spec as a shell would, with ” and "" quoting.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, c := range s {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unclosed quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
