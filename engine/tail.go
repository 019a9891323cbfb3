package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
	"tare/sandbox"
)

// DefaultAgentTimeout bounds one agent run in a tail.
const DefaultAgentTimeout = 30 * time.Minute

// tailSpec is one tail to run: a side continuing a capsule.
type tailSpec struct {
	ID     string
	Side   journal.Side
	Step   int
	How    journal.How
	Prompt string
	Start  capsule.Capsule
	// Session and SessionID, for a native tail: the recorded session cut after Step.
	Session   []byte
	SessionID string
	// Attempt is the tail's attempt number; each attempt draws the script's branches anew.
	Attempt int
	// Nearest, when set, is the step whose capsule Start is: Step has none of its own.
	Nearest *int
}

// tailEnv is what every tail of a run shares.
type tailEnv struct {
	run      *run.Run
	store    *capsule.Store
	recipe   *run.Recipe
	cfg      *config.Config
	upstream string // tare's model server, or "" for real providers
	models   *modelserver.Server
	installs map[string]agent.Install
	// backend runs each tail's body (nil: in this process, see backend.go).
	backend backend
	// budget is the run's --run-max-cost/--run-max-tokens, made once (see runBudget).
	budget     *modelserver.Budget
	budgetOnce sync.Once
	// image is the recipe's environment image every room of the run is rooted in (nil: the
	// host's), resolved once (roomImage).
	image     *sandbox.Image
	imageErr  error
	imageOnce sync.Once
}

// runTail runs one attempt of a tail to its outcome and records it. An error is returned only
// when the run itself cannot go on (its journal cannot be written); a tail that fails for
// its own reasons is recorded as failed or with no verdict and the run goes on.
func runTail(ctx context.Context, env *tailEnv, spec tailSpec) error {
	dir := filepath.Join(env.run.Dir(), "tails", spec.ID)
	if body, began, ok := env.runner().resume(env, &spec); ok {
		// A resume finds this attempt's job still on the cluster (or finished there): it is
		// followed to its end, not started again.
		return endTail(ctx, env, spec, dir, began, body)
	}
	attempt, err := setAside(dir)
	if err != nil {
		return err
	}
	spec.Attempt = attempt
	if err := os.MkdirAll(filepath.Join(dir, "session"), 0o755); err != nil {
		return err
	}
	if err := env.run.Emit(journal.Event{TailStarted: &journal.TailStarted{ID: spec.ID, Side: spec.Side.Key, Step: spec.Step, How: spec.How,
		Attempt: attempt, CapsuleFrom: spec.Nearest}}); err != nil {
		return err
	}
	return endTail(ctx, env, spec, dir, time.Now(), env.runner().body)
}

// endTail runs a started attempt's body to its outcome, under the kill watch, and records it:
// result.json, the end capsule, the journal's TailFinished.
func endTail(ctx context.Context, env *tailEnv, spec tailSpec, dir string, began time.Time, body bodyFunc) error {
	res := journal.TailResult{ID: spec.ID, Side: spec.Side.Key, Agent: spec.Side.Agent, Step: spec.Step, How: spec.How, Attempt: spec.Attempt,
		Status: journal.StatusNoVerdict, Reason: journal.ReasonNotStarted, CapsuleFrom: spec.Nearest}
	tctx, kill := context.WithCancelCause(ctx)
	stopWatch := run.WatchKill(ctx, env.run.Dir(), spec.ID, kill)
	res.AgentExit, res.Check = body(tctx, env, spec, dir, &res)
	stopWatch()
	kill(nil)
	res.Seconds = time.Since(began).Seconds()
	if err := env.run.Err(); err != nil {
		// The live stream (or a watch) could not journal: the run stops, as Emit's contract
		// says, and tare resume reruns this tail.
		return fmt.Errorf("%s: the journal cannot be written, so the run stops: %v", env.run.Dir(), err)
	}
	if ctx.Err() != nil {
		return ctx.Err() // stopped, not finished: tare resume reruns it
	}
	if errors.Is(context.Cause(tctx), journal.ErrKilled) && res.Reason != journal.ReasonKilled {
		// Killed during the check: whatever the check had said, it did not finish.
		res.Passed, res.Status, res.Reason, res.Score = false, journal.StatusNoVerdict, journal.ReasonKilled, nil
		res.Check = "check stopped: " + journal.ErrKilled.Error()
	}
	if res.Reason == journal.ReasonKilled {
		res.Kill = journal.KillAnswer(context.Cause(tctx)) // how the operator said it counts
	}
	if data, err := json.MarshalIndent(res, "", "  "); err == nil {
		if err := run.WriteFile(filepath.Join(dir, "result.json"), append(data, '\n')); err != nil {
			return err
		}
	}
	// The finished workspace as a capsule: the app shows its diff against the start, and it
	// costs only what the tail changed.
	if _, err := os.Stat(filepath.Join(dir, "work")); err == nil {
		if _, err := env.store.Snap(ctx, filepath.Join(dir, "work"), spec.ID+"-end"); err != nil {
			res.Check += "; no end capsule: " + err.Error()
		}
	}
	if !env.recipe.Keep && env.recipe.Check != "" {
		_ = os.RemoveAll(filepath.Join(dir, "work"))
	}
	return env.run.Emit(journal.Event{TailFinished: res.Finished()})
}

