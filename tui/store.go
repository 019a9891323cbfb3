package tui

import (
	"path/filepath"
	"sort"
	"time"

	"tare/engine/journal"
	"tare/engine/probe"
)

// runEntry is one run the app follows.
type runEntry struct {
	dir   string
	state *journal.RunState
	// alive is the engine's word on whether a process owns the run; known is false until
	// the first answer (and always, without an engine).
	alive, known bool
}

// status is the run's one word: live, done, error or crashed. A finished run whose tail is
// being retried (tare tail or a retry on a recorded or finished run) is live until it ends.
func (r *runEntry) status() string {
	_, running, _ := r.state.Counts()
	switch {
	case r.state.Finished && running > 0 && (!r.known || r.alive):
		return "live"
	case r.state.Finished && r.state.Error != "":
		return "error"
	case r.state.Finished:
		return "done"
	case r.known && !r.alive:
		return "crashed"
	}
	return "live"
}

// stoppedAt is when a run that no process owns and that has no report stopped, as far as
// its journal knows (its newest event): its unfinished tails are interrupted there, and
// their time stops counting. ok is false for any other run.
func (r *runEntry) stoppedAt() (at time.Time, ok bool) {
	if r.status() != "crashed" {
		return time.Time{}, false
	}
	return r.state.Updated, true
}

// interrupted is a tail's status cell in a run that stopped under it: nothing runs it now
// (resume runs it again).
var interrupted = cell{"interrupted", bad}

// elapsed is how long the run has taken so far.
func (r *runEntry) elapsed(now time.Time) time.Duration {
	s := r.state
	if s.Started.IsZero() {
		return 0
	}
	if s.Finished || (r.known && !r.alive) {
		return s.Updated.Sub(s.Started)
	}
	return now.Sub(s.Started)
}

// store is everything the app knows: the runs and the probe readings, as the journals and
// reading files say. Only the UI goroutine touches it.
type store struct {
	runs   map[string]*runEntry
	order  []string // run dirs, newest first
	probes map[string]probe.Summary
	// probing marks agents whose probe the app started and that have not answered yet.
	probing map[string]bool
	agents  []string
	// project is the folder whose readings probes holds: another project's reading, made
	// with other ancestors and files, says nothing about this one.
	project string
}

func newStore(agents []string, project string) *store {
	return &store{runs: map[string]*runEntry{}, probes: map[string]probe.Summary{}, probing: map[string]bool{}, agents: agents, project: project}
}

// run returns the entry for dir, adding it when it is new.
func (s *store) run(dir string) *runEntry {
	r := s.runs[dir]
	if r == nil {
		r = &runEntry{dir: dir, state: journal.NewRunState(filepath.Base(dir))}
		s.runs[dir] = r
		s.order = append(s.order, dir)
	}
	return r
}

// remove forgets a deleted run.
func (s *store) remove(dir string) {
	delete(s.runs, dir)
	for i, d := range s.order {
		if d == dir {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// apply folds a feed into the store and reports which runs changed.
func (s *store) apply(f feedMsg) map[string]bool {
	changed := map[string]bool{}
	for _, rf := range f.runs {
		r := s.run(rf.dir)
		for _, e := range rf.events {
			r.state.Apply(e)
			// A finished tail lets go of its tool calls (the tail view reads them from the
			// journal when it opens); otherwise memory would grow with every tail a long
			// run finishes. Live tails keep the engine's own bound.
			if e.TailFinished != nil {
				if t := r.state.Tails[e.TailFinished.ID]; t != nil {
					t.Tools = nil
				}
			}
		}
		changed[rf.dir] = true
	}
	for dir, alive := range f.alive {
		r := s.run(dir)
		r.alive, r.known = alive, true
		changed[dir] = true
	}
	if f.probes != nil {
		s.probes = map[string]probe.Summary{}
		for _, p := range f.probes {
			if p.Project != s.project || p.Room == "" {
				continue
			}
			// One row per agent: its newest reading of this project, whichever room.
			if old, ok := s.probes[p.Agent]; !ok || p.At.After(old.At) {
				s.probes[p.Agent] = p
			}
			delete(s.probing, p.Agent)
		}
	}
	if len(changed) > 0 {
		s.sort()
	}
	return changed
}

// sort orders runs newest first, by when they started (then by name, for runs whose first
// event has not been read yet).
func (s *store) sort() {
	sort.SliceStable(s.order, func(i, j int) bool {
		a, b := s.runs[s.order[i]].state, s.runs[s.order[j]].state
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		return s.order[i] > s.order[j]
	})
}

// agentNames is every agent the probes pane lists: the known ones and any with a reading.
func (s *store) agentNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range s.agents {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for a := range s.probes {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}
