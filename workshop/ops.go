package workshop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"tare/agent"
	"tare/engine"
)

// stopFollow is what has been read of one stopped attempt's stream: where the reading is
// and how the run ended so far.
type stopFollow struct {
	file   agent.StreamFile
	reader *agent.StopReader
}

// stopFollows are the streams read so far, by file: the app's Writers pane asks on every
// refresh whether a writer can be resumed, and a writer's stream can be huge, so each look
// reads on from where the last stopped, a bounded chunk at a time.
var stopFollows = struct {
	sync.Mutex
	m map[string]*stopFollow
}{m: map[string]*stopFollow{}}

// maxStopFollows bounds the streams remembered; past it they are forgotten and read again.
const maxStopFollows = 512

// resumableStop reads a writer's own event stream and stderr for a stop that resume continues:
// a provider quota wall or an expired login, the way its agent reports one. The session it
// names, when the model had run, is the one to continue. With whole the stream is read to its
// end; without, one bounded chunk more than the last look (the app's refresh), and a stream
// not read to its end yet says no stop.
func resumableStop(e *Exp, id string, s *State, whole bool) (*agent.ProviderStop, string) {
	a, err := agent.ByName(s.Config.Agent)
	if err != nil {
		return nil, ""
	}
	dir := stoppedAttempt(e, id, s)
	events := filepath.Join(dir, "events.jsonl")
	key := s.Config.Agent + "\x00" + events
	stopFollows.Lock()
	defer stopFollows.Unlock()
	f := stopFollows.m[key]
	if f == nil {
		if len(stopFollows.m) >= maxStopFollows {
			clear(stopFollows.m)
		}
		f = &stopFollow{file: agent.StreamFile{Path: events}, reader: agent.NewStopReader(a)}
		f.file.Reset = func() { f.reader = agent.NewStopReader(a) }
		stopFollows.m[key] = f
	}
	for {
		_, more, err := f.file.Read(0, func(line []byte) { f.reader.Line(line) })
		if err != nil {
			return nil, ""
		}
		if !more {
			break
		}
		if !whole {
			return nil, ""
		}
	}
	// The last line may have no newline when the run ended: judged on a copy, as it stays
	// pending for the next look.
	r := *f.reader
	r.Line(f.file.Pending())
	var errEnd []byte
	if !r.Decided() {
		errEnd = agent.FileEnd(filepath.Join(dir, "stderr.log"), 64<<10)
	}
	stop, ok := r.Stop(errEnd)
	if !ok || (stop.Kind != agent.StopQuota && stop.Kind != agent.StopLogin) {
		return nil, ""
	}
	return &stop, r.Session
}

// stopWords are how a resumable stop is told to the operator: what stopped the writer and
// what to do before resume continues it.
func stopWords(kind string) (what, next string) {
	if kind == agent.StopLogin {
		return "an expired login", "log in again with the agent on this machine, then tare workshop resume continues it"
	}
	return "a provider limit", "tare workshop resume continues it"
}

