package workshop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tare/capsule"
	"tare/engine"
)

// Frozen is plan.json: the plan as prepared, writers resolved, with the hash of every input.
type Frozen struct {
	Schema         int               `json:"schema"`
	Title          string            `json:"title,omitempty"`
	Assignment     string            `json:"assignment"`
	Brief          string            `json:"brief"`
	SourceRoot     string            `json:"source_root"`
	SourceRevision string            `json:"source_revision,omitempty"`
	SourceHead     string            `json:"source_head,omitempty"`
	Files          []File            `json:"files,omitempty"`
	RequiredReads  []string          `json:"required_reads,omitempty"`
	ReadingOrder   string            `json:"reading_order,omitempty"`
	Outputs        []Output          `json:"outputs"`
	Writers        []Writer          `json:"writers"`
	InputHashes    map[string]string `json:"input_hashes"`
	SuppliedBytes  int               `json:"supplied_bytes"`
	PreparedAt     time.Time         `json:"prepared_at"`
}

// State is records/ID/state.json: where one writer stands.
type State struct {
	Status   Status `json:"status"` // prepared, running, completed, failed
	Config   Writer `json:"config"`
	StartSHA string `json:"start_sha"`
	Manual   bool   `json:"manual,omitempty"`
	// PID and Identity name the room's process while it runs (its start time in clock ticks),
	// so a second launch, a collect or a resume is refused while it lives, and a crash is told
	// from a live writer after the fact.
	PID            int        `json:"pid,omitempty"`
	Identity       string     `json:"process_identity,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
	CollectedAt    *time.Time `json:"collected_at,omitempty"`
	CompletedAt    *time.Time `json:"completed_at,omitempty"`
	Exit           *int       `json:"exit_code,omitempty"`
	TimedOutAfter  float64    `json:"timed_out_after,omitempty"`
	Error          string     `json:"error,omitempty"`
	SessionID      string     `json:"session_id,omitempty"`
	ResumedFrom    string     `json:"resumed_from,omitempty"`
	QuotaStop      string     `json:"quota_stop,omitempty"`
	OutputHashes   Hashes     `json:"output_hashes,omitempty"`
	RecordHashes   Hashes     `json:"record_hashes,omitempty"`
	Attempts       []Attempt  `json:"attempts,omitempty"`
	ProbeVerdict   string     `json:"probe,omitempty"`
	StoppedByQuota bool       `json:"stopped_by_quota,omitempty"`
	// StoppedByLogin: the provider refused the writer's login (expired, revoked); the
	// operator logs in again and resumes it.
	StoppedByLogin bool `json:"stopped_by_login,omitempty"`
	// StopKind is what stopped the attempt a resume continues (agent.StopQuota, StopLogin).
	StopKind string `json:"stop_kind,omitempty"`
	// StoppedAfterAnswer: the writer answered and did not exit, and tare stopped it after a
	// grace; it is collected like a writer that exited.
	StoppedAfterAnswer *engine.AnsweredStop `json:"stopped_after_answer,omitempty"`
	// Job is the Slurm job the attempt runs as (run --on slurm): a job outlives a kill -9 of
	// the tare following it, and collect or run re-attach to it instead of launching again.
	Job *Job `json:"slurm_job,omitempty"`
}

// Job is a writer's Slurm job: its id and, once it ran, its node.
type Job struct {
	ID   string `json:"id"`
	Node string `json:"node,omitempty"`
}

// Attempt is an earlier attempt of a writer, archived whole under records/ID/attempts/NN.
type Attempt struct {
	N      int    `json:"attempt"`
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"`
	Record string `json:"record"`
	Hashes Hashes `json:"hashes"`
}

// Hashes maps a file's path below a folder to its sha256.
type Hashes map[string]string

