package workshop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine"
	"tare/engine/journal"
	enginerun "tare/engine/run"
	"tare/modelserver"
)

// RunOptions are how run starts writers.
type RunOptions struct {
	// Writers are the writers to run, in the operator's order; empty: every auto writer of
	// the plan, cheapest tier first.
	Writers []string
	// Jobs is how many writers run at once (default one: seats sharing an account exhaust a
	// provider's window several times faster in parallel, and the wall then lands mid-turn on
	// every one of them at once instead of on one).
	Jobs    int
	Timeout time.Duration
	// Scripts put writers on tare's model server replaying a script: the key "" for every
	// writer, a writer id for that writer alone.
	Scripts map[string]string
	Seed    int64
	Config  *config.Config
	// Progress gets one line as each writer starts and ends: never its words or sizes.
	Progress io.Writer
	// On is where the writers run: "" or local on this machine, slurm one Slurm job each
	// (slurm.go); writers is that backend while Run runs.
	On string
	// Env is the environment image every writer's room is rooted in (--env; nil: the host's).
	Env     *enginerun.Env
	writers engine.Writers
}

// scripted is tare's model servers of a run, one per script file.
type scripted struct {
	servers map[string]*modelserver.Server
	files   map[string]string // writer id or "" -> script file
}

// startScripts parses every script before anything starts and serves each on loopback.
func startScripts(e *Exp, o RunOptions) (*scripted, error) {
	s := &scripted{servers: map[string]*modelserver.Server{}, files: o.Scripts}
	for who, file := range o.Scripts {
		if who != "" {
			if _, err := e.State(who); err != nil {
				return nil, fmt.Errorf("--script %s=%s: %v", who, file, err)
			}
		}
		if _, ok := s.servers[file]; ok {
			continue
		}
		script, err := modelserver.LoadScript(file)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("--script %s: %v", file, err)
		}
		srv, err := modelserver.New(modelserver.Options{Script: script, Seed: o.Seed,
			LogPath: filepath.Join(e.Root, "records", "model-requests-"+filepath.Base(file)+".jsonl")})
		if err != nil {
			s.close()
			return nil, err
		}
		if err := srv.Start("127.0.0.1:0"); err != nil {
			s.close()
			return nil, err
		}
		s.servers[file] = srv
	}
	return s, nil
}

// upstream is the address writer id talks to: a draw stream of its own on its script's
// server (the same for every attempt, so a resumed session continues its conversation where
// the wall stopped it), or "" for the real provider.
func (s *scripted) upstream(id string) (string, error) {
	if s == nil {
		return "", nil
	}
	file, ok := s.files[id]
	if !ok {
		if file, ok = s.files[""]; !ok {
			return "", nil
		}
	}
	return s.servers[file].Stream(id)
}

// file is the script writer id's model replays, made absolute ("" for the real provider).
func (s *scripted) file(id string) string {
	if s == nil {
		return ""
	}
	file, ok := s.files[id]
	if !ok {
		if file, ok = s.files[""]; !ok {
			return ""
		}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return file
	}
	return abs
}

func (s *scripted) close() {
	if s == nil {
		return
	}
	for _, srv := range s.servers {
		srv.Close()
	}
}

// SpendOrder is the plan's auto writers, cheapest tier first, in plan order within a tier.
func SpendOrder(ws []Writer) []string {
	sorted := append([]Writer{}, ws...)
	sort.SliceStable(sorted, func(i, j int) bool { return tierRank(sorted[i].Tier) < tierRank(sorted[j].Tier) })
	var out []string
	for _, w := range sorted {
		if w.Mode == "auto" {
			out = append(out, w.ID)
		}
	}
	return out
}

