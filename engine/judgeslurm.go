package engine

import (
	"context"
	"fmt"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/engine/journal"
)

// A judge-noise run made --on slurm runs its judgements through the slurmBackend as its
// tails do: each judgement one job whose worker restores the page's staged folder onto the
// node, proves its room clean and runs the judge in the same room as here (judgeIn); the
// judgement comes back as the job's result. The journal gets each job's place (pending,
// running on a node, finished) under the judgement's id.

// judgeBackend is where the judge-noise run in o.Out runs its judgements: this machine, or
// Slurm (the run's preflight has passed).
func judgeBackend(o JudgeOptions, on string) (backend, error) {
	if on != OnSlurm {
		return localBackend{}, nil
	}
	return newSlurmBackend(o.Config, o.Out, o.AllowDirty)
}

// page is stage's capsule in the shared store, put there on first use: a page judged K
// times goes there once.
func (b *slurmBackend) page(ctx context.Context, stage string) (capsule.Capsule, error) {
	b.pagesMu.Lock()
	defer b.pagesMu.Unlock()
	if s, ok := b.pages[stage]; ok {
		return s, nil
	}
	s, err := b.shareDir(ctx, stage, "judge-page")
	if err == nil {
		if b.pages == nil {
			b.pages = map[string]capsule.Capsule{}
		}
		b.pages[stage] = s
	}
	return s, err
}

// judge runs judgement w (its page staged in stage, whose judge talks to upstream) as a job.
func (b *slurmBackend) judge(ctx context.Context, env *judgeEnv, stage, upstream string, blocked bool, w judgeWork) Judgement {
	began := time.Now()
	start, err := b.page(ctx, stage)
	if err != nil {
		return Judgement{Error: err.Error(), Seconds: time.Since(began).Seconds()}
	}
	t := env.slurmTask(w, upstream, blocked)
	t.start = &start
	wr, err := b.runTask(ctx, t)
	return slurmJudgement(wr, err, began)
}

// reattach follows judgement w's job, submitted by a tare that was killed, to its end and
// takes its judgement (at once when the job finished meanwhile): no second job is
// submitted. On tare's model server started again, the judgement's stream is served anew on
// the address the job's room dials, so a judge that was waiting on its model goes on.
func (b *slurmBackend) reattach(ctx context.Context, env *judgeEnv, w judgeWork) Judgement {
	began := time.Now()
	upstream, err := env.upstream(w)
	if err != nil {
		return Judgement{Error: err.Error()}
	}
	x := b.exchange(judgementID(w.page, w.k), w.attempt)
	stop, lost := reviveJobModel(x, upstream)
	defer stop()
	wr, err := b.finishTask(ctx, env.slurmTask(w, upstream, false), x, w.job)
	j := slurmJudgement(wr, err, began)
	if lost != "" && j.Score == nil {
		j.Error += "; " + lost
	}
	return j
}

// slurmTask is judgement w's job: its exchange folder is named for the judgement and its
// attempt ("p1-2.0"), as a tail's is, so a resume finds the job of the attempt it re-attaches.
func (env *judgeEnv) slurmTask(w judgeWork, upstream string, blocked bool) task {
	id := judgementID(w.page, w.k)
	job := slurmJob{Config: env.o.Config, Installs: map[string]agent.Install{env.agent.Name(): env.inst}, Upstream: upstream,
		Judge: &judgeTask{Agent: env.agent.Name(), Args: env.args, Page: env.o.Page, Rubric: env.o.Rubric, Blocked: blocked, Timeout: env.o.Timeout}}
	return task{name: fmt.Sprintf("%s.%d", id, w.attempt), what: "judgement " + id, runDir: env.o.Out, job: job,
		tick: func(string) {}, placed: func(p journal.Placed) {
			p.Tail = id
			env.journal.placed(p)
		}}
}

// slurmJudgement is the judgement a job's worker sent back, or why there is none.
func slurmJudgement(wr slurmResult, err error, began time.Time) Judgement {
	switch {
	case err != nil:
		return Judgement{Error: err.Error(), Seconds: time.Since(began).Seconds()}
	case wr.Judgement == nil:
		return Judgement{Error: "the worker on " + wr.Node + " sent no judgement", Seconds: time.Since(began).Seconds()}
	}
	return *wr.Judgement
}

// placed journals a judgement's place on the cluster. A write that fails is the run's
// (err), which stops the run once the judgement returns.
func (j *judgeJournal) placed(p journal.Placed) {
	if j != nil {
		_ = j.r.Emit(journal.Event{Placed: &p}) // kept in j.r.Err(), read by the pool
	}
}