// Resume continues a writer a provider quota wall or an expired login stopped (the operator
// logged in again first), in its own session, with a short notice. NOT retry: a retry is a new writer that re-derives everything from a cold start,
// while the stopped session still holds the reading, the reasoning and the draft, the
// expensive half of what a restart would pay for again.
//
// Anything else is refused: a timeout, a crash or a model that gave up are ambiguous about
// what ran, and resuming one would ask a writer to continue from a state nobody established.
// The stopped attempt is archived whole under records/ID/attempts/NN first.
func Resume(ctx context.Context, e *Exp, id string, o RunOptions) (*State, error) {
	s, unlock, err := e.idle(id, "resume it")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s.reattachable() {
		return nil, fmt.Errorf("writer %s: its Slurm job %s outlived the tare that followed it; collect it first (tare workshop collect re-attaches to the job), never launch it twice", id, s.Job.ID)
	}
	if s.Status != StatusFailed && s.Status != StatusRunning {
		return nil, fmt.Errorf("writer %s is %s; only a writer stopped by a provider quota wall or an expired login is resumed", id, s.Status)
	}
	stop, session := resumableStop(e, id, s, true)
	if stop == nil {
		return nil, fmt.Errorf("writer %s: its event stream carries no provider quota stop and no expired login; inspect its record (tare workshop inspect), "+
			"and use tare workshop retry %s NEW_ID if the work has to start over", id, id)
	}
	// --on slurm refused before anything is archived or submitted, as run does.
	if o.writers, err = engine.OpenWriters(ctx, o.On, o.Config); err != nil {
		return nil, err
	}
	srv, err := startScripts(e, o)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	// A refusal before the model ran names no session with work in it: the same assignment
	// simply goes again, a relaunch rather than a restart of work that happened.
	if session != "" {
		if _, err := os.Stat(filepath.Join(e.Record(id), "session")); err != nil {
			return nil, fmt.Errorf("writer %s: session %s is not on record; retry it as a new writer", id, session)
		}
	}
	if s.EndedAt != nil && len(s.OutputHashes) == 0 && stoppedAttempt(e, id, s) == e.Record(id) {
		// Bank the stopped attempt's partial draft with it, as collect would have.
		if _, err := archiveDrafts(e.Work(id), e.Record(id)); err != nil {
			return nil, err
		}
	}
	if _, err := archiveAttempt(e, id, s, stop.Kind+": "+stop.Detail); err != nil {
		return nil, err
	}
	s.Status, s.ResumedFrom, s.QuotaStop, s.StopKind = StatusPrepared, session, stop.Detail, stop.Kind
	s.Error, s.Exit, s.StartedAt, s.EndedAt, s.CollectedAt, s.TimedOutAfter, s.StoppedByQuota = "", nil, nil, nil, nil, 0, false
	s.StoppedAfterAnswer = nil
	s.SessionID, s.OutputHashes, s.RecordHashes, s.Job = "", nil, nil, nil
	if err := e.saveState(id, s); err != nil {
		return nil, err
	}
	prompt := ""
	if session != "" {
		prompt = resumePrompt
		if stop.Kind == agent.StopLogin {
			prompt = resumeLoginPrompt
		}
	}
	return runWriterLocked(ctx, e, id, o, srv, session, prompt)
}

// stoppedAttempt is the folder holding the stopped attempt's stream: the record, or the next
// attempts/NN when a resume moved it there and was stopped (a crash, kill -9) before it could
// record the move in state.json; the next resume then finds the wall where it was put.
func stoppedAttempt(e *Exp, id string, s *State) string {
	rec := e.Record(id)
	pending := filepath.Join(rec, "attempts", fmt.Sprintf("%02d", len(s.Attempts)+1))
	if _, err := os.Lstat(filepath.Join(rec, "events.jsonl")); os.IsNotExist(err) {
		if _, err := os.Lstat(filepath.Join(pending, "events.jsonl")); err == nil {
			return pending
		}
	}
	return rec
}