// Run runs the selected writers and returns each one's status (or the error that stopped it).
func Run(ctx context.Context, e *Exp, o RunOptions) (map[string]string, error) {
	if o.Jobs < 1 {
		return nil, fmt.Errorf("--jobs %d: use 1 or more", o.Jobs)
	}
	selected := o.Writers
	if len(selected) == 0 {
		selected = SpendOrder(e.Plan.Writers)
	}
	for _, id := range selected {
		if _, err := e.State(id); err != nil {
			return nil, err
		}
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("EXP %s: no auto writer to run; name writers, or run manual ones with tare workshop manual", e.Root)
	}
	var err error
	if o.writers, err = engine.OpenWriters(ctx, o.On, o.Config); err != nil {
		return nil, err
	}
	srv, err := startScripts(e, o)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	results := map[string]string{}
	var mu sync.Mutex
	task := func(id string) {
		st, err := runWriter(ctx, e, id, o, srv, "", "")
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			results[id] = "error: " + err.Error()
		} else {
			results[id] = string(st.Status)
		}
	}
	if o.Jobs == 1 {
		// Sequential means sequential: the order is the point.
		for _, id := range selected {
			if ctx.Err() != nil {
				break
			}
			task(id)
		}
		return results, nil
	}
	sem := make(chan struct{}, o.Jobs)
	var wg sync.WaitGroup
	for _, id := range selected {
		wg.Add(1)
		sem <- struct{}{}
		go func(id string) {
			defer wg.Done()
			defer func() { <-sem }()
			task(id)
		}(id)
	}
	wg.Wait()
	return results, nil
}

func say(w io.Writer, format string, args ...any) {
	if w != nil {
		// Errors here can carry what the writer chose (its draft names, its stream's text):
		// printed raw, an escape sequence in one would reach the operator's terminal.
		fmt.Fprintln(w, journal.Printable(fmt.Sprintf("workshop: "+format, args...)))
	}
}

// startPrompt is the first thing a writer is told.
const startPrompt = "Read /work/START.md and complete the assignment it specifies."

// resumePrompt is the notice a writer stopped by a quota wall gets in its own session: the
// session already holds the assignment, the reading and the draft, and re-sending START.md
// would invite a cold restart, the expensive thing a resume exists to avoid.
const resumePrompt = "You were interrupted by a provider usage limit. Your draft is where you left it, under /work/drafts. " +
	"Continue writing there and finish the assignment."

// resumeLoginPrompt is the notice a writer stopped by an expired login gets in its own session
// once the operator has logged in again.
const resumeLoginPrompt = "You were interrupted because the login to the model provider expired; it has been renewed. " +
	"Your draft is where you left it, under /work/drafts. Continue writing there and finish the assignment."

// runWriter runs one writer's attempt under its lock, then collects it.
func runWriter(ctx context.Context, e *Exp, id string, o RunOptions, srv *scripted, resume, prompt string) (*State, error) {
	unlock, err := e.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return runWriterLocked(ctx, e, id, o, srv, resume, prompt)
}

