package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/run"
)

// Jobs of --on slurm that are not tails: one judgement of a judge-noise run (judgeTask) or
// one workshop writer (writerTask). They travel as a tail does: a folder goes out as the
// job's start capsule through the shared store (or over HTTP), the worker restores it onto
// node-local disk, proves the node's room clean, runs the same room it would run here, and
// sends back its result and, for a writer, an end capsule of everything it made; both ends
// check every object against its hash.

// judgeTask is one judgement: the start capsule is the judge's staged folder.
type judgeTask struct {
	Agent   string        `json:"agent"`
	Args    []string      `json:"args,omitempty"`
	Page    string        `json:"page"`
	Rubric  Rubric        `json:"rubric"`
	Blocked bool          `json:"blocked,omitempty"`
	Timeout time.Duration `json:"timeout"`
}

// writerTask is one workshop writer's session: the start capsule holds work/ (the room's
// /work) and session/ (its session folder, for a resumed session).
type writerTask struct {
	Agent    string        `json:"agent"`
	Model    string        `json:"model,omitempty"`
	Args     []string      `json:"args,omitempty"`
	ReadOnly []string      `json:"read_only,omitempty"`
	Prompt   string        `json:"prompt"`
	Resume   string        `json:"resume,omitempty"`
	Timeout  time.Duration `json:"timeout"`
	Env      *run.Env      `json:"env,omitempty"`
}

// What a writer's end capsule holds besides work/ and session/: its stdout and stderr.
const (
	taskEvents = "events.jsonl"
	taskStderr = "stderr.log"
)

// task is one such job as the submitting tare sends it.
type task struct {
	// name is the exchange folder's, unique in the run ("p1-2.0", "w1.0"); what names the
	// job in its script, runDir the run folder in its --comment.
	name, what, runDir string
	job                slurmJob
	// out is the folder sent as the start capsule; end, when set, a folder (not yet there)
	// that receives the end capsule.
	out, end string
	// start, when set, is out's capsule in the shared store already (a page judged K times
	// is shared once).
	start *capsule.Capsule
	// tick is called at every poll with the exchange folder, placed as the job's place changes.
	tick   func(x string)
	placed func(journal.Placed)
}

// taskEnded is why a task's job gave no result: Slurm ended it, the run was stopped, or the
// worker wrote nothing. started is false when no job ran.
type taskEnded struct {
	reason  journal.Reason
	msg     string
	started bool
}

func (e *taskEnded) Error() string { return e.msg }

// runTask submits t's job and follows it to its end, returning the worker's result.
func (b *slurmBackend) runTask(ctx context.Context, t task) (slurmResult, error) {
	x, id, stop, err := b.submitTask(ctx, t)
	if err != nil {
		return slurmResult{}, err
	}
	defer stop()
	return b.finishTask(ctx, t, x, id)
}

// submitTask writes t's job into its exchange folder and submits it: the folder, the job id
// and what stops the model's forward once the job has ended.
func (b *slurmBackend) submitTask(ctx context.Context, t task) (x, id string, stop func(), err error) {
	notStarted := func(err error) (string, string, func(), error) {
		return "", "", nil, &taskEnded{reason: journal.ReasonNotStarted, msg: "not started: " + err.Error()}
	}
	x = filepath.Join(b.root, "tails", t.name)
	if !exchangeName.MatchString(t.name) {
		return notStarted(fmt.Errorf("%q is not a name a job's folder can take", t.name))
	}
	if err := os.RemoveAll(x); err != nil {
		return notStarted(err)
	}
	if err := os.MkdirAll(x, 0o755); err != nil {
		return notStarted(err)
	}
	if t.start == nil {
		start, err := b.shareDir(ctx, t.out, t.name)
		if err != nil {
			return notStarted(err)
		}
		t.start = &start
	}
	job := t.job
	job.Spec.ID, job.Spec.Start, job.Store, job.AllowDirty = t.name, *t.start, b.store.Dir(), b.allowDirty
	upstream, upToken, stopForward, err := b.reachable(job.Upstream)
	if err != nil {
		return notStarted(err)
	}
	job.Upstream, job.UpstreamToken = upstream, upToken
	data, err := json.MarshalIndent(job, "", "  ")
	if err == nil {
		err = capsule.WriteFileAtomic(filepath.Join(x, "job.json"), data, 0o600)
	}
	if err == nil {
		id, err = b.submitJob(ctx, t.what, b.jobName(strings.TrimSuffix(t.name, filepath.Ext(t.name))), t.runDir, x)
	}
	if err != nil {
		stopForward()
		return notStarted(err)
	}
	return x, id, stopForward, nil
}

