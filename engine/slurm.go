package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/run"
	"tare/sandbox"
)

// The reasons a tail run on a cluster has no verdict because the cluster, not the agent,
// ended it: Slurm's own verdicts, and a node that cannot hold a clean room.
const (
	// ReasonOutOfMemory: the job went over its --mem and Slurm killed it.
	ReasonOutOfMemory journal.Reason = "out-of-memory"
	// ReasonTimeLimit: the job reached its --time and Slurm stopped it.
	ReasonTimeLimit journal.Reason = "time-limit"
	// ReasonNodeFailure: the job's node failed (or it was preempted, or could not boot).
	ReasonNodeFailure journal.Reason = "node-failure"
	// ReasonCancelled: the job was cancelled by someone other than tare (scancel, an admin).
	ReasonCancelled journal.Reason = "cancelled"
	// ReasonNodeUnfit: the node cannot start a room (no bwrap, no user namespaces) or its
	// room's reading was not clean.
	ReasonNodeUnfit journal.Reason = "node-unfit"
)

// slurmJob is what a tail's job reads: everything tailBody needs, as the submitting tare had
// it, with the start capsule in the shared store.
type slurmJob struct {
	Spec     tailSpec                 `json:"spec"`
	Recipe   *run.Recipe              `json:"recipe"`
	Config   *config.Config           `json:"config"`
	Installs map[string]agent.Install `json:"installs"`
	// Upstream is the model address the room's relay dials ("" for real providers).
	Upstream string `json:"upstream,omitempty"`
	// UpstreamToken, when set, is what tare's forwarder on [cluster] callback_addr wants
	// before it relays a connection to Upstream (slurm_forward.go).
	UpstreamToken string `json:"upstream_token,omitempty"`
	// Store is the shared capsule store.
	Store      string `json:"store"`
	AllowDirty bool   `json:"allow_dirty,omitempty"`
	// Stage, when set, is where the worker snaps the end capsule: a staging store over
	// Store holding only what the tail added, sent back over HTTP (slurm_http.go).
	Stage string `json:"stage,omitempty"`
	// Judge or Writer, when set, make the job one judgement or one workshop writer instead
	// of a tail (slurm_task.go).
	Judge  *judgeTask  `json:"judge,omitempty"`
	Writer *writerTask `json:"writer,omitempty"`
}

// slurmResult is what the worker writes back: the tail's result and its end capsule in the
// shared store.
type slurmResult struct {
	Result journal.TailResult `json:"result"`
	End    *capsule.Capsule   `json:"end,omitempty"`
	Node   string             `json:"node"`
	// Judgement and Writer are a task's outcome (slurm_task.go).
	Judgement *Judgement `json:"judgement,omitempty"`
	Writer    *WriterEnd `json:"writer,omitempty"`
}

// slurmBackend runs each tail as one sbatch job running `tare worker` on a node. The
// workspace goes out, and the events and result come back, through a folder below the
// shared directory that every node sees: the exchange folder of the attempt.
type slurmBackend struct {
	cluster config.Cluster
	tare    string
	// bins maps each of Slurm's commands to the executable HostProgram found.
	bins map[string]string
	// root is this run's folder below the shared directory.
	root  string
	store *capsule.Store
	queue *squeue
	// allowDirty lets a worker run in a room whose reading is not clean (--allow-dirty).
	allowDirty bool

	mu sync.Mutex
	// shared maps a capsule root of the run's store to the same capsule in the shared store.
	shared map[string]capsule.Capsule
	// unfit are the nodes a worker found unable to hold a clean room: said once, in the tail
	// that found it, then left out of every later job (--exclude).
	unfit map[string]bool
	// http serves the exchange to nodes without the shared folder ([cluster] transport).
	http *exchangeServer

	// pagesMu guards pages, the judge-noise run's staged page folders already in the shared
	// store; it is held while a page is copied there, so a page goes there once.
	pagesMu sync.Mutex
	pages   map[string]capsule.Capsule
}

