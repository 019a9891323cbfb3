package workshop

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"tare/agent"
	"tare/engine"
	"tare/engine/journal"
)

// runWriter runs writer id's session here, or as a Slurm job whose worker runs the same room
// on a node (probing it first) and sends the drafts, session, stdout and stderr back
// hash-checked into the same places: collect, resume and inspect read them as after a local
// run. The job's place (pending, running on a node, finished) goes to the progress lines and
// to onPlaced.
func (o RunOptions) runWriter(ctx context.Context, id string, w engine.WriterOptions, inst agent.Install, onPlaced func(journal.Placed)) (engine.WriterEnd, error) {
	return o.writers.RunWriter(ctx, id, w, inst, o.placed(id, onPlaced))
}

// placed says a writer's job's place in the progress lines, and tells onPlaced.
func (o RunOptions) placed(id string, onPlaced func(journal.Placed)) func(journal.Placed) {
	return func(p journal.Placed) {
		where := ""
		if p.Node != "" {
			where = " on " + p.Node
		}
		if p.State == "running" {
			where += fmt.Sprintf(" after %.1fs in the queue", p.Waited)
		}
		say(o.Progress, "%s: Slurm job %s %s%s", id, p.Job, p.State, where)
		onPlaced(p)
	}
}

// reattachable says the writer's attempt runs as a Slurm job that no tare follows any more
// (the one that did was killed): collect and run follow it again instead of failing it as
// interrupted or launching it twice.
func (s *State) reattachable() bool {
	return s.Status == "running" && s.EndedAt == nil && s.Job != nil && !s.alive()
}

// reattachLocked follows writer id's Slurm job to its end, the model served again from the
// script and seed its launch recorded when it was scripted, brings back what its node wrote,
// and settles and collects it as after a normal run. A job no longer on record leaves the
// writer interrupted, as a local writer whose tare was killed.
func reattachLocked(ctx context.Context, e *Exp, id string, s *State, o RunOptions) (*State, error) {
	if o.Config == nil {
		return nil, fmt.Errorf("writer %s: its Slurm job %s outlived the tare that followed it; collect it with tare workshop collect, which re-attaches to the job", id, s.Job.ID)
	}
	rec := e.Record(id)
	var l launch
	_ = readJSON(filepath.Join(rec, "launch.json"), &l)
	up := ""
	if l.Script != "" {
		o.Scripts, o.Seed = map[string]string{id: l.Script}, l.Seed
		srv, err := startScripts(e, o)
		if err != nil {
			return nil, fmt.Errorf("writer %s: its model could not be served again for its job %s: %v", id, s.Job.ID, err)
		}
		defer srv.close()
		if up, err = srv.upstream(id); err != nil {
			return nil, err
		}
	}
	c, err := engine.AttachCluster(ctx, o.Config)
	if err != nil {
		return nil, err
	}
	say(o.Progress, "%s: re-attaching to its Slurm job %s", id, s.Job.ID)
	end, err := c.ReattachWriter(ctx, id, s.Job.ID, engine.WriterOptions{Agent: s.Config.Agent, Model: s.Config.Model, Workspace: e.Work(id),
		Sessions: filepath.Join(rec, "session"), Upstream: up, Config: o.Config,
		Events: filepath.Join(rec, "events.jsonl"), Stderr: filepath.Join(rec, "stderr.log"),
		Started: func(pid int, _ []string) {
			// This tare follows the job now: a second one is refused while it does.
			s.PID, s.Identity = pid, processIdentity(pid)
			_ = e.saveState(id, s)
		}}, o.placed(id, func(p journal.Placed) {
		if p.Node != "" && s.Job.Node == "" {
			s.Job.Node = p.Node
			_ = e.saveState(id, s)
		}
	}))
	if errors.Is(err, engine.ErrNoWriterJob) {
		// Nothing to follow: interrupted, its draft archived by collect.
		s.Job, s.PID, s.Identity = nil, 0, ""
		if err := e.saveState(id, s); err != nil {
			return nil, err
		}
		return collectLocked(e, id, nil)
	}
	if err != nil {
		// Left as it was: the job may be re-attached to again.
		return nil, fmt.Errorf("writer %s: re-attaching to its Slurm job %s: %v", id, s.Job.ID, err)
	}
	return settle(ctx, e, id, s, o, end, nil)
}

// CollectWith is Collect with the options of a run: a writer whose Slurm job outlived the
// tare that followed it (kill -9) is re-attached to first, on the cluster o.Config names, a
// scripted writer's model served again; the job is followed to its end (or its result taken
// if it ended meanwhile) and the writer collected as after a normal run, never run twice.
func CollectWith(ctx context.Context, e *Exp, id string, ext *External, o RunOptions) (*State, error) {
	unlock, err := e.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s, err := e.State(id); err == nil && ext == nil && s.reattachable() {
		if s, err = e.Writer(id); err != nil {
			return nil, err
		}
		return reattachLocked(ctx, e, id, s, o)
	}
	return collectLocked(e, id, ext)
}