// Equal says whether two trees hold the same files with the same bytes.
func (h Hashes) Equal(o Hashes) bool {
	if len(h) != len(o) {
		return false
	}
	for k, v := range h {
		if o[k] != v {
			return false
		}
	}
	return true
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func fileSum(p string) (string, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return sum(data), nil
}

// treeHashes hashes every file below root, refusing a symlink or a special file anywhere:
// inputs and drafts are regular files, and a room that planted a symlink would have the host
// read what it chose.
func treeHashes(root string) (Hashes, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a folder", root)
	}
	out := Hashes{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("symlink in %s: %s", root, rel)
		case d.IsDir():
			return nil
		case !t.IsRegular():
			return fmt.Errorf("not a regular file in %s: %s", root, rel)
		}
		data, err := capsule.ReadFileBeneath(root, rel, 1<<30)
		if err != nil {
			return err
		}
		out[rel] = sum(data)
		return nil
	})
	return out, err
}

func writeJSON(p string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return capsule.WriteFileAtomic(p, append(data, '\n'), 0o644)
}

func readJSON(p string, v any) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v", p, err)
	}
	return nil
}

// Prepare freezes a plan into a new experiment folder dest. Everything is checked first, and
// the experiment is built under a temporary name and renamed into place at the end, so a
// failure or a crash leaves no experiment that looks launchable.
func Prepare(planFile, dest string) (*Frozen, error) {
	planFile, err := filepath.Abs(planFile)
	if err != nil {
		return nil, err
	}
	if dest, err = filepath.Abs(dest); err != nil {
		return nil, err
	}
	if err := checkID("experiment folder name", filepath.Base(dest)); err != nil {
		return nil, fmt.Errorf("DEST %s: %v", dest, err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return nil, fmt.Errorf("DEST %s: the experiment already exists; fix: give a new folder", dest)
	}
	p, err := ReadPlan(planFile)
	if err != nil {
		return nil, err
	}
	r, err := validate(planFile, p)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, fmt.Errorf("DEST %s: %v", dest, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".preparing-")
	if err != nil {
		return nil, fmt.Errorf("DEST %s: %v", dest, err)
	}
	frozen, err := freeze(r, tmp, dest)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := capsule.SyncDir(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dest); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("DEST %s: %v", dest, err)
	}
	_ = capsule.SyncDir(filepath.Dir(dest))
	return frozen, nil
}

