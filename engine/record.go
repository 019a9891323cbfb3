package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
	"tare/sandbox"
)

// The room never writes the run's store, which tare trusts later (a room that could would
// plant `blobs/ab -> /etc/cron.d` and have the host's next snapshot write there). It reads
// the store at storeInRoom and writes its capsules to a staging folder of its own at
// sandbox.RunDir; the host imports them, checking every object, once the room is gone.
const storeInRoom = sandbox.StoreDir

// snapCommand is the hook an agent runs after every tool call inside the room: it stages a
// capsule of the workspace (work: /work, or an image's WORKDIR), named by the call's tool-use id (read from the hook's JSON on stdin),
// and prints nothing, since a hook's output reaches the agent. It asks the room's
// snap-watch, which knows what changed.
func snapCommand(work string) string {
	return capsule.HookCommand(snapBin(), sandbox.RunDir, storeInRoom, work, capsule.SnapSocket)
}

// snapBin runs the hook and the watcher in the room: tare-room when tare has it beside
// itself (Start binds it then), as the hook runs after every tool call and tare-room starts
// in a fraction of tare's time; tare itself otherwise.
func snapBin() string {
	if sandbox.FindHelper() != "" {
		return sandbox.HelperBin
	}
	return sandbox.TareBin
}

// record runs the task once in a room over a copy of the project, with a capsule taken
// after every tool call (by the agent's own hook where it has one, from its stream
// otherwise), keeps its session, and reads the session as steps.
func record(ctx context.Context, env *tailEnv, side journal.Side, task string, start capsule.Capsule) (*journal.Recording, error) {
	dir := filepath.Join(env.run.Dir(), "original")
	work, stage := filepath.Join(dir, "work"), filepath.Join(dir, "stage")
	if err := os.MkdirAll(filepath.Join(dir, "session"), 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(stage, 0o755); err != nil {
		return nil, err
	}
	if err := env.store.Restore(ctx, start, work); err != nil {
		return nil, err
	}
	a, err := agent.ByName(side.Agent)
	if err != nil {
		return nil, err
	}
	inst := env.installs[a.Name()]
	kind := agent.HookKind(a)
	image, err := env.roomImage(ctx)
	if err != nil {
		return nil, err
	}
	p := room.Plan{Agent: a, Inst: inst, Config: env.cfg, Workspace: work, Sessions: filepath.Join(dir, "session"),
		RunStore: stage, Login: env.upstream == "", Image: image}
	if kind == agent.HookInAgent {
		for _, event := range agent.AfterToolEvents(a) {
			p.Hooks = append(p.Hooks, agent.Hook{Event: event, Command: snapCommand(roomWork(image))})
		}
	}
	upstream, err := env.upstreamFor("original")
	if err != nil {
		return nil, err
	}
	// Metered and capped like every tail: --max-cost/--max-tokens hold for the recording too,
	// and what it spends counts toward the run's caps.
	upstream, meter, err := env.meterFor(upstream, true)
	if err != nil {
		return nil, err
	}
	if meter != nil {
		defer meter.Close()
	}
	box, setup, err := room.Build(p, upstream)
	if err != nil {
		return nil, err
	}
	if meter == nil {
		if meter, err = env.interceptRoom(&box, &setup, true); err != nil {
			return nil, err
		}
		if meter != nil {
			defer meter.Close()
		}
	}
	hosts, err := run.CreateFile(hostLog(dir))
	if err != nil {
		return nil, err
	}
	defer hosts.Close()
	box.HostLog = hosts
	box.Binds = append(box.Binds, sandbox.Bind{Source: env.store.Dir(), Dest: storeInRoom})
	args := append(append(setup.Args, env.cfg.Agents[a.Name()].Args...), side.Args...)
	box.Argv = append([]string{inst.Command}, a.RunArgs(task, args)...)
	if kind == agent.HookInAgent {
		// A watcher from before the agent starts hands each hook's tare snap the paths that
		// changed, so a step costs what it changed, not what the workspace holds.
		box.Argv = append([]string{snapBin(), "snap-watch", "--store", sandbox.RunDir, "--base", storeInRoom,
			"--work", roomWork(image), "--"}, box.Argv...)
	}
	stdout, err := run.CreateFile(filepath.Join(dir, "stdout.jsonl"))
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := run.CreateFile(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	live := newLiveStream(a, "original", env.run)
	if kind == agent.HookFromStream {
		live.onToolEnd = func(id string) { _, _ = env.store.Snap(ctx, work, id) }
	}
	code, _, err := env.runAgent(ctx, box, stdout, stderr, live)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %v", a.Name(), err)
	}
	if _, err := env.store.Import(ctx, stage); err != nil {
		return nil, fmt.Errorf("recording %s: the capsules its room took were refused (%v); "+
			"the staging folder is kept for inspection; record the task again", a.Name(), err)
	}
	_ = os.RemoveAll(stage) // imported; what is left of it is the box's, and harmless
	out, err := os.ReadFile(filepath.Join(dir, "stdout.jsonl"))
	if err != nil {
		return nil, err
	}
	res, err := a.ParseStream(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("recording %s: its stream: %v", a.Name(), err)
	}
	session, err := room.ReadSession(a, filepath.Join(dir, "session"), res.SessionID)
	if err != nil {
		return nil, fmt.Errorf("recording %s (exit %d): %v", a.Name(), code, err)
	}
	if err := run.WriteFile(filepath.Join(dir, "session.jsonl"), session); err != nil {
		return nil, err
	}
	trail, err := agent.ReadTrail(a, session)
	if err != nil {
		return nil, err
	}
	rec := &journal.Recording{Agent: a.Name(), Args: side.Args, Task: task, SessionID: res.SessionID, Exit: fmt.Sprintf("agent exit %d", code),
		Snapshots: kind, Steps: trail.Steps, Events: trail.Events, Session: session,
		Metered: metered(meter, usageOf(runUsage(a, res, nil, filepath.Join(dir, "session"))))}
	errOut, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
	if stop, ok := agent.ProviderStopped(a, out, errOut); ok {
		rec.Stopped = &journal.ProviderStop{Kind: stop.Kind, Detail: run.Clip(stop.Detail, 200)}
	}
	if rec.Capsules, rec.Inherited, err = stepCapsules(env.store, start, trail.Steps); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	return rec, run.WriteFile(filepath.Join(dir, journal.RecordFile), append(data, '\n'))
}

// stepCapsules maps steps to capsules: a step's capsule is the last one taken for its tool
// calls. A step none of whose calls left one gets the nearest earlier capsule and is listed
// in inherited: nothing says the workspace it left is that one.
func stepCapsules(store *capsule.Store, start capsule.Capsule, steps []agent.Step) ([]capsule.Capsule, []journal.Inherited, error) {
	list, err := store.List()
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]capsule.Capsule{}
	for _, c := range list {
		if prev, ok := byID[c.ID]; !ok || c.Step > prev.Step {
			byID[c.ID] = c
		}
	}
	out := []capsule.Capsule{start}
	var inherited []journal.Inherited
	from := 0 // the step whose capsule the last step has
	for i, s := range steps {
		c, found := out[len(out)-1], false
		for _, id := range s.IDs {
			if got, ok := byID[id]; ok && (!found || got.Step > c.Step) {
				c, found = got, true
			}
		}
		if found {
			from = i + 1
		} else {
			inherited = append(inherited, journal.Inherited{Step: i + 1, From: from})
		}
		out = append(out, c)
	}
	return out, inherited, nil
}