// markUnfit leaves node out of the jobs submitted from now on.
func (b *slurmBackend) markUnfit(node string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.unfit == nil {
		b.unfit = map[string]bool{}
	}
	b.unfit[node] = true
}

// excluded is the --exclude of the next job: the unfit nodes, sorted.
func (b *slurmBackend) excluded() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var nodes []string
	for n := range b.unfit {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	if len(nodes) == 0 {
		return nil
	}
	return []string{"--exclude", strings.Join(nodes, ",")}
}

// sharedRoot is a run's folder below the cluster's shared directory: the run's name and a
// hash of its path, so two runs of the same name never share it.
func sharedRoot(cfg *config.Config, runDir string) string {
	shared := cfg.Cluster.Shared
	if shared == "" {
		shared = filepath.Join(cfg.StateDir, "slurm")
	}
	abs, _ := filepath.Abs(runDir)
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(shared, filepath.Base(abs)+"-"+hex.EncodeToString(sum[:4]))
}

// attachBackend sets the env's backend from the recipe: a run made --on slurm sends its
// tails (those of a resume too) to Slurm.
func attachBackend(env *tailEnv, rec *run.Recipe, allowDirty bool) error {
	if rec.On != OnSlurm {
		return nil
	}
	if err := checkSlurmRunCaps(rec); err != nil {
		return err
	}
	if err := SlurmPreflight(context.Background(), env.cfg, false); err != nil {
		return err
	}
	b, err := newSlurmBackend(env.cfg, env.run.Dir(), allowDirty)
	if err != nil {
		return err
	}
	env.backend = b
	return nil
}

// clusterFile, in a run directory, names the run's folder below the shared directory, so a
// resume from anywhere finds its jobs' exchange folders.
const clusterFile = "cluster.json"

// runShared is the run's folder below the shared directory: as the run first recorded it,
// else a new one, recorded now.
func runShared(cfg *config.Config, runDir string) (string, error) {
	var rec struct {
		Root string `json:"root"`
	}
	if data, err := os.ReadFile(filepath.Join(runDir, clusterFile)); err == nil && json.Unmarshal(data, &rec) == nil && rec.Root != "" {
		return rec.Root, nil
	}
	rec.Root = sharedRoot(cfg, runDir)
	data, _ := json.Marshal(rec)
	return rec.Root, capsule.WriteFileAtomic(filepath.Join(runDir, clusterFile), append(data, '\n'), 0o644)
}