func freeze(r *resolved, dir, final string) (*Frozen, error) {
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	supplied := 0
	for _, rel := range r.order {
		dst := filepath.Join(dir, "source", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, r.files[rel], 0o644); err != nil {
			return nil, err
		}
		supplied += len(r.files[rel])
	}
	hashes, err := treeHashes(filepath.Join(dir, "source"))
	if err != nil {
		return nil, err
	}
	f := &Frozen{Schema: Schema, Title: r.plan.Title, Assignment: r.plan.Assignment, Brief: r.plan.Brief, SourceRoot: r.root,
		SourceRevision: r.revision, SourceHead: r.head, Files: r.plan.Files, RequiredReads: r.plan.RequiredReads,
		ReadingOrder: r.plan.ReadingOrder, Outputs: r.outputs, Writers: r.writers, InputHashes: hashes,
		SuppliedBytes: supplied, PreparedAt: time.Now().UTC()}
	for _, sub := range []string{"evaluation", "records", "writers"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	title := f.Title
	if title == "" {
		title = filepath.Base(final)
	}
	rev := f.SourceRevision
	if rev == "" {
		rev = "working files, frozen by hash"
	}
	readme := fmt.Sprintf("# %s\n\nSource revision: %s.\n\nPrivate experiment. plan.json freezes the assignment and inputs;\n"+
		"records/<writer>/state.json carries progress. Read the assignment\nbefore deciding whether to run, continue manually, or evaluate.\n", title, rev)
	if err := os.WriteFile(filepath.Join(dir, "experiment.md"), []byte(readme), 0o644); err != nil {
		return nil, err
	}
	for _, w := range f.Writers {
		if err := prepareWriter(dir, f, w); err != nil {
			return nil, err
		}
	}
	if err := writeJSON(filepath.Join(dir, "plan.json"), f); err != nil {
		return nil, err
	}
	d, err := fileSum(filepath.Join(dir, "plan.json"))
	if err != nil {
		return nil, err
	}
	return f, writeJSON(filepath.Join(dir, "plan-digest.json"), map[string]string{"sha256": d})
}

// startText is a writer's START.md, with the paths its room sees.
func startText(f *Frozen, w Writer) string {
	var b strings.Builder
	b.WriteString("# Your assignment\n\nRead these files in full before writing:\n\n")
	seen := map[string]bool{}
	for _, rel := range append([]string{"orientation.md", "assignment.md"}, f.RequiredReads...) {
		if !seen[rel] {
			seen[rel] = true
			fmt.Fprintf(&b, "- /work/input/%s\n", rel)
		}
	}
	if f.ReadingOrder != "" {
		fmt.Fprintf(&b, "\nThe order of the supplied material is in /work/input/%s.\n", f.ReadingOrder)
	}
	b.WriteString("\nOther supplied files are available as reference.\n\nThe assignment determines what to deliver. Save these files:\n\n")
	for _, o := range f.Outputs {
		fmt.Fprintf(&b, "- /work/%s\n", o.Path)
	}
	b.WriteString("\nWork with the supplied material. Stay inside this workspace; use no\n" +
		"web, external services or other agents. Inputs are read-only.\n" +
		"Write your contribution in drafts/. Keep any further alternatives\n" +
		"as separate files. Finish the assignment without asking for approval.\n")
	if slices.Contains(w.Capabilities, "image-generation") {
		b.WriteString("\nThis assignment additionally permits the agent's image-generation tool.\n")
	}
	if w.Persona != "" {
		fmt.Fprintf(&b, "\n## Persona\n\n%s\n", strings.TrimSpace(w.Persona))
	}
	return b.String()
}

// prepareWriter lays out one writer: its copy of the inputs, an empty drafts/, START.md and
// its state.
func prepareWriter(root string, f *Frozen, w Writer) error {
	work := filepath.Join(root, "writers", w.ID)
	if err := os.MkdirAll(filepath.Join(work, "drafts"), 0o755); err != nil {
		return err
	}
	if err := copyTree(filepath.Join(root, "source"), filepath.Join(work, "input")); err != nil {
		return err
	}
	start := []byte(startText(f, w))
	if err := capsule.WriteFileAtomic(filepath.Join(work, "START.md"), start, 0o644); err != nil {
		return err
	}
	return writeJSON(filepath.Join(root, "records", w.ID, "state.json"), State{Status: StatusPrepared, Config: w, StartSHA: sum(start)})
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// Exp is a loaded experiment whose frozen plan was checked against its digest.
type Exp struct {
	Root string
	Plan *Frozen
}

// Load opens an experiment, refusing one whose plan changed since prepare.
func Load(root string) (*Exp, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	var f Frozen
	if err := readJSON(filepath.Join(abs, "plan.json"), &f); err != nil {
		return nil, fmt.Errorf("EXP %s: not a workshop experiment (%v); fix: give a folder tare workshop prepare made", root, err)
	}
	if f.Schema != Schema {
		return nil, fmt.Errorf("EXP %s: unsupported experiment schema %d", root, f.Schema)
	}
	var d map[string]string
	if err := readJSON(filepath.Join(abs, "plan-digest.json"), &d); err != nil {
		return nil, fmt.Errorf("EXP %s: %v", root, err)
	}
	got, err := fileSum(filepath.Join(abs, "plan.json"))
	if err != nil {
		return nil, err
	}
	if got != d["sha256"] {
		return nil, fmt.Errorf("EXP %s: the frozen plan changed since prepare (plan.json no longer matches plan-digest.json); fix: prepare a new experiment", root)
	}
	return &Exp{Root: abs, Plan: &f}, nil
}

// Work is a writer's workspace, the room's /work.
func (e *Exp) Work(id string) string { return filepath.Join(e.Root, "writers", id) }

// Record is a writer's record folder: its state and every attempt's evidence.
func (e *Exp) Record(id string) string { return filepath.Join(e.Root, "records", id) }

// State reads a writer's state without checking its packet.
func (e *Exp) State(id string) (*State, error) {
	if err := checkID("WRITER", id); err != nil {
		return nil, err
	}
	var s State
	if err := readJSON(filepath.Join(e.Record(id), "state.json"), &s); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("WRITER %s: no such writer in %s; fix: pick one of %s", id, e.Root, strings.Join(e.WriterIDs(), ", "))
		}
		return nil, err
	}
	return &s, nil
}

