package workshop

import (
	"os"
	"path/filepath"
	"sort"

	"tare/agent"
)

// Dir is the folder below tare's state directory where experiments the app lists live
// (<state>/workshop/<name>/, as tare demo workshop prepares them).
const Dir = "workshop"

// Find lists the experiments below stateDir's workshop folder: each folder holding a
// plan.json, sorted. A folder that is not an experiment is left out; Load says why.
func Find(stateDir string) []string {
	if stateDir == "" {
		return nil
	}
	root := filepath.Join(stateDir, Dir)
	entries, _ := os.ReadDir(root)
	var out []string
	for _, d := range entries {
		if !d.IsDir() {
			continue
		}
		p := filepath.Join(root, d.Name())
		if fi, err := os.Lstat(filepath.Join(p, "plan.json")); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// Alive says whether the writer's recorded process still runs (the identity recorded with
// its pid still matches), so a live writer is told from one whose tare was killed.
func (s *State) Alive() bool { return s.alive() }

// What ResumeKind names.
const (
	// ResumeQuota: a provider quota wall stopped the writer.
	ResumeQuota = agent.StopQuota
	// ResumeLogin: the provider refused the writer's expired login.
	ResumeLogin = agent.StopLogin
)

// ResumeKind is what stopped a writer that resume continues, as its own event stream says:
// ResumeQuota for a provider quota wall, ResumeLogin for an expired login (the
// operator logs in again first), "" for a writer resume refuses. Read as Resumable reads.
func (e *Exp) ResumeKind(id string, s *State) string {
	if s.Status == StatusCompleted || s.Status == StatusPrepared {
		return ""
	}
	if stop, _ := resumableStop(e, id, s, false); stop != nil {
		return stop.Kind
	}
	return ""
}