// tailBody restores the workspace, runs the agent in a room and, when the agent's end can
// say something about it, the check in a room of its own. It returns how the agent ended and
// what the check said, and fills res with the outcome.
func tailBody(ctx context.Context, env *tailEnv, spec tailSpec, dir string, res *journal.TailResult) (string, string) {
	notStarted := func(why string) (string, string) {
		res.Status, res.Reason = journal.StatusNoVerdict, journal.ReasonNotStarted
		return "not started: " + why, "not checked"
	}
	work := filepath.Join(dir, "work")
	if err := env.store.Restore(ctx, spec.Start, work); err != nil {
		return notStarted(fmt.Sprintf("capsule %d could not be restored: %v", spec.Start.Step, err))
	}
	a, err := agent.ByName(spec.Side.Agent)
	if err != nil {
		return notStarted(err.Error())
	}
	inst := env.installs[a.Name()]
	image, err := env.roomImage(ctx)
	if err != nil {
		return notStarted(err.Error())
	}
	p := room.Plan{Agent: a, Inst: inst, Config: env.cfg, Workspace: work, Sessions: filepath.Join(dir, "session"), Login: env.upstream == "", Image: image}
	if spec.How == journal.HowNative {
		if err := room.PlaceSession(&p, spec.Session, spec.SessionID); err != nil {
			return notStarted(err.Error())
		}
	}
	upstream, err := env.upstreamFor(fmt.Sprintf("%s@%d", spec.ID, spec.Attempt))
	if err != nil {
		return notStarted(err.Error())
	}
	upstream, meter, err := env.meterFor(upstream, true)
	if err != nil {
		return notStarted(err.Error())
	}
	if meter != nil {
		defer meter.Close()
	}
	box, setup, err := room.Build(p, upstream)
	if err != nil {
		return notStarted(err.Error())
	}
	if meter == nil {
		if meter, err = env.interceptRoom(&box, &setup, true); err != nil {
			return notStarted(err.Error())
		}
		if meter != nil {
			defer meter.Close()
		} else if c := env.recipe.Caps; c != nil && c.Set() {
			return notStarted(a.Name() + "'s model calls go to no host tare's relay reads, so its caps cannot hold; drop --max-cost/--max-tokens for it")
		}
	}
	hosts, err := run.CreateFile(hostLog(dir))
	if err != nil {
		return notStarted(err.Error())
	}
	defer hosts.Close()
	box.HostLog = hosts
	args := append(append(setup.Args, env.cfg.Agents[a.Name()].Args...), spec.Side.Args...)
	if spec.How == journal.HowNative {
		box.Argv = append([]string{inst.Command}, a.ResumeArgs(spec.SessionID, spec.Prompt, args)...)
	} else {
		box.Argv = append([]string{inst.Command}, a.RunArgs(spec.Prompt, args)...)
	}
	stdout, err := run.CreateFile(filepath.Join(dir, "stdout.jsonl"))
	if err != nil {
		return notStarted(err.Error())
	}
	defer stdout.Close()
	stderr, err := run.CreateFile(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return notStarted(err.Error())
	}
	defer stderr.Close()
	live := newLiveStream(a, spec.ID, env.run)
	code, timedOut, err := env.runAgent(ctx, box, stdout, stderr, live)
	out, _ := os.ReadFile(filepath.Join(dir, "stdout.jsonl"))
	errOut, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
	// A room that never started has no exit code; one whose command could not be run
	// (the relay's 127) wrote nothing on stdout.
	end := agentEnd{started: (err == nil || code >= 0) && !(code == 127 && len(out) == 0), produced: live.producedAny(), timedOut: timedOut > 0}
	ran := fmt.Sprintf("agent exit %d", code)
	switch {
	case timedOut > 0: // runRoom also reports the stop as an error
		ran = fmt.Sprintf("agent stopped after %s", timedOut.Round(time.Second))
	case !end.started && err != nil:
		ran = "agent did not start: " + err.Error()
	case !end.started:
		ran = fmt.Sprintf("agent did not start (exit %d): %s", code, run.Clip(lastLine(string(errOut)), 160))
	case err != nil:
		ran += " (" + err.Error() + ")"
	}
	res.Calls = live.calls()
	clean := code == 0 && timedOut == 0
	if r, err := a.ParseStream(bytes.NewReader(out)); err == nil {
		res.Session = r.SessionID
		u := runUsage(a, r, spec.Session, p.Sessions)
		res.Usage = usageOf(u, runModels(a, r, u, spec.Session, p.Sessions)...)
		if r.IsError && code == 0 {
			ran, clean = "agent error: "+run.Clip(r.Error, 100), false
		}
	}
	if stop, ok := agent.ProviderStopped(a, out, errOut); ok && end.started {
		end.stop = &stop
		ran = fmt.Sprintf("ended by the provider (%s): %s", stop.Kind, run.Clip(stop.Detail, 120))
	}
	if res.Metered = metered(meter, res.Usage); res.Metered != nil && res.Metered.OverBudget != "" && end.started {
		end.overBudget = true
		ran = fmt.Sprintf("over budget after %d model calls: %s", res.Metered.Calls, res.Metered.OverBudget)
	}
	killed := errors.Is(context.Cause(ctx), journal.ErrKilled)
	if killed {
		ran = fmt.Sprintf("%s after %d calls", journal.ErrKilled, res.Calls)
	}
	if reason, ok := withoutVerdict(end, killed); ok {
		res.Status, res.Reason = journal.StatusNoVerdict, reason
		return ran, "not checked"
	}
	if ctx.Err() != nil {
		return ran, "not checked: the tail was stopped"
	}
	res.Reason = ""
	if env.recipe.Check == "" {
		// Without a check a run counts when its agent ended normally; the workspace is kept.
		res.Passed = clean
		res.Status = map[bool]journal.Status{true: journal.StatusPassed, false: journal.StatusFailed}[res.Passed]
		return ran, "no check"
	}
	// Said, not needed: a journal without it only shows the check as running.
	_ = env.run.Emit(journal.Event{TailChecking: &journal.TailChecking{ID: spec.ID, TimeoutSeconds: env.recipe.CheckTimeout}})
	c := runCheck(ctx, env.recipe.Check, work, time.Duration(env.recipe.CheckTimeout*float64(time.Second)), env.checkRoom(image), env.cfg)
	res.Passed, res.Score, res.CheckUsage, res.Judge = c.Passed, c.Score, c.Usage, c.Judge
	if c.Output != nil {
		// The check's own words: why a tail failed is in them, not in its exit code.
		if err := capsule.WriteFileAtomic(filepath.Join(dir, CheckLogFile), c.Output, 0o644); err != nil {
			c.Detail += "; check.log not written: " + err.Error()
		}
		res.CheckLog = journal.LastLines(c.Output, checkLogLines)
	}
	res.Status, res.Reason = checkOutcome(c)
	return ran, c.Detail
}