func newSlurmBackend(cfg *config.Config, runDir string, allowDirty bool) (*slurmBackend, error) {
	root, err := runShared(cfg, runDir)
	if err != nil {
		return nil, err
	}
	store, err := capsule.Open(filepath.Join(root, "store"))
	if err != nil {
		return nil, fmt.Errorf("the shared store below %s: %v; fix: set [cluster] shared to a folder you can write that every node sees", root, err)
	}
	self := cfg.Cluster.Tare
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding tare's own path for the job script: %v; fix: set [cluster] tare", err)
		}
	}
	bins, err := slurmBins(cfg)
	if err != nil {
		return nil, err
	}
	b := &slurmBackend{cluster: cfg.Cluster, tare: self, root: root, store: store, queue: &squeue{bin: bins["squeue"]},
		bins: bins, allowDirty: allowDirty, shared: map[string]capsule.Capsule{}}
	if cfg.Cluster.Transport == TransportHTTP {
		if b.http, err = serveExchange(root, cfg.Cluster.CallbackAddr); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// SlurmPreflight refuses --on slurm before anything is written or submitted when tails could
// not run: sbatch missing, the controller not answering, a partition the cluster does not
// have, and (when nodes is set) a shared directory the nodes do not see.
func SlurmPreflight(ctx context.Context, cfg *config.Config, nodes bool) error {
	bins, err := slurmBins(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bins["sinfo"], "-h", "-o", "%P").CombinedOutput()
	if err != nil {
		return fmt.Errorf("--on slurm: the Slurm controller does not answer (sinfo: %s); fix: start it (scripts/slurm-local up for a local one) or ask the cluster's admins",
			run.Clip(lastLine(strings.TrimSpace(string(out))+" "+err.Error()), 160))
	}
	var parts []string
	for _, p := range strings.Fields(string(out)) {
		parts = append(parts, strings.TrimSuffix(p, "*"))
	}
	if p := cfg.Cluster.Partition; p != "" && !contains(parts, p) {
		return fmt.Errorf("%s: key cluster.partition: %q is not a partition of this cluster; fix: use one of %s (sinfo lists them)",
			configOrigin(cfg), p, strings.Join(parts, ", "))
	}
	if !nodes || cfg.Cluster.Transport == TransportHTTP {
		return nil // over HTTP the nodes need no folder of tare's
	}
	return sharedSeen(ctx, cfg)
}

// slurmBins finds each of Slurm's commands (HostProgram): every one before any runs, so a
// planted one is refused before tare runs the first.
func slurmBins(cfg *config.Config) (map[string]string, error) {
	bins := map[string]string{}
	for _, tool := range slurmTools {
		bin, err := HostProgram(cfg, tool)
		if errors.Is(err, sandbox.ErrNoProgram) {
			return nil, fmt.Errorf("--on slurm: %s is not on PATH; fix: run tare where Slurm's commands are (a login node), set cluster.bin_dir in tare's config, or start a local Slurm with scripts/slurm-local up", tool)
		}
		if err != nil {
			return nil, fmt.Errorf("--on slurm: %v", err)
		}
		bins[tool] = bin
	}
	return bins, nil
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sharedSeen runs one short step on a node that looks for a file just written into the
// shared directory: a folder only this machine sees would fail every tail, late and silently.
func sharedSeen(ctx context.Context, cfg *config.Config) error {
	shared := cfg.Cluster.Shared
	if shared == "" {
		shared = filepath.Join(cfg.StateDir, "slurm")
	}
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return fmt.Errorf("%s: key cluster.shared: %v; fix: give a folder you can write that every node sees", configOrigin(cfg), err)
	}
	token, err := os.CreateTemp(shared, ".tare-seen-")
	if err != nil {
		return fmt.Errorf("%s: key cluster.shared: %v; fix: give a folder you can write that every node sees", configOrigin(cfg), err)
	}
	token.Close()
	defer os.Remove(token.Name())
	args := append([]string{"--quiet", "--job-name", "tare-shared-check", "--ntasks", "1", "--time", "1", "--mem", "64M"}, clusterArgs(cfg.Cluster)...)
	args = append(args, "test", "-f", token.Name())
	srun, err := HostProgram(cfg, "srun")
	if err != nil {
		return fmt.Errorf("--on slurm: %v", err)
	}
	out, err := exec.CommandContext(ctx, srun, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: key cluster.shared: the nodes do not see %s (srun test -f: %s); fix: set it to a folder on the cluster's shared filesystem",
			configOrigin(cfg), shared, run.Clip(lastLine(strings.TrimSpace(string(out))+" "+err.Error()), 120))
	}
	return nil
}

// clusterArgs are the sbatch/srun options [cluster] sets for every job.
func clusterArgs(c config.Cluster) []string {
	var args []string
	if c.Partition != "" {
		args = append(args, "--partition", c.Partition)
	}
	if c.Account != "" {
		args = append(args, "--account", c.Account)
	}
	return append(args, c.Flags...)
}