// Writer loads a writer's state and checks its packet: its inputs and START.md exactly as
// prepared. A changed packet is refused, since a draft written from other material is not a
// draft of this experiment.
func (e *Exp) Writer(id string) (*State, error) {
	s, err := e.State(id)
	if err != nil {
		return nil, err
	}
	h, err := treeHashes(filepath.Join(e.Work(id), "input"))
	if err != nil || !h.Equal(e.Plan.InputHashes) {
		return nil, fmt.Errorf("writer %s: its input changed since prepare; fix: retry it as a new writer", id)
	}
	got, err := capsule.ReadFileBeneath(e.Work(id), "START.md", 1<<20)
	if err != nil || sum(got) != s.StartSHA {
		return nil, fmt.Errorf("writer %s: its entry instructions (START.md) changed since prepare; fix: retry it as a new writer", id)
	}
	return s, nil
}

// WriterIDs are the writers on disk (the plan's and every retry), sorted.
func (e *Exp) WriterIDs() []string {
	entries, _ := os.ReadDir(filepath.Join(e.Root, "records"))
	var out []string
	for _, d := range entries {
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(e.Root, "records", d.Name(), "state.json")); err == nil {
				out = append(out, d.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

// RetryID is the first id of the form WRITER-retry, WRITER-retry2... that no writer on disk
// has: the id the app offers for a retry, where the command line asks for one.
func (e *Exp) RetryID(id string) string {
	taken := map[string]bool{}
	for _, w := range e.WriterIDs() {
		taken[w] = true
	}
	for n := 1; ; n++ {
		c := id + "-retry"
		if n > 1 {
			c += fmt.Sprint(n)
		}
		if !taken[c] {
			return c
		}
	}
}

func (e *Exp) saveState(id string, s *State) error {
	return writeJSON(filepath.Join(e.Record(id), "state.json"), s)
}

// processIdentity is a live process's start time (field 22 of /proc/PID/stat), or "" for one
// that is gone or a zombie: with the pid, it tells the writer's process from a later one
// that reused its number.
func processIdentity(pid int) string {
	if pid <= 0 {
		return ""
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndex(string(data), ") ")
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(data)[i+2:])
	if len(fields) < 20 || fields[0] == "Z" {
		return ""
	}
	return fields[19]
}

// alive says whether the writer's recorded process still runs.
func (s *State) alive() bool {
	return s.PID > 0 && s.Identity != "" && processIdentity(s.PID) == s.Identity
}

// lock holds records/ID/operator.lock for one operator action on a writer.
func (e *Exp) lock(id string) (func(), error) {
	p := filepath.Join(e.Record(id), "operator.lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("writer %s: another tare holds %s; wait for it", id, p)
	}
	return func() { f.Close() }, nil
}

// readBeneath reads a regular file a room wrote, following no symlink on the way.
func readBeneath(root, rel string) ([]byte, error) {
	return capsule.ReadFileBeneath(root, rel, 1<<30)
}

// writeFileSynced writes an archive file whole or not at all.
func writeFileSynced(p string, data []byte) error {
	return capsule.WriteFileAtomic(p, data, 0o644)
}

// idle takes a writer's lock and loads it with its packet checked, refusing one whose process
// still runs; what names the action refused ("launch it twice", "resume it"). Call the
// returned unlock when done.
func (e *Exp) idle(id, what string) (*State, func(), error) {
	unlock, err := e.lock(id)
	if err != nil {
		return nil, nil, err
	}
	s, err := e.Writer(id)
	if err == nil && s.alive() {
		err = fmt.Errorf("writer %s: its process %d still runs; wait for it, do not %s", id, s.PID, what)
	}
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return s, unlock, nil
}