func runWriterLocked(ctx context.Context, e *Exp, id string, o RunOptions, srv *scripted, resume, prompt string) (*State, error) {
	s, err := e.Writer(id)
	if err != nil {
		return nil, err
	}
	if s.alive() {
		return nil, fmt.Errorf("writer %s: its process %d still runs; wait for it, do not launch it twice", id, s.PID)
	}
	if s.Status == StatusCompleted {
		return collectLocked(e, id, nil)
	}
	if s.reattachable() {
		// Its job outlived the tare that followed it: followed again, never launched twice.
		return reattachLocked(ctx, e, id, s, o)
	}
	if s.Status != StatusPrepared {
		return nil, fmt.Errorf("writer %s is %s; collect its evidence (tare workshop collect), resume it after a quota wall or an expired login, or retry it as a new writer", id, s.Status)
	}
	if s.Config.Mode == "manual" && len(o.Writers) == 0 {
		return nil, fmt.Errorf("writer %s is manual; run it with tare workshop manual", id)
	}
	work, rec := e.Work(id), e.Record(id)
	inst, err := engine.FindWriterAgent(s.Config.Agent, o.Config, e.Root)
	if err != nil {
		return nil, fmt.Errorf("writer %s: %v", id, err)
	}
	say(o.Progress, "%s: proving its room clean", id)
	verdict, err := engine.ProbeWriterRoom(ctx, s.Config.Agent, work, o.Config, nil)
	if err != nil {
		return nil, fmt.Errorf("writer %s: not started: %v", id, err)
	}
	s.ProbeVerdict = verdict
	up, err := srv.upstream(id)
	if err != nil {
		return nil, err
	}
	if prompt == "" {
		prompt = startPrompt
	}
	if err := os.WriteFile(filepath.Join(rec, "prompt.md"), []byte(prompt+"\n"), 0o644); err != nil {
		return nil, err
	}
	sessions := filepath.Join(rec, "session")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	s.Status, s.StartedAt, s.Job = StatusRunning, &now, nil
	if err := e.saveState(id, s); err != nil {
		return nil, err
	}
	args := append(effortArgs(s.Config.Agent, s.Config.Effort), s.Config.Args...)
	say(o.Progress, "%s [%s/%s] starts writing%s", id, s.Config.Agent, s.Config.Model, again(s))
	end, err := o.runWriter(ctx, id, engine.WriterOptions{Agent: s.Config.Agent, Model: s.Config.Model, Args: args,
		Workspace: work, ReadOnly: []string{"input", "START.md"}, Env: o.Env, Sessions: sessions, Prompt: prompt, Resume: resume,
		Upstream: up, Timeout: o.Timeout, Config: o.Config,
		Events: filepath.Join(rec, "events.jsonl"), Stderr: filepath.Join(rec, "stderr.log"),
		Started: func(pid int, argv []string) {
			// The process identity first, so a crash from here on leaves a record that says
			// which process ran and lets inspect tell it alive from gone.
			s.PID, s.Identity = pid, processIdentity(pid)
			_ = e.saveState(id, s)
			_ = writeJSON(filepath.Join(rec, "launch.json"), launch{Argv: argv, AgentVersion: inst.Version, ModelServer: up != "",
				Script: srv.file(id), Seed: o.Seed, Probe: verdict, ResumedSession: resume, Workspace: work})
		}}, inst, func(p journal.Placed) {
		// The job and its node on record as Slurm places it: what a tare killed while
		// following it leaves for inspect to tell and for collect to re-attach to.
		if s.Job == nil || (p.Node != "" && s.Job.Node == "") {
			s.Job = &Job{ID: p.Job, Node: p.Node}
			_ = e.saveState(id, s)
		}
	})
	return settle(ctx, e, id, s, o, end, err)
}

// launch is records/ID/launch.json: how the attempt was launched. Script and Seed let a
// re-attach serve a scripted writer's model again, as the killed tare served it.
type launch struct {
	Argv           []string `json:"argv"`
	AgentVersion   string   `json:"agent_version,omitempty"`
	ModelServer    bool     `json:"model_server"`
	Script         string   `json:"script,omitempty"`
	Seed           int64    `json:"seed,omitempty"`
	Probe          string   `json:"probe"`
	ResumedSession string   `json:"resumed_session"`
	Workspace      string   `json:"workspace"`
}