// body sends the tail to Slurm and follows it to its end.
func (b *slurmBackend) body(ctx context.Context, env *tailEnv, spec tailSpec, dir string, res *journal.TailResult) (string, string) {
	notStarted := func(why string) (string, string) {
		res.Status, res.Reason = journal.StatusNoVerdict, journal.ReasonNotStarted
		return "not started: " + why, "not checked"
	}
	x := b.exchange(spec.ID, spec.Attempt)
	if err := os.RemoveAll(x); err != nil {
		return notStarted(err.Error())
	}
	if err := os.MkdirAll(x, 0o755); err != nil {
		return notStarted(fmt.Sprintf("the exchange folder %s: %v", x, err))
	}
	start, err := b.share(ctx, env.store, spec.Start)
	if err != nil {
		return notStarted(err.Error())
	}
	spec.Start = start
	upstream, err := env.upstreamFor(fmt.Sprintf("%s@%d", spec.ID, spec.Attempt))
	if err != nil {
		return notStarted(err.Error())
	}
	upstream, meter, err := b.runMeter(env, upstream)
	if err != nil {
		return notStarted(err.Error())
	}
	if meter != nil {
		defer meter.Close()
	}
	upstream, upToken, stopForward, err := b.reachable(upstream)
	if err != nil {
		return notStarted(err.Error())
	}
	defer stopForward()
	job := slurmJob{Spec: spec, Recipe: nodeRecipe(env.recipe), Config: env.cfg, Installs: env.installs, Upstream: upstream, UpstreamToken: upToken,
		Store: b.store.Dir(), AllowDirty: b.allowDirty}
	data, err := json.Marshal(job)
	if err != nil {
		return notStarted(err.Error())
	}
	if err := capsule.WriteFileAtomic(filepath.Join(x, "job.json"), data, 0o600); err != nil {
		return notStarted(err.Error())
	}
	id, err := b.submit(ctx, env, spec, x)
	if err != nil {
		return notStarted(err.Error())
	}
	exit, check := b.follow(ctx, env, spec, x, id, dir, res, 0)
	return overRun(meter, res, exit, check)
}

// attachedJob is the Slurm job a running tail's latest attempt was submitted as, if any.
func attachedJob(dir string, rec *run.Recipe, cfg *config.Config, t *journal.TailState) (string, bool) {
	if rec.On != OnSlurm || t == nil {
		return "", false
	}
	root, err := runShared(cfg, dir)
	if err != nil {
		return "", false
	}
	return submittedJob(filepath.Join(root, "tails", fmt.Sprintf("%s.%d", t.ID, t.Attempt.N)))
}

// exchange is the folder of one attempt of a tail below the run's shared folder: the job
// file and script, the job id, the worker's journal, the result.
func (b *slurmBackend) exchange(tail string, attempt int) string {
	return filepath.Join(b.root, "tails", fmt.Sprintf("%s.%d", tail, attempt))
}

// submittedJob is the job id an attempt's exchange folder holds: written right after sbatch
// answered, so a tare killed later finds the job again.
func submittedJob(x string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(x, "jobid"))
	id := strings.TrimSpace(string(data))
	return id, err == nil && id != ""
}

// jobName is a tail's --job-name: the run's shared folder and the tail, so squeue shows
// whose it is and a restarted tare could find it by name.
func (b *slurmBackend) jobName(id string) string {
	return "tare-" + filepath.Base(b.root) + "-" + id
}

// submit writes the job script and submits it, returning the job id; the id is kept in the
// exchange folder (atomically) so a tare that restarts finds its job again.
func (b *slurmBackend) submit(ctx context.Context, env *tailEnv, spec tailSpec, x string) (string, error) {
	return b.submitJob(ctx, "tail "+spec.ID, b.jobName(spec.ID), env.run.Dir(), x)
}

