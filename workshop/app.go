package workshop

import (
	"os"
	"path/filepath"
	"sort"
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

// Resumable says whether the writer's own event stream shows a provider quota wall and it
// has not completed since: resume continues it, where a retry would start it over.
func (e *Exp) Resumable(id string, s *State) bool {
	if s.Status == "completed" || s.Status == "prepared" {
		return false
	}
	stop, _ := quotaStop(e, id, s)
	return stop != nil
}