// tailFrom is the spec of a tail continuing the recording after step, natively (the
// recorded agent's own session, cut after the step, resumed with "Continue.") or by handoff
// (a fresh session of side's agent given the trail up to the step).
//
// A step with no capsule of its own is refused unless fromNearest: the tail would start
// from an earlier step's workspace, which the step may have changed.
func tailFrom(rec *journal.Recording, side journal.Side, step int, how journal.How, id string, fromNearest bool) (tailSpec, error) {
	if step < 0 || step > len(rec.Steps) {
		return tailSpec{}, fmt.Errorf("step %d: the recording has steps 0 to %d", step, len(rec.Steps))
	}
	spec := tailSpec{ID: id, Side: side, Step: step, How: how, Start: rec.Capsules[step]}
	if from, ok := rec.Nearest(step); ok {
		if !fromNearest {
			return tailSpec{}, fmt.Errorf("--step %d: the step has no capsule of its own (no hook ran after its tool calls); "+
				"its nearest is step %d's, which may not be the workspace step %d left; fix: add --from-nearest to start from it, or pick another step", step, from, step)
		}
		spec.Nearest = &from
	}
	switch {
	case step == 0:
		spec.How, spec.Prompt = journal.HowFresh, rec.Task
	case how == journal.HowNative:
		if side.Agent != rec.Agent {
			return tailSpec{}, fmt.Errorf("a native tail continues %s's own session; %s cannot: use a handoff", rec.Agent, side.Agent)
		}
		a, err := agent.ByName(rec.Agent)
		if err != nil {
			return tailSpec{}, err
		}
		cut, err := agent.CutSession(a, rec.Session, rec.Steps[step-1])
		if err != nil {
			return tailSpec{}, err
		}
		spec.Prompt, spec.Session, spec.SessionID = continuePrompt, cut, rec.SessionID
	case how == journal.HowHandoff:
		spec.Prompt = agent.RenderHandoff(rec.Task, rec.Events[:rec.Steps[step-1].Events], false)
	default:
		return tailSpec{}, fmt.Errorf("a tail continues natively or by handoff, not %q", how)
	}
	return spec, nil
}

