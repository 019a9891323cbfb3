package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/run"
	"tare/sandbox"
)

// Worker runs one tail on a cluster node, as its Slurm job script says (tare worker
// JOB.json): it restores the tail's capsule from the shared store onto node-local disk,
// proves the node's room clean once, runs the agent and the check in rooms exactly as tare
// does locally (tailBody), and writes the end capsule, the tool calls and the result back
// into the job's exchange folder, atomically. A node that cannot start a room, or whose room
// is not clean, ends the tail with no verdict and says why. The error is only for what
// stops the worker from writing a result at all.
func Worker(ctx context.Context, jobFile string) error {
	data, err := os.ReadFile(jobFile)
	if err != nil {
		return fmt.Errorf("tare worker: %v; fix: run it as tare's job script does, with the job.json tare wrote", err)
	}
	var job slurmJob
	err = json.Unmarshal(data, &job)
	task := job.Judge != nil || job.Writer != nil
	if err != nil || (job.Recipe == nil && !task) || job.Config == nil {
		return fmt.Errorf("tare worker: %s is not a tare job (%v); fix: run it as tare's job script does", jobFile, err)
	}
	x := filepath.Dir(jobFile)
	node := os.Getenv("SLURMD_NODENAME")
	if node == "" {
		node, _ = os.Hostname()
	}
	if job.UpstreamToken != "" {
		// tare's forwarder wants the token; the room's relay dials this node's end of it.
		addr, stop, err := nodeForward(job.Upstream, job.UpstreamToken)
		if err != nil {
			return err
		}
		defer stop()
		job.Upstream = addr
	}
	if task {
		return workTask(ctx, job, x, node)
	}
	spec := job.Spec
	res := journal.TailResult{ID: spec.ID, Side: spec.Side.Key, Agent: spec.Side.Agent, Step: spec.Step, How: spec.How, Attempt: spec.Attempt,
		Status: journal.StatusNoVerdict, Reason: journal.ReasonNotStarted, CapsuleFrom: spec.Nearest}
	out := slurmResult{Node: node}
	write := func() error {
		out.Result = res
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		return capsule.WriteFileAtomic(filepath.Join(x, "result.json"), append(data, '\n'), 0o644)
	}
	unfit := func(why string) error {
		res.Status, res.Reason = journal.StatusNoVerdict, ReasonNodeUnfit
		res.AgentExit, res.Check = fmt.Sprintf("not started on node %s: %s", node, why), "not checked"
		return write()
	}
	began := time.Now()

	local, store, why := nodeStart(ctx, job)
	if why != "" {
		return unfit(why)
	}
	defer os.RemoveAll(local)
	a, err := agent.ByName(spec.Side.Agent)
	if err != nil {
		return unfit(err.Error())
	}
	// The probe, once per job: this node's room, with this tail's project, must read clean.
	project := filepath.Join(local, "project")
	if err := store.Restore(ctx, spec.Start, project); err != nil {
		return unfit(fmt.Sprintf("capsule %s could not be restored from %s: %v", spec.Start.ID, job.Store, err))
	}
	reading, err := probe.Probe(ctx, probe.ProbeOptions{Agent: a, Project: project, Config: job.Config, AllowDirty: job.AllowDirty})
	if err != nil {
		return unfit("its room could not be probed: " + err.Error())
	}
	if !reading.Zero() && !job.AllowDirty {
		return unfit(fmt.Sprintf("its room is not clean (%s); fix: ask the admins what the node adds to every process, or run with --allow-dirty", reading.Verdict()))
	}
	_ = os.RemoveAll(project)

	r, err := run.Create(filepath.Join(x, "worker"), nil)
	if err != nil {
		return unfit(err.Error())
	}
	defer r.Close()
	env := &tailEnv{run: r, store: store, recipe: job.Recipe, cfg: job.Config, upstream: job.Upstream, installs: job.Installs}
	dir := filepath.Join(local, "tail")
	if err := os.MkdirAll(filepath.Join(dir, "session"), 0o755); err != nil {
		return unfit(err.Error())
	}
	res.AgentExit, res.Check = tailBody(ctx, env, spec, dir, &res)
	res.Seconds = time.Since(began).Seconds()
	if ctx.Err() != nil {
		return ctx.Err() // cancelled: the submitting tare says why
	}
	for _, f := range []string{"stdout.jsonl", "stderr.log"} {
		if data, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			_ = capsule.WriteFileAtomic(filepath.Join(x, f), data, 0o644)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "work")); err == nil {
		ends := store
		if job.Stage != "" {
			ends, err = capsule.OpenStage(job.Stage, job.Store)
			if err != nil {
				return unfit(err.Error())
			}
		}
		end, err := ends.Snap(ctx, filepath.Join(dir, "work"), fmt.Sprintf("%s.%d-end", spec.ID, spec.Attempt))
		if err != nil {
			res.Check += "; no end capsule: " + err.Error()
		} else {
			out.End = &end
		}
	}
	return write()
}

// nodeStart readies the node for a job: a node-local folder for the workspace (agents make
// many small-file operations, slow on a shared filesystem; the caller removes it), a room
// that starts, and the store the job's capsules are in. why says what the node lacks.
func nodeStart(ctx context.Context, job slurmJob) (local string, store *capsule.Store, why string) {
	local, err := os.MkdirTemp("", "tare-worker-")
	if err != nil {
		return "", nil, fmt.Sprintf("no node-local folder (%v); fix: give the job a writable TMPDIR", err)
	}
	if err := roomWorks(ctx, job.Config.Bwrap); err != nil {
		os.RemoveAll(local)
		return "", nil, err.Error()
	}
	if store, err = capsule.Open(job.Store); err != nil {
		os.RemoveAll(local)
		return "", nil, fmt.Sprintf("the shared store %s: %v; fix: set [cluster] shared to a folder every node sees", job.Store, err)
	}
	return local, store, ""
}

// roomWorks starts the smallest room there is, with the flags every room uses: a node
// without bwrap or without unprivileged user namespaces fails here, with the cause and a
// fix, before anything else is tried.
func roomWorks(ctx context.Context, bwrap string) error {
	if _, err := sandbox.CheckBwrap(ctx, bwrap); err != nil {
		return fmt.Errorf("%v (or exclude the node with [cluster] flags = [\"--exclude=NODE\"])", err)
	}
	return nil
}