// settle records how a writer's attempt ended (end, or err when it did not start), then
// collects it: the same after a run and after a re-attach to its Slurm job.
func settle(ctx context.Context, e *Exp, id string, s *State, o RunOptions, end engine.WriterEnd, err error) (*State, error) {
	rec := e.Record(id)
	ended := time.Now().UTC()
	s.EndedAt, s.PID, s.Identity = &ended, 0, ""
	if err != nil {
		s.Status, s.Error = StatusFailed, "not started: "+err.Error()
		_ = e.saveState(id, s)
		return s, fmt.Errorf("writer %s: %v", id, err)
	}
	code := end.Exit
	s.Exit, s.SessionID, s.Error = &code, end.SessionID, end.Error
	if end.TimedOut {
		s.TimedOutAfter = o.Timeout.Seconds()
	}
	// Answered and stopped after the grace: its exit is the stop's signal, not how it ended.
	s.StoppedAfterAnswer = end.Answered
	if end.Stop != nil {
		s.Error = fmt.Sprintf("ended by the provider (%s): %s", end.Stop.Kind, end.Stop.Detail)
		s.StoppedByQuota = end.Stop.Kind == agent.StopQuota
		s.StoppedByLogin = end.Stop.Kind == agent.StopLogin
	}
	if err := writeJSON(filepath.Join(rec, "receipt.json"), end); err != nil {
		return nil, err
	}
	if err := e.saveState(id, s); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return s, ctx.Err()
	}
	st, err := collectLocked(e, id, nil)
	took := ended.Sub(*s.StartedAt).Round(time.Second)
	switch {
	case err == nil && s.StoppedAfterAnswer != nil:
		say(o.Progress, "%s finished in %s (it answered and did not exit; stopped after %gs)", id, took, s.StoppedAfterAnswer.Grace)
	case err == nil:
		say(o.Progress, "%s finished in %s", id, took)
	case s.StoppedByQuota || s.StoppedByLogin:
		what, next := stopWords(end.Stop.Kind)
		say(o.Progress, "%s stopped on %s after %s; %s", id, what, took, next)
	default:
		say(o.Progress, "%s failed after %s: %v", id, took, err)
	}
	if st == nil {
		st = s
	}
	return st, nil
}

func again(s *State) string {
	if len(s.Attempts) > 0 {
		return fmt.Sprintf(", attempt %d", len(s.Attempts)+1)
	}
	return ""
}

// External is what collect --external imports: a session run outside tare's rooms.
type External struct {
	SessionID  string `json:"session_id"`
	Model      string `json:"model"`
	Provenance string `json:"provenance"`
	Transcript string `json:"transcript,omitempty"`
}

// Collect banks a writer's drafts and receipt and checks them; a writer whose declared
// outputs are missing or short, or whose run ended in error, is failed with the reason.
func Collect(e *Exp, id string, ext *External) (*State, error) {
	return CollectWith(context.Background(), e, id, ext, RunOptions{})
}