// finishTask follows t's job id (exchange folder x) to its end and takes the worker's
// result. A job that ended early (cancelled by tare or outside it, at its time limit) is an
// error saying so, with whatever the worker sent back before it ended: a writer's end
// capsule is restored into t.end all the same, so the partial drafts are kept.
func (b *slurmBackend) finishTask(ctx context.Context, t task, x, id string) (slurmResult, error) {
	st, cancelled := b.await(ctx, id, x, func() { t.tick(x) }, t.placed)
	var wr slurmResult
	data, rerr := os.ReadFile(filepath.Join(x, "result.json"))
	if rerr == nil {
		rerr = json.Unmarshal(data, &wr)
	}
	var ended error
	if cancelled {
		ended = &taskEnded{reason: journal.ReasonKilled, msg: fmt.Sprintf("job %s cancelled", id), started: true}
	} else if reason, why, ok := slurmVerdict(st.State); ok {
		ended = &taskEnded{reason: reason, msg: fmt.Sprintf("job %s on %s: %s", id, firstNonEmpty(st.Node, "no node"), why), started: true}
	} else if rerr != nil {
		log := run.Clip(lastLine(readTail(filepath.Join(x, "slurm.out"))), 160)
		if b.http != nil {
			log = "on node " + firstNonEmpty(st.Node, "(none)") + " in " + strings.ReplaceAll(nodeLog, "%j", id)
		}
		return wr, &taskEnded{reason: journal.ReasonNotStarted, started: true, msg: fmt.Sprintf("job %s ended %s without a result (%v); its log: %s",
			id, firstNonEmpty(st.State, "(gone from squeue)"), rerr, log)}
	} else if wr.Result.Reason == ReasonNodeUnfit {
		if wr.Node != "" {
			b.markUnfit(wr.Node)
		}
		return wr, &taskEnded{reason: ReasonNodeUnfit, msg: wr.Result.AgentExit, started: true}
	}
	if rerr == nil && wr.End != nil && t.end != "" {
		// A stopped run's context is done; what came back is brought in regardless.
		ctx := context.WithoutCancel(ctx)
		end := *wr.End
		var err error
		if b.http != nil {
			// Over HTTP the end capsule's new objects came as a stage: imported, every
			// object checked against its hash, before anything is restored from it.
			if end, err = b.importEnd(ctx, x, wr.End.Root); err != nil {
				err = fmt.Errorf("the end capsule from %s was refused: %v", wr.Node, err)
			}
		}
		if err == nil {
			if err = b.store.Restore(ctx, end, t.end); err != nil {
				err = fmt.Errorf("the end capsule from %s could not be restored: %v", wr.Node, err)
			}
		}
		if err != nil && ended == nil {
			return wr, err
		}
	}
	return wr, ended
}

// shareDir snaps a folder of the caller's into the shared store (and, over HTTP, alone into
// the store served to the nodes) as the start capsule of a job.
func (b *slurmBackend) shareDir(ctx context.Context, dir, id string) (capsule.Capsule, error) {
	c, err := b.store.Snap(ctx, dir, id)
	if err != nil {
		return capsule.Capsule{}, fmt.Errorf("copying %s into the shared store %s: %v", dir, b.store.Dir(), err)
	}
	if len(c.Unreadable) > 0 {
		u := c.Unreadable[0]
		return capsule.Capsule{}, fmt.Errorf("%s: %s cannot be kept in the store (%s): refusing to send the folder without it", dir, u.Path, u.Error)
	}
	if b.http != nil {
		out, err := capsule.Open(outStore(b.root, c.Root))
		if err == nil {
			_, err = out.Snap(ctx, dir, id)
		}
		if err != nil {
			return capsule.Capsule{}, fmt.Errorf("%s, to serve it to the nodes: %v", dir, err)
		}
	}
	return c, nil
}

