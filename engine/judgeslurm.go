package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/engine/journal"
)

// judgeCluster runs a judge-noise run's judgements as Slurm jobs (--on slurm): each
// judgement one job whose worker restores the page's staged folder onto the node, proves its
// room clean and runs the judge in the same room as here (judgeIn); the judgement comes
// back as the job's result. The journal gets each job's place (pending, running on a node,
// finished) under the judgement's id.
type judgeCluster struct {
	b  *slurmBackend
	mu sync.Mutex
	// pages are the staged folders already in the shared store: a page judged K times goes
	// there once.
	pages map[string]capsule.Capsule
}

// newJudgeCluster opens the Slurm backend of the judge-noise run in o.Out (the run's
// preflight has passed).
func newJudgeCluster(o JudgeOptions) (*judgeCluster, error) {
	b, err := newSlurmBackend(o.Config, o.Out, o.AllowDirty)
	if err != nil {
		return nil, err
	}
	return &judgeCluster{b: b, pages: map[string]capsule.Capsule{}}, nil
}

// page is stage's capsule in the shared store, put there on first use.
func (c *judgeCluster) page(ctx context.Context, stage string) (capsule.Capsule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.pages[stage]; ok {
		return s, nil
	}
	s, err := c.b.shareDir(ctx, stage, "judge-page")
	if err == nil {
		c.pages[stage] = s
	}
	return s, err
}

// close lets go of the exchange server and the run's folder below the shared directory:
// every job has ended (or was cancelled) by then, and a judge-noise run is not resumed.
func (c *judgeCluster) close() error {
	if c == nil {
		return nil
	}
	return c.b.release()
}

// judgeOnSlurm runs one judgement (its draw stream "judge-P-K") as a job.
func (env *judgeEnv) judgeOnSlurm(ctx context.Context, stage, stream, upstream string, blocked bool) Judgement {
	began := time.Now()
	failed := func(err error) Judgement {
		return Judgement{Error: err.Error(), Seconds: time.Since(began).Seconds()}
	}
	start, err := env.slurm.page(ctx, stage)
	if err != nil {
		return failed(err)
	}
	// The stream "judge-P-K" is judgement P-K, whose journal id is "pP-K" (judgementID).
	id := "p" + strings.TrimPrefix(stream, "judge-")
	job := slurmJob{Config: env.o.Config, Installs: map[string]agent.Install{env.agent.Name(): env.inst}, Upstream: upstream,
		Judge: &judgeTask{Agent: env.agent.Name(), Args: env.args, Page: env.o.Page, Rubric: env.o.Rubric, Blocked: blocked, Timeout: env.o.Timeout}}
	wr, err := env.slurm.b.runTask(ctx, task{name: id + ".0", what: "judgement " + id, runDir: env.o.Out, job: job, start: &start,
		tick: func(string) {}, placed: func(p journal.Placed) {
			p.Tail = id
			env.journal.placed(p)
		}})
	if err != nil {
		return failed(err)
	}
	if wr.Judgement == nil {
		return failed(errors.New("the worker on " + wr.Node + " sent no judgement"))
	}
	return *wr.Judgement
}

// placed journals a judgement's place on the cluster.
func (j *judgeJournal) placed(p journal.Placed) {
	if j != nil {
		_ = j.r.emit(journal.Event{Placed: &p})
	}
}
