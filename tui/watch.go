package tui

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"time"

	"tare/engine/journal"
	"tare/engine/probe"
)

// runFeed is what a poll found new in one run's journal.
type runFeed struct {
	dir    string
	events []journal.Event
}

// feedMsg carries to the UI what the bridge gathered since its last send: new events per
// run (in journal order), the probe readings when they changed, and the liveness of runs
// whose liveness changed. Intermediate events are coalesced into it; none is dropped.
type feedMsg struct {
	runs   []runFeed
	probes []probe.Summary // nil: unchanged
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
//
// With inotify (follow), a run is read when its journal changes, and the tree and readings
// when a folder or a reading changes; nothing is read while nothing changes. A folder that
// cannot be watched (inotify missing, its watches all taken) is polled instead: an
// unfinished run at every poll, a finished one and the tree at every scan.
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

	// notify is inotify on the followed folders; nil: everything is polled.
	notify *notifier
	// polledTree is set while some folder of the tree has no watch: the tree is then
	// listed at every scan.
	polledTree bool
	// sweepEvery is how often everything is read even with inotify: a safety net for a
	// state directory on a network filesystem, where inotify sees only this host's writes.
	sweepEvery time.Duration
	lastSweep  time.Time
	// noNotify keeps the watcher polling (the baseline of the idle benchmark).
	noNotify bool
	// full has the followers decode every line, as the app did before it skimmed (the
	// baseline of the huge-run benchmark).
	full bool
	// addWatch, when set, replaces inotify's add (tests exhaust the watches with it).
	addWatch func(string) error
}

func newWatcher(stateDir string, dirs []string, alive func(string) bool, logger *log.Logger) *watcher {
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	return &watcher{
		stateDir: stateDir, fixed: dirs, alive: alive, log: logger,
		followers: map[string]*follower{}, finished: map[string]bool{}, liveness: map[string]bool{},
		probes: map[string]stamp{}, scanEvery: time.Second, sweepEvery: 10 * time.Second, polledTree: true,
	}
}

// follow starts inotify and returns what signals a change (nil: polling only). The next
// poll lists the tree and places the watches.
func (w *watcher) follow() <-chan struct{} {
	if w.noNotify || w.notify != nil {
		return nil
	}
	n, err := newNotifier()
	if err != nil {
		w.log.Printf("inotify: %v; polling the journals instead", err)
		return nil
	}
	if w.addWatch != nil {
		n.add = w.addWatch
	}
	w.notify = n
	w.lastScan, w.lastSweep = time.Time{}, time.Time{}
	return n.wake
}

// every is how long the bridge may wait before the next poll: the poll period while a
// journal is polled (no inotify, or an unfinished run without a watch), else the scan
// period, which is all the liveness of runs needs.
func (w *watcher) every(poll time.Duration) time.Duration {
	if w.notify == nil || w.polledTree {
		return poll
	}
	for _, dir := range w.order {
		if fl := w.followers[dir]; fl.more || (!fl.watched && !w.finished[dir]) {
			return poll
		}
	}
	return max(poll, w.scanEvery)
}

// stop ends inotify.
func (w *watcher) stop() {
	if w.notify != nil {
		w.notify.close()
		w.notify = nil
	}
}

// listRuns finds every run directory below stateDir: <state>/<command>/<name>/journal.jsonl.
func listRuns(stateDir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(stateDir, "*", "*", journal.JournalFile))
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

// skimBudget is how long one poll may go on reading a big journal before it sends what it
// has; the bridge sends it and the next poll reads on.
const skimBudget = 500 * time.Millisecond

