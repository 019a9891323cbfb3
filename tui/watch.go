package tui

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"time"

	"tare/engine"
)

// runFeed is what a poll found new in one run's journal.
type runFeed struct {
	dir    string
	events []engine.Event
}

// feedMsg carries to the UI what the bridge gathered since its last send: new events per
// run (in journal order), the probe readings when they changed, and the liveness of runs
// whose liveness changed. Intermediate events are coalesced into it; none is dropped.
type feedMsg struct {
	runs   []runFeed
	probes []ProbeReading // nil: unchanged
	alive  map[string]bool
}

func (f *feedMsg) empty() bool { return len(f.runs) == 0 && f.probes == nil && len(f.alive) == 0 }

// merge adds g to f, keeping each run's events in order.
func (f *feedMsg) merge(g feedMsg) {
	for _, rf := range g.runs {
		found := false
		for i := range f.runs {
			if f.runs[i].dir == rf.dir {
				f.runs[i].events = append(f.runs[i].events, rf.events...)
				found = true
				break
			}
		}
		if !found {
			f.runs = append(f.runs, rf)
		}
	}
	if g.probes != nil {
		f.probes = g.probes
	}
	for dir, a := range g.alive {
		if f.alive == nil {
			f.alive = map[string]bool{}
		}
		f.alive[dir] = a
	}
}

// stamp is what says a file changed without reading it.
type stamp struct {
	size int64
	mod  time.Time
}

// watcher finds runs and readings below a state directory (or follows a fixed set of run
// directories) and reads what is new in them. It is owned by one bridge goroutine.
type watcher struct {
	stateDir string
	fixed    []string
	alive    func(dir string) bool
	log      *log.Logger

	followers map[string]*follower
	order     []string
	finished  map[string]bool
	liveness  map[string]bool
	probes    map[string]stamp
	lastScan  time.Time
	scanEvery time.Duration
}

func newWatcher(stateDir string, dirs []string, alive func(string) bool, logger *log.Logger) *watcher {
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	return &watcher{
		stateDir: stateDir, fixed: dirs, alive: alive, log: logger,
		followers: map[string]*follower{}, finished: map[string]bool{}, liveness: map[string]bool{},
		probes: map[string]stamp{}, scanEvery: time.Second,
	}
}

// listRuns finds every run directory below stateDir: <state>/<command>/<name>/journal.jsonl.
func listRuns(stateDir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(stateDir, "*", "*", engine.JournalFile))
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(paths))
	for i, p := range paths {
		dirs[i] = filepath.Dir(p)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// poll reads every followed journal; once a second it also looks for new runs, changed
// readings and the liveness of unfinished runs.
func (w *watcher) poll(now time.Time) feedMsg {
	var f feedMsg
	scan := now.Sub(w.lastScan) >= w.scanEvery
	if scan {
		w.lastScan = now
		w.scanRuns()
		f.probes = w.scanProbes()
	}
	for _, dir := range w.order {
		fl := w.followers[dir]
		events, err := fl.poll()
		if err != nil {
			if !os.IsNotExist(err) && (fl.last == nil || fl.last.Error() != err.Error()) {
				w.log.Printf("follow %s: %v", dir, err)
			}
			fl.last = err
			continue
		}
		for _, e := range events {
			if e.RunFinished != nil {
				w.finished[dir] = true
			}
			if e.Resumed != nil {
				// A retry goes on with a finished run: whether a process owns it counts again.
				delete(w.finished, dir)
			}
		}
		if len(events) > 0 {
			f.runs = append(f.runs, runFeed{dir: dir, events: events})
		}
	}
	if scan && w.alive != nil {
		for _, dir := range w.order {
			if w.finished[dir] {
				continue
			}
			a := w.alive(dir)
			if was, ok := w.liveness[dir]; !ok || was != a {
				w.liveness[dir] = a
				if f.alive == nil {
					f.alive = map[string]bool{}
				}
				f.alive[dir] = a
			}
		}
	}
	return f
}

func (w *watcher) scanRuns() {
	dirs := w.fixed
	if w.stateDir != "" {
		found, err := listRuns(w.stateDir)
		if err != nil {
			w.log.Printf("list runs in %s: %v", w.stateDir, err)
		}
		dirs = append(append([]string(nil), w.fixed...), found...)
	}
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if w.followers[d] == nil {
			w.followers[d] = newFollower(d)
			w.order = append(w.order, d)
		}
	}
}

// scanProbes returns every reading when any reading file changed, and nil otherwise.
func (w *watcher) scanProbes() []ProbeReading {
	if w.stateDir == "" {
		return nil
	}
	dir := filepath.Join(w.stateDir, ProbesDir)
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	seen := map[string]stamp{}
	changed := len(paths) != len(w.probes)
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			continue
		}
		st := stamp{info.Size(), info.ModTime()}
		seen[p] = st
		if w.probes[p] != st {
			changed = true
		}
	}
	w.probes = seen
	if !changed {
		return nil
	}
	readings, err := readProbes(dir)
	if err != nil {
		w.log.Printf("probes: %v", err)
	}
	if readings == nil {
		readings = []ProbeReading{}
	}
	return readings
}