// runAgent runs an agent's room with its stdout teed to live, under the recipe's agent
// timeout. timedOut is that timeout when it, not ctx, ended the agent, and zero otherwise.
func (env *tailEnv) runAgent(ctx context.Context, box sandbox.Room, stdout, stderr io.Writer, live *liveStream) (code int, timedOut time.Duration, err error) {
	box.Stdout, box.Stderr = teeLines(stdout, live), stderr
	timeout := time.Duration(env.recipe.AgentTimeout * float64(time.Second))
	if timeout <= 0 {
		timeout = DefaultAgentTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	actx, stop := context.WithCancelCause(actx)
	defer stop(nil)
	live.stop = stop
	floor := config.DefaultStallFloor
	if env.cfg != nil {
		floor = env.cfg.Tails.Floor()
	}
	stall := run.WatchStall(env.run, live.tail, floor)
	live.beat = stall.Beat
	code, err = room.Run(actx, box)
	stall.End()
	live.flush()
	if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		timedOut = timeout
	}
	return code, timedOut, err
}

// setAside moves the folder of an earlier attempt of a tail (one a crash interrupted) out of
// the way, keeping it, and returns this attempt's number.
func setAside(dir string) (int, error) {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return 0, nil
	}
	for n := 1; ; n++ {
		old := fmt.Sprintf("%s.attempt-%d", dir, n)
		if _, err := os.Stat(old); os.IsNotExist(err) {
			if err := os.Rename(dir, old); err != nil {
				return 0, fmt.Errorf("setting aside an interrupted tail: %v", err)
			}
			return n, nil
		}
	}
}

// runUsage is the usage of one run of agent a as tare prices it: its own tokens (a resumed
// Codex thread reports the running total, placed is the session it resumed) under the
// model its session file names where the stream names none.
func runUsage(a agent.Agent, r agent.Result, placed []byte, sessions string) agent.Usage {
	u := agent.OwnUsage(r.Usage, placed)
	if n, ok := a.(agent.ModelNamer); ok && u.Model == "" {
		if data, err := room.ReadSession(a, sessions, r.SessionID); err == nil {
			u.Model = n.SessionModel(data)
		}
	}
	return u
}

// usageOf turns an agent's reported usage into tare's, with tare's own cost beside the
// CLI's figure when it reported one; models, where the agent gives them, are priced each.
func usageOf(u agent.Usage, models ...agent.ModelUsage) journal.Usage {
	out := journal.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Model: u.Model}
	out.Cost, out.Unpriced = priceUsage(u, models, time.Now())
	if u.CostReported {
		c := u.CostUSD
		out.Reported = &c
	}
	return out
}