// workTask is the worker's side of a task: the node's room proven clean on the restored
// folder, then the judgement or the writer run in it as tare runs them locally.
func workTask(ctx context.Context, job slurmJob, x, node string) error {
	out := slurmResult{Node: node}
	write := func() error {
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		return capsule.WriteFileAtomic(filepath.Join(x, "result.json"), append(data, '\n'), 0o644)
	}
	unfit := func(why string) error {
		out.Result = journal.TailResult{ID: job.Spec.ID, Status: journal.StatusNoVerdict, Reason: ReasonNodeUnfit,
			AgentExit: fmt.Sprintf("not started on node %s: %s", node, why), Check: "not checked"}
		return write()
	}
	local, store, why := nodeStart(ctx, job)
	if why != "" {
		return unfit(why)
	}
	defer os.RemoveAll(local)
	in := filepath.Join(local, "in")
	if err := store.Restore(ctx, job.Spec.Start, in); err != nil {
		return unfit(fmt.Sprintf("capsule %s could not be restored from %s: %v", job.Spec.Start.ID, job.Store, err))
	}
	name, project := "", in
	if job.Judge != nil {
		name = job.Judge.Agent
	} else {
		name, project = job.Writer.Agent, filepath.Join(in, "work")
	}
	a, err := agent.ByName(name)
	if err != nil {
		return unfit(err.Error())
	}
	inst, ok := job.Installs[name]
	if !ok {
		return unfit("the job names no install of " + name)
	}
	// The probe, once per job, on the folder the room will hold.
	reading, err := probe.Probe(ctx, probe.ProbeOptions{Agent: a, Project: project, Config: job.Config, AllowDirty: job.AllowDirty})
	if err != nil {
		return unfit("its room could not be probed: " + err.Error())
	}
	if !reading.Zero() && !job.AllowDirty {
		return unfit(fmt.Sprintf("its room is not clean (%s); fix: ask the admins what the node adds to every process, or run with --allow-dirty", reading.Verdict()))
	}
	if t := job.Judge; t != nil {
		env := &judgeEnv{o: JudgeOptions{Page: t.Page, Rubric: t.Rubric, Config: job.Config, Timeout: t.Timeout}, agent: a, inst: inst, args: t.Args}
		j := env.judgeIn(ctx, in, job.Upstream, t.Blocked)
		if ctx.Err() != nil {
			return ctx.Err() // cancelled: the submitting tare says why
		}
		out.Judgement = &j
		return write()
	}
	t := job.Writer
	stderr := filepath.Join(local, taskStderr)
	// stdout straight into the exchange folder, so the submitting tare shows it as it grows.
	end, err := RunWriter(ctx, WriterOptions{Agent: t.Agent, Model: t.Model, Args: t.Args, Workspace: project, ReadOnly: t.ReadOnly,
		Sessions: filepath.Join(in, "session"), Prompt: t.Prompt, Resume: t.Resume, Upstream: job.Upstream, Timeout: t.Timeout, Env: t.Env,
		Config: job.Config, Events: filepath.Join(x, "stdout.jsonl"), Stderr: stderr}, inst)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		out.Result = journal.TailResult{ID: job.Spec.ID, Status: journal.StatusNoVerdict, Reason: journal.ReasonNotStarted, AgentExit: "not started: " + err.Error()}
		return write()
	}
	if ctx.Err() != nil {
		// Slurm ended the job (scancel, tare's ctrl+c, its time limit): SIGTERM came first,
		// and the grace before SIGKILL is spent sending back what the room wrote, as a
		// writer stopped at its timeout here keeps its partial draft.
		ctx = context.WithoutCancel(ctx)
		end.Error = fmt.Sprintf("stopped on node %s when Slurm ended its job; the partial draft is kept", node)
	}
	out.Writer = &end
	for from, to := range map[string]string{filepath.Join(x, "stdout.jsonl"): taskEvents, stderr: taskStderr} {
		data, err := os.ReadFile(from)
		if err == nil {
			err = capsule.WriteFileAtomic(filepath.Join(in, to), data, 0o644) // never through a link
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	ends := store
	if job.Stage != "" {
		if ends, err = capsule.OpenStage(job.Stage, job.Store); err != nil {
			return err
		}
	}
	c, err := ends.Snap(ctx, in, job.Spec.ID+"-end")
	if err != nil {
		end.Error = firstNonEmpty(end.Error, "its drafts could not be sent back: "+err.Error())
	} else {
		out.End = &c
	}
	return write()
}

// Cluster runs the workshop's writers as Slurm jobs, one each (tare workshop run --on slurm),
// through the same backend, exchange and worker as a run's tails. Each writer has a folder
// of its own below the shared directory (named in its records folder's cluster.json): two
// tares running other writers of one experiment at once never share or remove each other's.
type Cluster struct {
	cfg *config.Config
}

// OpenCluster refuses a Slurm that could not run a job before anything is written or
// submitted, as every --on slurm does.
func OpenCluster(ctx context.Context, cfg *config.Config) (*Cluster, error) {
	if err := SlurmPreflight(ctx, cfg, true); err != nil {
		return nil, err
	}
	return &Cluster{cfg: cfg}, nil
}

// release lets go of what the backend holds once its jobs have ended: the exchange server
// and its folder below the shared directory (job files, exchange folders, shared store).
func (b *slurmBackend) release() error {
	if b.http != nil {
		b.http.close()
	}
	if err := os.RemoveAll(b.root); err != nil {
		return fmt.Errorf("the jobs are done, but their folder below the shared directory could not be removed: %v; fix: remove %s", err, b.root)
	}
	return nil
}

// RunWriter runs one writer's session as a Slurm job, as RunWriter does here: the writer's
// folder and session folder go to the node, its room is proven clean there and runs the
// agent, and its folder, session, stdout and stderr come back into o's paths (stdout also
// as it grows), hash-checked. An error means the job did not run; how the agent, or Slurm,
// ended it is in WriterEnd. id names the writer; placed hears the job's place.
func (c *Cluster) RunWriter(ctx context.Context, id string, o WriterOptions, inst agent.Install, placed func(journal.Placed)) (end WriterEnd, err error) {
	rec := filepath.Dir(o.Sessions)
	b, err := newSlurmBackend(c.cfg, rec, false)
	if err != nil {
		return WriterEnd{}, err
	}
	defer func() {
		// The job has ended or was cancelled: nothing is left to follow.
		if rerr := b.release(); rerr != nil && end.Error == "" {
			end.Error = rerr.Error()
		}
	}()
	staging, err := os.MkdirTemp(rec, ".slurm-")
	if err != nil {
		return WriterEnd{}, err
	}
	defer os.RemoveAll(staging)
	out := filepath.Join(staging, "out")
	if err := b.gather(ctx, out, map[string]string{"work": o.Workspace, "session": o.Sessions}, id); err != nil {
		return WriterEnd{}, err
	}
	// The caller's contract as locally: the stdout and stderr files must not exist yet.
	events, err := os.OpenFile(o.Events, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return WriterEnd{}, err
	}
	defer events.Close()
	if _, err := os.Stat(o.Stderr); err == nil {
		return WriterEnd{}, fmt.Errorf("%s exists already", o.Stderr)
	}
	n := 0
	for exists(filepath.Join(b.root, "tails", fmt.Sprintf("%s.%d", id, n))) {
		n++
	}
	job := slurmJob{Config: o.Config, Installs: map[string]agent.Install{o.Agent: inst}, Upstream: o.Upstream,
		Writer: &writerTask{Agent: o.Agent, Model: o.Model, Args: o.Args, ReadOnly: o.ReadOnly, Prompt: o.Prompt, Resume: o.Resume, Timeout: o.Timeout, Env: o.Env}}
	t := writerFollow(id, o, events, 0, placed)
	t.name, t.what, t.runDir, t.job, t.out, t.end = fmt.Sprintf("%s.%d", id, n), "writer "+id, rec, job, out, filepath.Join(staging, "end")
	wr, err := b.runTask(ctx, t)
	var ended *taskEnded
	if errors.As(err, &ended) && !ended.started {
		return WriterEnd{}, err
	}
	return bringBack(wr, err, t.end, o)
}

// writerFollow is the task of writer id's job as far as following it goes: its stdout
// copied into events as it grows (from offset copied on), the caller's Started and placed
// called as it is placed.
func writerFollow(id string, o WriterOptions, events *os.File, copied int64, placed func(journal.Placed)) task {
	follow := func(x string) {
		// The writer's stdout as it grows, for tare workshop watch.
		f, err := os.Open(filepath.Join(x, "stdout.jsonl"))
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Seek(copied, 0); err == nil {
			buf := make([]byte, 1<<16)
			for {
				k, rerr := f.Read(buf)
				if k > 0 {
					if _, werr := events.Write(buf[:k]); werr != nil {
						return
					}
					copied += int64(k)
				}
				if rerr != nil {
					return
				}
			}
		}
	}
	started := false
	return task{tick: follow, placed: func(p journal.Placed) {
		p.Tail = id
		if !started && o.Started != nil {
			// The following tare stands for the writer's process: while it follows the job
			// the writer is running; a tare killed leaves the job for collect to re-attach.
			o.Started(os.Getpid(), []string{"slurm", "job", p.Job})
			started = true
		}
		if placed != nil {
			placed(p)
		}
	}}
}

// bringBack ends a writer's job as RunWriter does here: how the agent ended (or why Slurm or
// tare ended it first, in Error), and what the node sent back put in place: stdout and
// stderr as the node wrote them (hash-checked with the capsule), then the writer's folder
// and session, each swapped in whole. A job ended early still brings back what its worker
// sent before it ended, so a cancelled writer keeps its partial draft.
func bringBack(wr slurmResult, err error, endDir string, o WriterOptions) (WriterEnd, error) {
	res := WriterEnd{Exit: -1}
	if wr.Writer != nil {
		res = *wr.Writer
	}
	if err != nil {
		res.Error = err.Error()
		if wr.Writer != nil && wr.Writer.Error != "" {
			res.Error += " (" + wr.Writer.Error + ")"
		}
	}
	if !exists(endDir) {
		return res, nil
	}
	if err := putBackLogs(endDir, map[string]string{taskEvents: o.Events, taskStderr: o.Stderr}); err != nil {
		return res, err
	}
	for name, dest := range map[string]string{"work": o.Workspace, "session": o.Sessions} {
		if err := swapIn(filepath.Join(endDir, name), dest); err != nil {
			res.Error = firstNonEmpty(res.Error, "the writer's "+name+" could not be put back: "+err.Error())
		}
	}
	return res, nil
}

// putBackLogs writes each file of end named in dests (name -> path) to its path, read as the
// node sent it, following no link: what came back is data, never a way into this machine's
// files. A file missing or not regular is left out.
func putBackLogs(end string, dests map[string]string) error {
	for name, dest := range dests {
		if data, err := capsule.ReadFileBeneath(end, name, maxUpload); err == nil {
			if err := capsule.WriteFileAtomic(dest, data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// gather puts each folder of parts (name -> folder) below out, through the shared store so
// every copy is hash-checked: snapped, then restored.
func (b *slurmBackend) gather(ctx context.Context, out string, parts map[string]string, id string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for name, dir := range parts {
		c, err := b.store.Snap(ctx, dir, id+"-"+name)
		if err != nil {
			return fmt.Errorf("%s: %v", dir, err)
		}
		if err := b.store.Restore(ctx, c, filepath.Join(out, name)); err != nil {
			return fmt.Errorf("%s: %v", dir, err)
		}
	}
	return nil
}

// swapIn replaces the folder dest with from (both on one filesystem): dest is set aside,
// from renamed into place, the old one removed; a failed rename puts the old one back.
func swapIn(from, dest string) error {
	if _, err := os.Stat(from); err != nil {
		return err
	}
	aside := dest + ".before-slurm"
	if err := os.RemoveAll(aside); err != nil {
		return err
	}
	if err := os.Rename(dest, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(from, dest); err != nil {
		_ = os.Rename(aside, dest)
		return err
	}
	return os.RemoveAll(aside)
}