// submitJob writes the job script of exchange folder x (what names the job in it, name is
// its --job-name, dir the run folder in its --comment) and submits it.
func (b *slurmBackend) submitJob(ctx context.Context, what, name, dir, x string) (string, error) {
	script := fmt.Sprintf("#!/bin/sh\n# tare %s of %s\nexec %s worker %s\n", what, dir,
		shellQuote(b.tare), shellQuote(filepath.Join(x, "job.json")))
	if b.http != nil {
		script = fmt.Sprintf("#!/bin/sh\n# tare %s of %s\nexec %s worker --url %s --exchange %s\n", what, dir,
			shellQuote(b.tare), shellQuote(b.http.url), shellQuote(filepath.Base(x)))
	}
	if err := capsule.WriteFileAtomic(filepath.Join(x, "job.sh"), []byte(script), 0o700); err != nil {
		return "", err
	}
	mem, limit, cpus := b.cluster.Memory, b.cluster.Time, b.cluster.CPUs
	if mem == "" {
		mem = "4G"
	}
	if limit == "" {
		limit = "60"
	}
	if cpus == 0 {
		cpus = 1
	}
	logPath, chdir := filepath.Join(x, "slurm.out"), x
	if b.http != nil {
		// The node has no exchange folder: its log stays on its own disk.
		logPath, chdir = nodeLog, "/tmp"
	}
	args := []string{"--parsable", "--job-name", name, "--output", logPath,
		"--chdir", chdir, "--mem", mem, "--time", limit, "--cpus-per-task", fmt.Sprint(cpus), "--comment", "tare " + dir,
		// A job Slurm would requeue after a node failure would run the tail a second time
		// in the same exchange folder; the failure is the tail's outcome instead.
		"--no-requeue"}
	args = append(append(append(args, clusterArgs(b.cluster)...), b.excluded()...), filepath.Join(x, "job.sh"))
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sbatch := exec.CommandContext(sctx, b.bins["sbatch"], args...)
	if b.http != nil {
		// The token reaches the job's environment through a pipe: never a file, the job
		// script or a command line another user could read.
		r, w, err := os.Pipe()
		if err != nil {
			return "", err
		}
		_, _ = w.WriteString(tokenEnv + "=" + b.http.token + "\x00")
		w.Close()
		defer r.Close()
		sbatch.ExtraFiles = []*os.File{r}
		args = append([]string{"--export-file", "3"}, args...)
		sbatch.Args = append([]string{"sbatch"}, args...)
	}
	out, err := sbatch.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbatch: %s", run.Clip(lastLine(strings.TrimSpace(string(out))+" "+err.Error()), 200))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(lastLine(string(out))), ";")
	if id == "" {
		return "", fmt.Errorf("sbatch printed no job id: %q", run.Clip(string(out), 120))
	}
	if err := capsule.WriteFileAtomic(filepath.Join(x, "jobid"), []byte(id+"\n"), 0o644); err != nil {
		_ = exec.Command(b.bins["scancel"], id).Run()
		return "", err
	}
	b.queue.forget() // the next look must list the new job
	return id, nil
}

// follow watches the job to its end: its place (queued, running on a node), the worker's
// tool calls re-journaled as they come, and, at the end, the worker's result or Slurm's
// verdict. A kill or a stop of the run cancels the job.
// calls is how many of the worker's tool calls the journal already holds (a re-attach).
func (b *slurmBackend) follow(ctx context.Context, env *tailEnv, spec tailSpec, x, id, dir string, res *journal.TailResult, calls int) (string, string) {
	events := &workerEvents{dir: filepath.Join(x, "worker"), calls: calls}
	st, cancelled := b.await(ctx, id, x, func() { events.forward(env.run, spec.ID) }, func(p journal.Placed) {
		p.Tail = spec.ID
		_ = env.run.Emit(journal.Event{Placed: &p})
	})
	if cancelled {
		res.Status, res.Reason = journal.StatusNoVerdict, journal.ReasonKilled
		if errors.Is(context.Cause(ctx), journal.ErrKilled) {
			return fmt.Sprintf("%s (job %s cancelled)", journal.ErrKilled, id), "not checked"
		}
		return fmt.Sprintf("stopped (job %s cancelled)", id), "not checked: the tail was stopped"
	}
	return b.collect(ctx, env, st, x, id, dir, res)
}