// archiveAttempt moves the stopped attempt's record aside before the next one runs: its
// events, stderr, prompt, argv, receipt, partial draft and state, nothing deleted and nothing
// overwritten, so the run reads as two attempts rather than one that changed its mind.
func archiveAttempt(e *Exp, id string, s *State, reason string) (string, error) {
	n := len(s.Attempts) + 1
	dir := filepath.Join(e.Record(id), "attempts", fmt.Sprintf("%02d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := writeJSON(filepath.Join(dir, "state.json"), s); err != nil {
		return "", err
	}
	for _, name := range []string{"events.jsonl", "stderr.log", "prompt.md", "launch.json", "artifacts", "response.md", "receipt.json", "transcripts"} {
		src := filepath.Join(e.Record(id), name)
		if _, err := os.Lstat(src); err == nil {
			if err := os.Rename(src, filepath.Join(dir, name)); err != nil {
				return "", err
			}
		}
	}
	h, err := treeHashes(dir)
	if err != nil {
		return "", err
	}
	s.Attempts = append(s.Attempts, Attempt{N: n, Reason: reason, Error: s.Error, Record: dir, Hashes: h})
	return dir, nil
}

// Retry stages a fresh writer in place of a failed one: the same seat under a new id, with a
// session of its own. The old writer stays on record.
func Retry(e *Exp, id, newID string) (*Writer, error) {
	if err := checkID("NEW_ID", newID); err != nil {
		return nil, err
	}
	unlock, err := e.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := e.State(id)
	if err != nil {
		return nil, err
	}
	if s.alive() {
		return nil, fmt.Errorf("writer %s: its process %d still runs; wait for it before retrying", id, s.PID)
	}
	if s.Status == StatusRunning && s.EndedAt == nil {
		return nil, fmt.Errorf("writer %s was launched and never ended on record; collect it first (tare workshop collect), which archives its draft", id)
	}
	if _, err := os.Lstat(e.Work(newID)); err == nil {
		return nil, fmt.Errorf("NEW_ID %s: a writer of that id already exists; give a new id", newID)
	}
	if _, err := os.Lstat(e.Record(newID)); err == nil {
		return nil, fmt.Errorf("NEW_ID %s: a writer of that id already exists; give a new id", newID)
	}
	h, err := treeHashes(filepath.Join(e.Root, "source"))
	if err != nil || !h.Equal(e.Plan.InputHashes) {
		return nil, fmt.Errorf("EXP %s: source/ changed since prepare; prepare a new experiment", e.Root)
	}
	w := s.Config
	w.ID, w.RetryOf = newID, id
	if err := prepareWriter(e.Root, e.Plan, w); err != nil {
		_ = os.RemoveAll(e.Work(newID))
		_ = os.RemoveAll(e.Record(newID))
		return nil, err
	}
	return &w, nil
}

// Inspection is one writer as inspect tells it: enough to decide what to do next.
type Inspection struct {
	Status       Status  `json:"status"`
	Agent        string  `json:"agent"`
	Model        string  `json:"model"`
	Tier         string  `json:"tier"`
	Mode         string  `json:"mode"`
	RetryOf      string  `json:"retry_of,omitempty"`
	Config       *Writer `json:"config,omitempty"`
	Error        string  `json:"error,omitempty"`
	ProcessAlive *bool   `json:"process_alive,omitempty"`
	QuotaStop    string  `json:"quota_stop,omitempty"`
	StopKind     string  `json:"stop_kind,omitempty"`
	Resumable    bool    `json:"resumable,omitempty"`
	ResumedFrom  string  `json:"resumed_from,omitempty"`
	// StoppedAfterAnswer: it answered and did not exit, and tare stopped it after the grace.
	StoppedAfterAnswer *engine.AnsweredStop `json:"stopped_after_answer,omitempty"`
	// SlurmJob is the attempt's Slurm job while no tare has taken its end: where it stands.
	SlurmJob        *JobPlace         `json:"slurm_job,omitempty"`
	Attempts        []Attempt         `json:"attempts,omitempty"`
	DeclaredOutputs map[string]string `json:"declared_outputs"`
	PacketUnchanged bool              `json:"packet_unchanged"`
	RedFlags        []string          `json:"red_flags,omitempty"`
	Next            string            `json:"next"`
}

// JobPlace is a writer's Slurm job as inspect tells it: its id, its node, and its state
// (pending, running, finished, unknown when Slurm no longer lists it and it sent nothing back,
// gone when its folder below the shared directory is gone too).
type JobPlace struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Node  string `json:"node,omitempty"`
}

