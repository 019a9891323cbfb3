package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"tare/config"
	"tare/engine/journal"
)

// A workshop writer's Slurm job outlives a kill -9 of the tare that followed it, as a tail's
// does. Its exchange folder below the shared directory (named by the writer's records folder's
// cluster.json) still holds the job id, the job and, once the worker has ended, its result and
// end capsule: collect (or a run of the writer again) re-attaches to it instead of submitting
// a second job, following it to its end, and brings its drafts back as a normal run does.

// ErrNoWriterJob is Reattach's answer for a writer whose job is not on record below the shared
// directory: nothing to re-attach to.
var ErrNoWriterJob = errors.New("its Slurm job's folder below the shared directory is gone")

// writerExchange is the exchange folder of writer id's job: the latest attempt below the
// writer's shared folder (named in rec's cluster.json, read only) whose job id is job.
func writerExchange(rec, id, job string) (string, bool) {
	var c struct {
		Root string `json:"root"`
	}
	data, err := os.ReadFile(filepath.Join(rec, clusterFile))
	if err != nil || json.Unmarshal(data, &c) != nil || c.Root == "" {
		return "", false
	}
	for n := 0; ; n++ {
		x := filepath.Join(c.Root, "tails", fmt.Sprintf("%s.%d", id, n))
		if !exists(x) {
			break
		}
		if got, ok := submittedJob(x); ok && got == job {
			return x, true
		}
	}
	return "", false
}

// WriterJobPlace is where writer id's job (rec is its records folder) stands now, as Slurm and
// its exchange folder tell: "pending", "running" (with its node), "finished" (its worker sent
// its result back: collect brings it in) or "gone" (neither Slurm nor the folder knows it).
// It writes nothing and submits nothing: inspect calls it.
func WriterJobPlace(ctx context.Context, rec, id, job string) (state, node string) {
	x, ok := writerExchange(rec, id, job)
	if ok && exists(filepath.Join(x, "result.json")) {
		state = "finished"
	}
	// A squeue tare refuses (HostProgram) is as good as one that does not answer.
	squeue, err := HostProgram(nil, "squeue")
	var out []byte
	if err == nil {
		out, err = exec.CommandContext(ctx, squeue, "-h", "-t", "all", "-j", job, "-o", "%T|%N").Output()
	}
	if err == nil {
		if f := strings.Split(strings.TrimSpace(string(out)), "|"); len(f) == 2 && f[0] != "" {
			st := jobState{State: f[0], Node: f[1]}
			switch {
			case state == "finished" || st.done():
				return "finished", st.Node
			case st.State == "PENDING":
				return "pending", ""
			default:
				return "running", st.Node
			}
		}
	}
	if state == "" && ok {
		// Slurm no longer lists it (aged out, or the controller is down): without a result
		// it may still run where squeue could not say.
		return "unknown", ""
	}
	return firstNonEmpty(state, "gone"), ""
}

// ReattachWriter follows writer id's job (submitted by a tare that was killed) to its end and
// brings the writer back as RunWriter does: no second job is submitted. o is the writer as it
// was launched; its Upstream, when set, is the writer's stream on a model server started
// again (the same script and seed), served anew on the address the job's room dials. Events
// already holds what the killed tare copied of the writer's stdout; the rest is appended as
// it comes. ErrNoWriterJob says there is no such job on record.
func (c *Cluster) ReattachWriter(ctx context.Context, id, job string, o WriterOptions, placed func(journal.Placed)) (end WriterEnd, err error) {
	rec := filepath.Dir(o.Sessions)
	x, ok := writerExchange(rec, id, job)
	if !ok {
		return WriterEnd{}, ErrNoWriterJob
	}
	b, err := newSlurmBackend(c.cfg, rec, false)
	if err != nil {
		return WriterEnd{}, err
	}
	defer func() {
		if rerr := b.release(); rerr != nil && end.Error == "" {
			end.Error = rerr.Error()
		}
	}()
	// The killed tare's staging folders are nobody's now.
	old, _ := filepath.Glob(filepath.Join(rec, ".slurm-*"))
	for _, dir := range old {
		_ = os.RemoveAll(dir)
	}
	staging, err := os.MkdirTemp(rec, ".slurm-")
	if err != nil {
		return WriterEnd{}, err
	}
	defer os.RemoveAll(staging)
	stop, lost := reviveJobModel(x, o.Upstream)
	defer stop()
	events, err := journal.OpenNoFollow(o.Events, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return WriterEnd{}, err
	}
	defer events.Close()
	var copied int64
	if fi, err := events.Stat(); err == nil {
		copied = fi.Size()
	}
	t := writerFollow(id, o, events, copied, placed)
	t.end = filepath.Join(staging, "end")
	wr, err := b.finishTask(ctx, t, x, job)
	end, err = bringBack(wr, err, t.end, o)
	if lost != "" && (end.Error != "" || end.Exit != 0) {
		end.Error = firstNonEmpty(end.Error, fmt.Sprintf("agent exit %d", end.Exit)) + "; " + lost
	}
	return end, err
}

// reviveJobModel serves the model again on the address the job in exchange folder x dials
// (past the forward's token when it had one), relaying to up, the writer's (or judgement's)
// stream on the model server started again; lost says why that address could not be had back.
func reviveJobModel(x, up string) (stop func(), lost string) {
	noop := func() {}
	var job struct {
		Upstream      string `json:"upstream"`
		UpstreamToken string `json:"upstream_token"`
	}
	data, err := os.ReadFile(filepath.Join(x, "job.json"))
	if up == "" || err != nil || json.Unmarshal(data, &job) != nil || job.Upstream == "" {
		return noop, ""
	}
	ln, err := net.Listen("tcp", job.Upstream)
	if err != nil {
		return noop, fmt.Sprintf("its model address %s was taken when tare re-attached (%v), so its agent lost its model", job.Upstream, err)
	}
	go serveForward(ln, forwardTo(up, job.UpstreamToken))
	return func() { ln.Close() }, ""
}

// AttachCluster is the Slurm backend for following jobs already submitted (a writer's job
// re-attached after a kill -9 of tare): refused when Slurm does not answer, without the
// shared directory's check on a node, which a job that ran has proven already.
func AttachCluster(ctx context.Context, cfg *config.Config) (*Cluster, error) {
	if err := SlurmPreflight(ctx, cfg, false); err != nil {
		return nil, err
	}
	return &Cluster{cfg: cfg}, nil
}