// await polls job id (exchange folder x) to its end, calling tick at every poll and placed
// as its place changes (pending, running on a node with its queue wait, finished). When ctx
// ends first the job is cancelled and no longer to be re-attached: cancelled is true.
func (b *slurmBackend) await(ctx context.Context, id, x string, tick func(), placed func(journal.Placed)) (jobState, bool) {
	submitted := time.Now()
	place := journal.Placed{Job: id, State: "pending"}
	placed(place)
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	var st jobState
	seen := false
	for {
		tick()
		var known bool
		st, known = b.queue.state(ctx, id)
		if !known && !seen && time.Since(submitted) < 2*time.Minute && !exists(filepath.Join(x, "result.json")) {
			// squeue may not list a job in the instant after sbatch returns: it is queued.
			st, known = jobState{State: "PENDING"}, true
		}
		seen = seen || known
		if st.running() && place.State == "pending" {
			place = journal.Placed{Job: id, State: "running", Node: st.Node, Waited: st.waited(submitted).Seconds()}
			placed(place)
		}
		if !known || st.done() {
			break
		}
		select {
		case <-ctx.Done():
			b.cancel(id)
			// Not to be re-attached: a stopped run's tail is run again by tare resume, a
			// killed one is finished here.
			_ = os.Remove(filepath.Join(x, "jobid"))
			tick()
			return st, true
		case <-ticker.C:
		}
	}
	tick()
	if place.State == "pending" {
		place.Waited = st.waited(submitted).Seconds()
	}
	place.State, place.Node = "finished", firstNonEmpty(st.Node, place.Node)
	placed(place)
	return st, false
}

// collect takes a finished job's outcome: Slurm's own verdict first (a job it killed for
// memory or time has no verdict whatever the worker wrote), then the worker's result, whose
// end capsule is restored into the tail's folder for runTail to keep.
func (b *slurmBackend) collect(ctx context.Context, env *tailEnv, st jobState, x, id, dir string, res *journal.TailResult) (string, string) {
	var wr slurmResult
	data, rerr := os.ReadFile(filepath.Join(x, "result.json"))
	if rerr == nil {
		rerr = json.Unmarshal(data, &wr)
	}
	for _, f := range []string{"stdout.jsonl", "stderr.log", CheckLogFile} {
		if data, err := os.ReadFile(filepath.Join(x, f)); err == nil {
			_ = capsule.WriteFileAtomic(filepath.Join(dir, f), data, 0o644)
		}
	}
	if reason, why, ok := slurmVerdict(st.State); ok {
		res.Passed, res.Score, res.Status, res.Reason = false, nil, journal.StatusNoVerdict, reason
		if rerr == nil {
			res.Calls, res.Usage, res.Session = wr.Result.Calls, wr.Result.Usage, wr.Result.Session
		}
		return fmt.Sprintf("job %s on %s: %s", id, firstNonEmpty(st.Node, "no node"), why), "not checked"
	}
	if rerr != nil {
		res.Status, res.Reason = journal.StatusNoVerdict, journal.ReasonNotStarted
		log := run.Clip(lastLine(readTail(filepath.Join(x, "slurm.out"))), 160)
		if b.http != nil {
			log = "on node " + firstNonEmpty(st.Node, "(none)") + " in " + strings.ReplaceAll(nodeLog, "%j", id)
		}
		return fmt.Sprintf("job %s ended %s without a result (%v); its log: %s", id, firstNonEmpty(st.State, "(gone from squeue)"),
			rerr, log), "not checked"
	}
	if wr.Result.Reason == ReasonNodeUnfit && wr.Node != "" {
		b.markUnfit(wr.Node)
	}
	keep := *res
	*res = wr.Result
	res.ID, res.Side, res.Agent, res.Step, res.How, res.Attempt, res.CapsuleFrom = keep.ID, keep.Side, keep.Agent, keep.Step, keep.How, keep.Attempt, keep.CapsuleFrom
	res.Status, res.Reason = journal.NormalizeOutcome(res.Status, res.Reason, res.AgentExit+"; "+res.Check)
	if wr.End != nil && b.http != nil {
		// Over HTTP the end capsule's new objects came as a stage: imported, every object
		// checked against its hash, before anything is restored from it.
		end, err := b.importEnd(ctx, x, wr.End.Root)
		if err != nil {
			return wr.Result.AgentExit, wr.Result.Check + fmt.Sprintf("; the end capsule from %s was refused: %v", wr.Node, err)
		}
		wr.End = &end
	}
	if wr.End != nil {
		// Hash-checked on the way in, as every restore is.
		if err := b.store.Restore(ctx, *wr.End, filepath.Join(dir, "work")); err != nil {
			return wr.Result.AgentExit, wr.Result.Check + fmt.Sprintf("; the end capsule from %s could not be restored: %v", wr.Node, err)
		}
	}
	return wr.Result.AgentExit, wr.Result.Check
}

