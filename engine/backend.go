package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"tare/config"
	"tare/engine/journal"
	"tare/engine/run"
)

// A backend runs the body of one tail attempt: restoring its workspace, the agent's room and
// the check's room, filling res with the outcome. runTail around it journals the start and
// the end, writes result.json and takes the end capsule the same way whichever backend ran
// the body, so nothing above the engine knows where a tail ran except from a Placed event.
type backend interface {
	// body returns how the agent ended and what the check said, as tailBody does.
	body(ctx context.Context, env *tailEnv, spec tailSpec, dir string, res *journal.TailResult) (agentExit, check string)
	// resume is the follow-up of a tail whose latest attempt the journal has as running and
	// which the backend can still reach (a Slurm job submitted before tare was killed), with
	// that attempt's start; ok is false when the tail is to be started anew.
	resume(env *tailEnv, spec *tailSpec) (follow bodyFunc, began time.Time, ok bool)
	// judge runs judgement w of a judge-noise run, its page staged in stage and its judge
	// talking to upstream (blocked: the page asked for something the room refused).
	judge(ctx context.Context, env *judgeEnv, stage, upstream string, blocked bool, w judgeWork) Judgement
	// reattach follows judgement w, submitted by a tare that was killed, to its end and takes
	// its judgement; a resume asks only for the judgements attachedJob found still submitted.
	reattach(ctx context.Context, env *judgeEnv, w judgeWork) Judgement
	// finish lets go of what the backend holds once the run has its report (err, the
	// report's own error, is nil), and returns err or the release's own error. Until then it
	// is kept, so a tare resume after a crash finds it.
	finish(err error) error
}

// localBackend runs tails in this process's rooms: tare's own goroutines.
type localBackend struct{}

func (localBackend) body(ctx context.Context, env *tailEnv, spec tailSpec, dir string, res *journal.TailResult) (string, string) {
	return tailBody(ctx, env, spec, dir, res)
}

// resume finds nothing: a tail that ran in this process's rooms ended with the process.
func (localBackend) resume(*tailEnv, *tailSpec) (bodyFunc, time.Time, bool) {
	return nil, time.Time{}, false
}

// judge runs the judgement in a fresh room of this machine.
func (localBackend) judge(ctx context.Context, env *judgeEnv, stage, upstream string, blocked bool, _ judgeWork) Judgement {
	return env.judgeIn(ctx, stage, upstream, blocked)
}

// reattach has nothing to follow: a judgement that ran in this process's rooms ended with
// the process, and attachedJob finds no job for a run made here.
func (localBackend) reattach(context.Context, *judgeEnv, judgeWork) Judgement {
	return Judgement{Error: "no job to re-attach to: the judgement ran on this machine"}
}

// finish has nothing to let go of.
func (localBackend) finish(err error) error { return err }

// The backends --on names.
const (
	OnLocal = "local"
	OnSlurm = "slurm"
)

// CheckOn refuses an --on value that is not a backend, naming the flag and the fix.
func CheckOn(on string) error {
	switch on {
	case "", OnLocal, OnSlurm:
		return nil
	}
	return fmt.Errorf("--on %q: not a backend; fix: give %s", on, strings.Join([]string{OnLocal, OnSlurm}, " or "))
}

// runner is the backend the env's tails run through: local unless one was set.
func (env *tailEnv) runner() backend {
	if env.backend == nil {
		return localBackend{}
	}
	return env.backend
}

// onRecipe is the recipe's record of --on: empty for this machine, so older recipes and
// local runs read the same.
func onRecipe(on string) string {
	if on == OnLocal {
		return ""
	}
	return on
}

// onPreflight refuses an --on that could not run a tail, before anything is written: an
// unknown backend, or a Slurm that is missing, down, without the partition, or whose nodes
// do not see the shared directory.
func onPreflight(on string, cfg *config.Config) error {
	if err := CheckOn(on); err != nil {
		return err
	}
	if on != OnSlurm {
		return nil
	}
	return SlurmPreflight(context.Background(), cfg, true)
}

// allowDirty is whether the run's probes were let through dirty (--allow-dirty): a worker
// then runs in a node's room whose reading is not clean, as the operator chose.
func allowDirty(r *run.Run) bool {
	for _, p := range r.Snapshot().Probes {
		if !p.Zero {
			return true
		}
	}
	return false
}

// bodyFunc is a backend's body, or a re-attached job's follow-up.
type bodyFunc func(ctx context.Context, env *tailEnv, spec tailSpec, dir string, res *journal.TailResult) (string, string)

// resume follows the tail's job when its latest attempt's is still on the cluster, or
// collects it when it finished meanwhile.
func (b *slurmBackend) resume(env *tailEnv, spec *tailSpec) (bodyFunc, time.Time, bool) {
	t := env.run.Snapshot().Tails[spec.ID]
	if t == nil || t.Status != journal.StatusRunning {
		return nil, time.Time{}, false
	}
	x := b.exchange(spec.ID, t.Attempt.N)
	id, ok := submittedJob(x)
	if !ok {
		return nil, time.Time{}, false
	}
	spec.Attempt = t.Attempt.N
	calls := t.Calls
	return func(ctx context.Context, env *tailEnv, spec tailSpec, dir string, res *journal.TailResult) (string, string) {
		meter, stop, lost := b.revive(env, spec, x)
		defer stop()
		exit, check := b.follow(ctx, env, spec, x, id, dir, res, calls)
		exit, check = overRun(meter, res, exit, check)
		if lost != "" && res.Status != journal.StatusPassed {
			exit += "; " + lost
		}
		return exit, check
	}, t.Started, true
}

// finish lets go of the exchange server and the run's folder below the shared directory
// (release), once the run has its report.
func (b *slurmBackend) finish(err error) error {
	if err != nil {
		return err
	}
	return b.release()
}