// continuePrompt is what a native tail says to the resumed session.
const continuePrompt = "Continue."

// stepSummary is one line per step, for reports and the app.
func stepSummary(rec *journal.Recording) string {
	var b strings.Builder
	for _, s := range rec.Steps {
		fmt.Fprintf(&b, "  step %-3d %s", s.N, run.Clip(s.Tool, 100))
		if from, ok := rec.Nearest(s.N); ok {
			fmt.Fprintf(&b, "  (no capsule of its own: starts from step %d's)", from)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// RecordOptions is a recorded run: the task once, with a capsule after every step.
type RecordOptions struct {
	Prompt  string
	Side    journal.Side
	Project string
	// Env is an environment folder whose image roots every room of the run, the check's
	// included (--env; "": the host's); with no Project its WORKDIR contents are the start.
	Env string
	// Check scores the recording and every tail continued from it (optional).
	Check        string
	CheckTimeout time.Duration
	// CheckOnHost is the operator's opt-in to run the check on the host instead of its room.
	CheckOnHost  bool
	AgentTimeout time.Duration
	Out          string
	// Started, when set, is told the run directory once it exists and before the run goes on:
	// a caller that did not name one (Out) learns it here, to show the run.
	Started func(dir string)
	Config  *config.Config
	// Script makes the agent talk to tare's own model server replaying it.
	Script string
	// Caps are --max-cost/--max-tokens for the recording itself and every tail of it, enforced
	// at the relay.
	Caps run.Caps
	// Seed fixes the script's branch draws (0: a fresh seed, written to the recipe).
	Seed int64
	// scriptText and scriptName, when set, are the script itself (a swap's recipe holds it,
	// and the file may be gone by a resume).
	scriptText, scriptName string
	// cliff is set when the recording is the first part of a cliff analysis.
	cliff      *cliffSettings
	AllowDirty bool
	Argv       []string
	Version    string
	Bus        *journal.Bus
	Progress   io.Writer
}

// Record runs the task once in a clean room with a capsule after every step, and returns
// the run directory and the recording: tare tail continues it from any step.
func Record(ctx context.Context, o RecordOptions) (string, *journal.Recording, error) {
	if err := o.Validate(); err != nil {
		return "", nil, err
	}
	return recordRun(ctx, o)
}

// Validate checks the options before anything is created or started, and makes the
// project's path absolute: every bad input is one line naming the flag and the fix.
func (o *RecordOptions) Validate() error {
	if o.Prompt == "" {
		return errors.New("give the task as PROMPT (or --prompt-file)")
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
	if err := o.Caps.Check(o.Script+o.scriptText, o.Side.Agent); err != nil {
		return err
	}
	return checkPreflight(o.Check, o.CheckOnHost, run.NewCheckRoom(o.Config, o.CheckOnHost), configOrigin(o.Config))
}

// recordRun is Record on options Validate has passed.
func recordRun(ctx context.Context, o RecordOptions) (string, *journal.Recording, error) {
	installs, err := findInstalls([]journal.Side{o.Side}, o.Config, o.Project)
	if err != nil {
		return "", nil, err
	}
	kind := "record"
	if o.cliff != nil {
		kind = "cliff" // the journal's kind and the folder's, for the app; the recipe stays a recording
	}
	e, err := buildEnv(ctx, o.Env, o.Config, o.Progress)
	if err != nil {
		return "", nil, err
	}
	r, err := run.New(o.Out, filepath.Join(o.Config.StateDir, kind), runName(o.Project, o.Env), o.Bus)
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	dir := r.Dir()
	if o.Started != nil {
		o.Started(dir)
	}
	store, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		return dir, nil, err
	}
	project, dropStart, err := envStart(e, o.Project, dir)
	if err != nil {
		return dir, nil, err
	}
	defer dropStart()
	start, err := store.Snap(ctx, project, "start")
	if err != nil {
		return dir, nil, fmt.Errorf("taking the project's capsule: %v", err)
	}
	a, _ := agent.ByName(o.Side.Agent)
	rec := &run.Recipe{Tare: o.Version, Argv: o.Argv, Kind: "record", Time: time.Now().UTC(), Project: o.Project, Fingerprint: start.Root, Env: recipeEnv(e, o.Project == ""),
		Prompt: o.Prompt, Check: o.Check, CheckTimeout: o.CheckTimeout.Seconds(), AgentTimeout: o.AgentTimeout.Seconds(),
		Sides: []journal.Side{o.Side}, Runs: 1, Jobs: 1, Keep: true, CheckRoom: run.NewCheckRoom(o.Config, o.CheckOnHost),
		Agents: map[string]run.RecipeAgent{o.Side.Agent: {Version: installs[o.Side.Agent].Version, Bin: installs[o.Side.Agent].Bin, Snapshots: agent.HookKind(a)}}}
	if o.Caps.Set() {
		rec.Caps = &o.Caps
	}
	if o.scriptText != "" {
		rec.Script, rec.ScriptText, rec.Seed = o.scriptName, o.scriptText, run.Seed(o.Seed)
	} else if o.Script != "" {
		text, err := os.ReadFile(o.Script)
		if err != nil {
			return dir, nil, fmt.Errorf("--script %s: %v", o.Script, err)
		}
		rec.Script, rec.ScriptText = o.Script, string(text)
		rec.Seed = run.Seed(o.Seed)
	}
	if o.cliff != nil {
		if err := rec.SetSettings(cliffKey, o.cliff); err != nil {
			return dir, nil, err
		}
	}
	if err := run.WriteRecipe(dir, rec); err != nil {
		return dir, nil, err
	}
	if err := r.Emit(journal.Event{RunStarted: &journal.RunStarted{Kind: kind, Project: o.Project, Prompt: o.Prompt, Check: o.Check, CheckRoom: checkWhere(rec), Sides: rec.Sides, Budget: 1, Jobs: 1, Simulated: rec.ScriptText != ""}}); err != nil {
		return dir, nil, err
	}
	if err := probeSides(ctx, r, rec.Sides, project, o.Config, o.AllowDirty, o.Progress); err != nil {
		_ = r.Emit(journal.Event{RunFinished: &journal.RunFinished{Error: err.Error()}})
		return dir, nil, err
	}
	env, stop, err := newTailEnv(r, store, rec, installs, o.Config)
	if err != nil {
		return dir, nil, err
	}
	defer stop()
	if err := r.Emit(journal.Event{Phase: &journal.Phase{Name: "original"}}); err != nil {
		return dir, nil, err
	}
	recording, err := record(ctx, env, o.Side, o.Prompt, start)
	if err != nil {
		_ = r.Emit(journal.Event{RunFinished: &journal.RunFinished{Error: err.Error()}})
		return dir, nil, err
	}
	_, err = finishRecord(r, rec, recording)
	return dir, recording, err
}

// finishRecord writes a finished recording's report and journals the run's end.
func finishRecord(r *run.Run, rec *run.Recipe, recording *journal.Recording) (string, error) {
	check := ""
	if rec.Check != "" {
		check = fmt.Sprintf("  check     %s\n%s", rec.Check, checkReportLines(rec, "            "))
	}
	report := journal.Printable(fmt.Sprintf("tare record · %s\n  task      %s\n  agent     %s (%s; capsules from %s)\n%s  steps     %d\n%s",
		startLabel(rec), rec.Prompt, sideLabel(rec.Sides[0]), recording.Exit, recording.Snapshots, check, len(recording.Steps), stepSummary(recording)))
	if st := recording.Stopped; st != nil {
		report += journal.Printable("  stopped   " + st.Line() + "\n            the provider, not the agent, ended this run: its last steps say nothing about the agent; record it again\n")
	}
	if m := recording.Metered; m != nil && m.OverBudget != "" {
		report += journal.Printable("  stopped   over budget: " + m.OverBudget + "\n            the cap, not the agent, ended this recording: its last steps say nothing about the agent\n")
	}
	if m := recording.Metered; m != nil {
		report += journal.Printable("  metered   "+m.Line()+"\n") + "  hosts     each room's reach, allowed or refused: original/" + HostsFile + ", tails/<id>/" + HostsFile + "\n"
	}
	if err := run.WriteFile(filepath.Join(r.Dir(), "report.txt"), []byte(report)); err != nil {
		return "", err
	}
	return report, r.Emit(journal.Event{RunFinished: &journal.RunFinished{Report: report}})
}

// TailOptions continues a recorded run from one of its steps.
type TailOptions struct {
	Dir  string
	Step int
	// How is journal.HowNative (the recorded agent's own session, cut after the step) or
	// journal.HowHandoff.
	How journal.How
	// Agent continues a handoff (default: the recorded agent).
	Agent string
	Args  []string
	// CheckOnHost runs this tail's check on the host (an opt-in for this tail alone; a
	// recording made with --check-on-host has every tail's check on the host already).
	CheckOnHost bool
	// FromNearest allows a step with no capsule of its own: the tail starts from the nearest
	// earlier step's capsule, and says so.
	FromNearest bool
	// Caps, when set, replace the recording's --max-cost/--max-tokens for this tail.
	Caps   run.Caps
	Config *config.Config
	Bus    *journal.Bus
}

// Tail continues a recorded run from a step in a fresh room, runs the recipe's check and
// records the tail in the run's journal. It returns the tail's result.
func Tail(ctx context.Context, o TailOptions) (journal.TailResult, error) {
	recipe, err := run.ReadRecipe(o.Dir)
	if err != nil {
		return journal.TailResult{}, err
	}
	if recipe.Kind != "record" {
		return journal.TailResult{}, fmt.Errorf("%s: tare tail continues a recorded run (tare record); this is a %s run", o.Dir, recipe.Kind)
	}
	continuing := []string{o.Agent}
	if o.Agent == "" {
		continuing = slices.Collect(maps.Keys(recipe.Agents)) // the recorded agent
	}
	if err := o.Caps.Check(recipe.ScriptText, continuing...); err != nil {
		return journal.TailResult{}, err
	}
	if o.Caps.Set() {
		recipe.Caps = &o.Caps
	}
	if o.CheckOnHost {
		recipe.CheckRoom = run.CheckRoom{OnHost: true}
	}
	if err := checkPreflight(recipe.Check, o.CheckOnHost, recipe.CheckRoom, filepath.Join(o.Dir, run.RecipeFile)); err != nil {
		return journal.TailResult{}, err
	}
	recording, err := journal.ReadRecording(o.Dir)
	if err != nil {
		return journal.TailResult{}, err
	}
	side := journal.Side{Key: "a", Agent: recording.Agent, Args: recording.Args}
	if o.Agent != "" && o.Agent != recording.Agent {
		side = journal.Side{Key: "b", Agent: o.Agent, Args: o.Args}
	}
	installs, err := findInstalls([]journal.Side{side}, o.Config)
	if err != nil {
		return journal.TailResult{}, err
	}
	r, err := run.Open(o.Dir, o.Bus)
	if err != nil {
		return journal.TailResult{}, err
	}
	defer r.Close()
	store, err := capsule.Open(filepath.Join(o.Dir, "store"))
	if err != nil {
		return journal.TailResult{}, err
	}
	n := 0
	for id := range r.Snapshot().Tails {
		if strings.HasPrefix(id, fmt.Sprintf("%s-%d-", o.How, o.Step)) {
			n++
		}
	}
	spec, err := tailFrom(recording, side, o.Step, o.How, fmt.Sprintf("%s-%d-%s-%d", o.How, o.Step, side.Agent, n), o.FromNearest)
	if err != nil {
		return journal.TailResult{}, err
	}
	env, stop, err := newTailEnv(r, store, recipe, installs, o.Config)
	if err != nil {
		return journal.TailResult{}, err
	}
	defer stop()
	if err := runTail(ctx, env, spec); err != nil {
		return journal.TailResult{}, err
	}
	res, _ := readResult(filepath.Join(o.Dir, "tails", spec.ID))
	return res, nil
}

// newTailEnv is what a run's tails share, with tare's model server started when the recipe
// has a script; stop ends the server.
func newTailEnv(r *run.Run, store *capsule.Store, rec *run.Recipe, installs map[string]agent.Install, cfg *config.Config) (*tailEnv, func(), error) {
	env := &tailEnv{run: r, store: store, recipe: rec, cfg: cfg, installs: installs}
	if rec.ScriptText == "" {
		return env, func() {}, nil
	}
	script, err := modelserver.ParseScript([]byte(rec.ScriptText), rec.Script)
	if err != nil {
		return nil, nil, err
	}
	log, err := journal.OpenNoFollow(filepath.Join(r.Dir(), "model-requests.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("model server log: %v", err)
	}
	srv, err := modelserver.New(modelserver.Options{Script: script, Seed: rec.Seed, Log: log})
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		log.Close()
		return nil, nil, err
	}
	env.upstream, env.models = srv.Addr(), srv
	return env, func() { srv.Close(); log.Close() }, nil
}

// upstreamFor is the model address the agent of one tail attempt (or the recording) talks
// to: on tare's model server, a draw stream of its own, so every tail samples the script's
// branches independently of the others, as calls to a real model would, and the run replays
// from its recorded seed.
func (env *tailEnv) upstreamFor(stream string) (string, error) {
	if env.models == nil {
		return env.upstream, nil
	}
	return env.models.Stream(stream)
}