// slurmVerdict turns a job state in which Slurm, not the agent, ended the tail into its
// reason; ok is false for the states that leave the outcome to the worker's result.
func slurmVerdict(state string) (journal.Reason, string, bool) {
	switch state {
	case "OUT_OF_MEMORY":
		return ReasonOutOfMemory, "Slurm killed it for memory (over its --mem; raise [cluster] memory)", true
	case "TIMEOUT", "DEADLINE":
		return ReasonTimeLimit, "Slurm stopped it at its time limit (raise [cluster] time)", true
	case "NODE_FAIL", "BOOT_FAIL", "PREEMPTED":
		return ReasonNodeFailure, "its node failed (" + strings.ToLower(state) + ")", true
	case "CANCELLED":
		return ReasonCancelled, "cancelled outside tare (scancel or an admin)", true
	}
	return "", "", false
}

// cancel scancels a job and waits (a while) until Slurm has it ended, so no tail of a
// stopped run is still running when tare returns; a job that already ended is not an error.
func (b *slurmBackend) cancel(id string) {
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	_ = exec.CommandContext(ctx, b.bins["scancel"], id).Run()
	for {
		b.queue.forget()
		if st, known := b.queue.state(ctx, id); !known || st.done() || ctx.Err() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// share puts a capsule of the run's store into the shared store, once per root: restored
// into a temporary folder and snapped there, so the nodes read it hash-checked.
func (b *slurmBackend) share(ctx context.Context, from *capsule.Store, c capsule.Capsule) (capsule.Capsule, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.shared[c.Root]; ok {
		return s, nil
	}
	if list, err := b.store.List(); err == nil {
		for _, s := range list {
			if s.Root == c.Root {
				b.shared[c.Root] = s
				return s, nil
			}
		}
	}
	tmp, err := os.MkdirTemp("", "tare-share-")
	if err != nil {
		return capsule.Capsule{}, err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "work")
	if err := from.Restore(ctx, c, work); err != nil {
		return capsule.Capsule{}, fmt.Errorf("capsule %s could not be restored to share it: %v", c.ID, err)
	}
	s, err := b.store.Snap(ctx, work, c.ID)
	if err != nil {
		return capsule.Capsule{}, fmt.Errorf("copying capsule %s into the shared store %s: %v", c.ID, b.store.Dir(), err)
	}
	if s.Root != c.Root {
		return capsule.Capsule{}, fmt.Errorf("capsule %s came out of the shared store %s as %s, not %s: refusing to run on it", c.ID, b.store.Dir(), s.Root, c.Root)
	}
	if b.http != nil {
		// Served alone, so a node fetches this capsule's objects and nothing else.
		out, err := capsule.Open(outStore(b.root, c.Root))
		if err == nil {
			_, err = out.Snap(ctx, work, c.ID)
		}
		if err != nil {
			return capsule.Capsule{}, fmt.Errorf("capsule %s, to serve it to the nodes: %v", c.ID, err)
		}
	}
	b.shared[c.Root] = s
	return s, nil
}

// workerEvents reads a worker's journal in the exchange folder and re-journals its tool
// calls in the run, each once.
type workerEvents struct {
	dir  string
	seen int64
	// calls: tool calls numbered up to this are in the run's journal already.
	calls int
}

func (w *workerEvents) forward(r *run.Run, tail string) {
	if _, err := os.Stat(filepath.Join(w.dir, journal.JournalFile)); err != nil {
		return
	}
	events, err := journal.ReadJournal(w.dir)
	if err != nil {
		return
	}
	for _, e := range events {
		if e.Seq <= w.seen {
			continue
		}
		w.seen = e.Seq
		if e.ToolCall != nil && e.ToolCall.Tail == tail && e.ToolCall.Calls > w.calls {
			c := *e.ToolCall
			_ = r.Emit(journal.Event{ToolCall: &c})
		}
	}
}

// jobState is one job as squeue shows it.
type jobState struct {
	State, Node   string
	Submit, Start time.Time
}

func (s jobState) running() bool { return s.State == "RUNNING" || s.State == "COMPLETING" || s.done() }

func (s jobState) done() bool {
	switch s.State {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "STAGE_OUT", "SIGNALING", "":
		return false
	}
	return true
}

// waited is the queue wait: submission to start, as Slurm saw them when it shows both.
func (s jobState) waited(submitted time.Time) time.Duration {
	if !s.Submit.IsZero() && !s.Start.IsZero() && !s.Start.Before(s.Submit) {
		return s.Start.Sub(s.Submit)
	}
	return time.Since(submitted)
}

// squeue is one `squeue` of the operator's jobs shared by every tail that asks within a
// poll, so N running tails cost the controller one query per tick, not N.
type squeue struct {
	bin  string // the squeue executable (HostProgram)
	mu   sync.Mutex
	at   time.Time
	jobs map[string]jobState
	ok   bool
}

// state is job id's state; known is false once squeue no longer lists it (it aged out
// after MinJobAge, or squeue kept failing).
func (q *squeue) state(ctx context.Context, id string) (jobState, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if time.Since(q.at) > 200*time.Millisecond {
		q.refresh(ctx)
	}
	s, ok := q.jobs[id]
	if !ok && !q.ok {
		// squeue did not answer: the job is still taken as running, not as gone.
		return jobState{State: "RUNNING"}, true
	}
	return s, ok
}

func (q *squeue) forget() {
	q.mu.Lock()
	q.at = time.Time{}
	q.mu.Unlock()
}

// squeueFormat asks for fields every Slurm since long before 22.05 prints the same way,
// unlike --json, whose shape changes with each release.
const squeueFormat = "%i|%T|%N|%V|%S"

func (q *squeue) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, q.bin, "--me", "-h", "-t", "all", "-o", squeueFormat).Output()
	q.at = time.Now()
	if err != nil {
		q.ok = false
		return
	}
	q.ok = true
	q.jobs = parseSqueue(out)
}