func collectLocked(e *Exp, id string, ext *External) (*State, error) {
	s, err := e.Writer(id)
	if err != nil {
		return nil, err
	}
	if s.alive() {
		return nil, fmt.Errorf("writer %s: its process %d still runs; wait for it, do not collect it yet", id, s.PID)
	}
	rec, work := e.Record(id), e.Work(id)
	if s.Status == StatusCompleted {
		if h, err := treeHashes(filepath.Join(rec, "transcripts")); err != nil || !h.Equal(s.RecordHashes) {
			return nil, fmt.Errorf("writer %s: archived transcript integrity failure (records/%s/transcripts changed after collect)", id, id)
		}
		if h, err := treeHashes(filepath.Join(rec, "artifacts")); err != nil || !h.Equal(s.OutputHashes) {
			return nil, fmt.Errorf("writer %s: archived output integrity failure (records/%s/artifacts changed after collect)", id, id)
		}
		return s, nil
	}
	if s.Status == StatusPrepared && ext == nil {
		return nil, fmt.Errorf("writer %s has not run; run it first (tare workshop run EXP %s)", id, id)
	}
	fail := func(err error) (*State, error) {
		now := time.Now().UTC()
		s.Status, s.Error, s.CollectedAt = StatusFailed, err.Error(), &now
		if werr := e.saveState(id, s); werr != nil {
			return nil, werr
		}
		return s, fmt.Errorf("writer %s failed: %v", id, err)
	}
	// Drafts first, complete or not, before anything can fail.
	outputs, err := archiveDrafts(work, rec)
	if err != nil {
		return fail(err)
	}
	transcripts := filepath.Join(rec, "transcripts")
	if err := os.MkdirAll(transcripts, 0o755); err != nil {
		return nil, err
	}
	var end engine.WriterEnd
	switch {
	case ext != nil:
		if ext.SessionID == "" || ext.Model == "" || ext.Provenance == "" {
			return fail(errors.New("external collection needs session_id, model and provenance"))
		}
		if ext.Transcript != "" {
			data, err := os.ReadFile(ext.Transcript)
			if err != nil {
				return fail(fmt.Errorf("external transcript: %v", err))
			}
			if err := keep(filepath.Join(transcripts, filepath.Base(ext.Transcript)), data); err != nil {
				return fail(err)
			}
		}
		if err := writeJSON(filepath.Join(rec, "external.json"), map[string]any{"external": ext,
			"transport": "external import; agent completion not independently verified"}); err != nil {
			return nil, err
		}
	default:
		if s.EndedAt == nil {
			// Launched and never ended on record: the tare that ran it was stopped (a crash, a
			// kill -9), and its room with it.
			return fail(errors.New("interrupted: the tare that ran this writer stopped before it ended; its drafts are archived; retry it as a new writer"))
		}
		if err := readJSON(filepath.Join(rec, "receipt.json"), &end); err != nil {
			return fail(fmt.Errorf("no receipt of the run: %v", err))
		}
		if end.SessionID != "" {
			if data, err := engine.WriterSessionFile(s.Config.Agent, filepath.Join(rec, "session"), end.SessionID); err == nil {
				if err := keep(filepath.Join(transcripts, "session.jsonl"), data); err != nil {
					return fail(err)
				}
			}
		}
		if end.Answer != "" {
			if err := os.WriteFile(filepath.Join(rec, "response.md"), []byte(end.Answer), 0o644); err != nil {
				return nil, err
			}
		}
		if s.Error != "" {
			return fail(errors.New(s.Error))
		}
		// A manual writer's exit is how the operator left the agent, and a writer stopped
		// after its answer exits by tare's signal: their outputs decide.
		if s.Exit != nil && *s.Exit != 0 && !s.Manual && s.StoppedAfterAnswer == nil {
			return fail(fmt.Errorf("agent exit %d", *s.Exit))
		}
	}
	if missing := missingOutputs(e.Plan, work); len(missing) > 0 {
		return fail(fmt.Errorf("missing or undersized declared outputs: %s", strings.Join(missing, ", ")))
	}
	hashes, err := treeHashes(transcripts)
	if err != nil {
		return fail(err)
	}
	now := time.Now().UTC()
	s.Status, s.Error, s.CompletedAt, s.CollectedAt = StatusCompleted, "", &now, &now
	s.OutputHashes, s.RecordHashes = outputs, hashes
	if err := e.saveState(id, s); err != nil {
		return nil, err
	}
	return s, nil
}

// keep writes an archived file once; an archived file that would change is refused.
func keep(dst string, data []byte) error {
	if old, err := os.ReadFile(dst); err == nil {
		if sum(old) != sum(data) {
			return fmt.Errorf("%s changed after collection", filepath.Base(dst))
		}
		return nil
	}
	return os.WriteFile(dst, data, 0o644)
}

// archiveDrafts copies every draft, complete or not, into records/ID/artifacts. A draft that
// is a symlink or a special file is refused (the room wrote it), and an archived output that
// would change is refused: the archive is what the blind reading is checked against.
func archiveDrafts(work, rec string) (Hashes, error) {
	drafts := filepath.Join(work, "drafts")
	h, err := treeHashes(drafts)
	if err != nil {
		return nil, fmt.Errorf("drafts: %v", err)
	}
	artifacts := filepath.Join(rec, "artifacts")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return nil, err
	}
	for rel := range h {
		dst := filepath.Join(artifacts, filepath.FromSlash(rel))
		if old, err := os.ReadFile(dst); err == nil {
			if sum(old) != h[rel] {
				return nil, fmt.Errorf("archived output changed: %s; retry the writer as a new one", rel)
			}
			continue
		}
		data, err := readBeneath(drafts, rel)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := writeFileSynced(dst, data); err != nil {
			return nil, err
		}
	}
	return treeHashes(artifacts)
}

func missingOutputs(f *Frozen, work string) []string {
	var out []string
	for _, o := range f.Outputs {
		fi, err := os.Lstat(filepath.Join(work, filepath.FromSlash(o.Path)))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() < int64(o.MinBytes) {
			out = append(out, o.Path)
		}
	}
	return out
}