// Inspect tells each writer's status, whether its process lives, whether its declared
// outputs are there (present, never how big: sizes would hand over the key before the seal),
// whether its packet is unchanged, and what to do next.
func Inspect(e *Exp, full bool) (map[string]any, error) {
	out := map[string]Inspection{}
	for _, id := range e.WriterIDs() {
		s, err := e.State(id)
		if err != nil {
			return nil, err
		}
		in := Inspection{Status: s.Status, Agent: s.Config.Agent, Model: s.Config.Model, Tier: s.Config.Tier, Mode: s.Config.Mode,
			RetryOf: s.Config.RetryOf, Error: s.Error, ResumedFrom: s.ResumedFrom, Attempts: s.Attempts, DeclaredOutputs: map[string]string{},
			StoppedAfterAnswer: s.StoppedAfterAnswer}
		if e.ReadingPending() {
			// An earlier attempt's files may be the sealed draft's bytes, and their sha256 is
			// the anon letter's: its hashes would pair a letter with its writer.
			in.Attempts = nil
			for _, a := range s.Attempts {
				a.Hashes = nil
				in.Attempts = append(in.Attempts, a)
			}
		}
		if full {
			c := s.Config
			in.Config = &c
		}
		if s.PID > 0 {
			alive := s.alive()
			in.ProcessAlive = &alive
		}
		missing := map[string]bool{}
		for _, m := range missingOutputs(e.Plan, e.Work(id)) {
			missing[m] = true
		}
		for _, o := range e.Plan.Outputs {
			in.DeclaredOutputs[o.Path] = "ok"
			if missing[o.Path] {
				in.DeclaredOutputs[o.Path] = "missing or undersized"
			}
		}
		_, perr := e.Writer(id)
		in.PacketUnchanged = perr == nil
		if perr != nil {
			in.RedFlags = append(in.RedFlags, perr.Error())
		}
		if s.ProbeVerdict != "" && s.ProbeVerdict != "tare: 0.00" {
			in.RedFlags = append(in.RedFlags, "its room's probe read "+s.ProbeVerdict)
		}
		if stop, _ := resumableStop(e, id, s, true); stop != nil && s.Status != StatusCompleted {
			in.QuotaStop, in.StopKind, in.Resumable = stop.Detail, stop.Kind, true
		}
		if s.Job != nil && s.Status == StatusRunning && s.EndedAt == nil {
			state, node := engine.WriterJobPlace(context.Background(), e.Record(id), id, s.Job.ID)
			in.SlurmJob = &JobPlace{ID: s.Job.ID, State: state, Node: firstOf(node, s.Job.Node)}
		}
		j := in.SlurmJob
		switch {
		case in.ProcessAlive != nil && *in.ProcessAlive && j != nil:
			in.Next = fmt.Sprintf("running as Slurm job %s (%s), followed by tare %d: wait for it (tare workshop watch)", j.ID, j.place(), s.PID)
		case in.ProcessAlive != nil && *in.ProcessAlive:
			in.Next = "running: wait for it (tare workshop watch)"
		case j != nil && j.State == "finished":
			in.Next = fmt.Sprintf("its Slurm job %s finished%s after the tare that followed it was stopped; collect it (tare workshop collect) to bring back what the node wrote", j.ID, j.on())
		case j != nil && j.State == "unknown":
			in.Next = fmt.Sprintf("its Slurm job %s is no longer listed by Slurm and sent nothing back, and the tare that followed it was stopped; "+
				"collect it (tare workshop collect): it takes the job's result if one comes, else fails the writer with the job's log", j.ID)
		case j != nil && j.State != "gone":
			in.Next = fmt.Sprintf("its Slurm job %s is still %s, but the tare that followed it was stopped; collect it (tare workshop collect): "+
				"it re-attaches to the job, waits for its end and brings back what the node wrote, without starting it again", j.ID, j.place())
		case s.Status == StatusRunning && s.EndedAt == nil:
			in.Next = "interrupted: its process is gone and it never ended on record (the tare that ran it was stopped); " +
				"collect it to archive its draft, then resume it if it hit a quota wall or retry it as a new writer"
		case s.Status == StatusRunning:
			in.Next = "ended but not collected: collect it"
		case s.Status == StatusPrepared:
			in.Next = "not run: run it"
		case s.Status == StatusFailed && in.Resumable && in.StopKind == agent.StopLogin:
			in.Next = "stopped by an expired login: log in again with the agent on this machine, then resume it (tare workshop resume), not retry"
		case s.Status == StatusFailed && in.Resumable:
			in.Next = "stopped by a provider quota wall: resume it (tare workshop resume), not retry"
		case s.Status == StatusFailed:
			in.Next = "failed: read its record, then retry it as a new writer"
		case s.Status == StatusCompleted:
			in.Next = "completed"
		}
		out[id] = in
	}
	return map[string]any{"experiment": e.Root, "supplied_bytes": e.Plan.SuppliedBytes, "sealed": e.IsSealed(), "writers": out}, nil
}

// place is "running on n1", "pending".
func (j *JobPlace) place() string { return j.State + j.on() }

func (j *JobPlace) on() string {
	if j.Node == "" {
		return ""
	}
	return " on " + j.Node
}