// poll reads what is new: the runs inotify says changed and the runs without a watch; once
// a second (a scan) also the liveness of unfinished runs, and without watches the tree,
// the readings and the finished runs.
func (w *watcher) poll(now time.Time) feedMsg {
	var f feedMsg
	var n notes
	if w.notify != nil {
		n = w.notify.take()
		for dir := range n.gone {
			if fl := w.followers[dir]; fl != nil {
				if n.runs == nil {
					n.runs = map[string]bool{}
				}
				fl.watched = false
				n.runs[dir] = true // read what it holds now (or that it is gone)
			}
		}
	}
	scan := now.Sub(w.lastScan) >= w.scanEvery
	if scan {
		w.lastScan = now
	}
	for dir := range n.runs {
		if w.followers[dir] == nil {
			n.tree = true // a journal made in a folder that was not a run yet
		}
	}
	sweep := w.notify != nil && (n.lost || now.Sub(w.lastSweep) >= w.sweepEvery)
	if sweep {
		w.lastSweep = now
	}
	fresh := map[string]bool{}
	if sweep || n.tree || (scan && w.polledTree) {
		fresh = w.scanRuns()
	}
	if sweep || n.probes || n.tree || (scan && w.polledTree) {
		f.probes = w.scanProbes()
	}
	for _, dir := range w.order {
		fl := w.followers[dir]
		var read bool
		switch {
		case sweep, fresh[dir], n.runs[dir], fl.more:
			read = true
		case !fl.watched:
			// Polled: an unfinished run at every poll, a finished one at every scan.
			read = !w.finished[dir] || scan
		default:
			// Watched: an unfinished run is still read once a scan, in case inotify
			// missed its writes (another host's, on a network filesystem).
			read = scan && !w.finished[dir]
		}
		if !read {
			continue
		}
		events, err := fl.poll()
		// A big journal is taken in steps of maxSkim, read on for up to skimBudget, so a run
		// of a million events is in at the first poll (the app draws meanwhile: the bridge
		// reads, not the UI).
		for began := time.Now(); err == nil && fl.more && time.Since(began) < skimBudget; {
			var more []journal.Event
			more, err = fl.poll()
			events = append(events, more...)
		}
		if err != nil {
			if !os.IsNotExist(err) && (fl.last == nil || fl.last.Error() != err.Error()) {
				w.log.Printf("follow %s: %v", dir, err)
			}
			fl.last = err
			continue
		}
		for _, e := range events {
			// A run is finished while its last event is its end; a retry goes on after it.
			w.finished[dir] = e.RunFinished != nil
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

// scanRuns finds the runs to follow and returns those it has just found (to be read now:
// their watch was placed before the read, so no write falls between the two).
func (w *watcher) scanRuns() map[string]bool {
	dirs := w.fixed
	if w.stateDir != "" {
		var found []string
		if w.notify != nil {
			found = w.watchTree()
		} else {
			var err error
			if found, err = listRuns(w.stateDir); err != nil {
				w.log.Printf("list runs in %s: %v", w.stateDir, err)
			}
		}
		dirs = append(append([]string(nil), w.fixed...), found...)
	}
	fresh := map[string]bool{}
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		fl := w.followers[d]
		if fl == nil {
			fl = newFollower(d)
			fl.skim = !w.full // the store keeps what a skim gives (skimLines)
			w.followers[d] = fl
			w.order = append(w.order, d)
			fresh[d] = true
		}
		if w.notify != nil && !fl.watched {
			if fl.watched = w.watchDir(d, kindRun); fl.watched {
				fresh[d] = true
			}
		}
	}
	return fresh
}

// watchTree places watches on the state directory, each command folder, each folder in
// those (a run may be made before its journal) and the readings' folder, and returns the run
// directories: those holding a journal. A folder it cannot watch makes the tree polled.
func (w *watcher) watchTree() []string {
	polled := !w.watchDir(w.stateDir, kindTree)
	var runs []string
	top, err := os.ReadDir(w.stateDir)
	if err != nil && !os.IsNotExist(err) {
		w.log.Printf("list runs in %s: %v", w.stateDir, err)
	}
	for _, c := range top {
		if !c.IsDir() {
			continue
		}
		cdir := filepath.Join(w.stateDir, c.Name())
		if c.Name() == probe.ProbesDir {
			polled = !w.watchDir(cdir, kindProbes) || polled
			continue
		}
		polled = !w.watchDir(cdir, kindTree) || polled
		entries, _ := os.ReadDir(cdir)
		for _, r := range entries {
			if !r.IsDir() {
				continue
			}
			rdir := filepath.Join(cdir, r.Name())
			if _, err := os.Stat(filepath.Join(rdir, journal.JournalFile)); err == nil {
				runs = append(runs, rdir)
			} else if !w.watchDir(rdir, kindRun) {
				polled = true // a run made here would not be seen
			}
		}
	}
	w.polledTree = polled
	return runs
}

// watchDir places a watch on dir; false leaves it polled (logged once per folder).
func (w *watcher) watchDir(dir string, kind watchKind) bool {
	if err := w.notify.watch(dir, kind); err != nil {
		if !os.IsNotExist(err) && w.notify.refused[dir] == nil {
			w.log.Printf("inotify on %s: %v; polling it instead", dir, err)
		}
		w.notify.refused[dir] = err
		return false
	}
	return true
}

// scanProbes returns every reading when any reading file changed, and nil otherwise.
func (w *watcher) scanProbes() []probe.Summary {
	if w.stateDir == "" {
		return nil
	}
	dir := filepath.Join(w.stateDir, probe.ProbesDir)
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
	readings, err := probe.ReadSummaries(dir)
	if err != nil {
		w.log.Printf("probes: %v", err)
	}
	if readings == nil {
		readings = []probe.Summary{}
	}
	return readings
}