func parseSqueue(out []byte) map[string]jobState {
	jobs := map[string]jobState{}
	for _, line := range bytes.Split(out, []byte("\n")) {
		f := strings.Split(strings.TrimSpace(string(line)), "|")
		if len(f) != 5 {
			continue
		}
		s := jobState{State: f[1], Node: f[2]}
		if strings.HasPrefix(s.Node, "(") {
			s.Node = ""
		}
		s.Submit, _ = time.ParseInLocation("2006-01-02T15:04:05", f[3], time.Local)
		s.Start, _ = time.ParseInLocation("2006-01-02T15:04:05", f[4], time.Local)
		jobs[f[0]] = s
	}
	return jobs
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readTail is the end of a log file, for an error message.
func readTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(none: " + err.Error() + ")"
	}
	if len(data) > 4096 {
		data = data[len(data)-4096:]
	}
	return strings.TrimSpace(string(data))
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// nodeLog is a job's log on its node when the exchange goes over HTTP.
const nodeLog = "/tmp/tare-slurm-%j.out"

// importEnd takes the end capsule a worker sent over HTTP into the run's exchange store.
func (b *slurmBackend) importEnd(ctx context.Context, x, root string) (capsule.Capsule, error) {
	caps, err := b.store.Import(ctx, filepath.Join(x, "end"))
	if err != nil {
		return capsule.Capsule{}, err
	}
	for _, c := range caps {
		if c.Root == root {
			return c, nil
		}
	}
	return capsule.Capsule{}, fmt.Errorf("no capsule of root %s came back", root)
}
