package tui

import (
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"

	"tare/engine/journal"
)

// watchKind is what a watched folder is to the watcher.
type watchKind int

const (
	// kindTree is the state directory or a command folder in it: a run appears or goes.
	kindTree watchKind = iota + 1
	// kindRun is a run directory (or one that may become a run): its journal grows.
	kindRun
	// kindProbes is the folder of the probe readings.
	kindProbes
)

// notifier turns inotify events on the followed folders into what the watcher must read:
// the runs whose journal changed, and whether the tree or the readings changed. Events are
// taken by its own goroutine at once and coalesced here, so the kernel's queue never fills
// while the UI is busy; when it overflowed anyway, lost says every file must be read.
type notifier struct {
	fs *fsnotify.Watcher
	// add places a watch (fs.Add); a test replaces it to exhaust the watches.
	add func(string) error

	mu     sync.Mutex
	kinds  map[string]watchKind
	runs   map[string]bool
	gone   map[string]bool
	tree   bool
	probes bool
	lost   bool

	wake chan struct{}
	done chan struct{}

	// refused are the folders a watch could not be placed on, with why (the watcher's
	// goroutine only: each is logged once).
	refused map[string]error
}

// newNotifier starts inotify; an error (no inotify, or every instance taken) means polling.
func newNotifier() (*notifier, error) {
	fs, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	n := &notifier{
		fs: fs, add: fs.Add, kinds: map[string]watchKind{}, runs: map[string]bool{}, gone: map[string]bool{}, refused: map[string]error{},
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	go n.loop()
	return n, nil
}

// watch places a watch on dir as kind. An error (the user's watches are all taken, the
// folder went) leaves dir to be polled.
func (n *notifier) watch(dir string, kind watchKind) error {
	n.mu.Lock()
	_, ok := n.kinds[dir]
	n.mu.Unlock()
	if ok {
		return nil
	}
	if err := n.add(dir); err != nil {
		return err
	}
	n.mu.Lock()
	n.kinds[dir] = kind
	n.mu.Unlock()
	return nil
}

// close stops inotify and the goroutine.
func (n *notifier) close() {
	n.fs.Close()
	<-n.done
}

func (n *notifier) loop() {
	defer close(n.done)
	for {
		select {
		case ev, ok := <-n.fs.Events:
			if !ok {
				return
			}
			n.note(ev)
		case _, ok := <-n.fs.Errors:
			if !ok {
				return
			}
			// The only error inotify reports is a lost queue: what changed is unknown.
			n.mu.Lock()
			n.lost = true
			n.mu.Unlock()
			n.signal()
		}
	}
}

// note records what one event says must be read again.
func (n *notifier) note(ev fsnotify.Event) {
	n.mu.Lock()
	changed := false
	if k := n.kinds[ev.Name]; k != 0 && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// A watched folder went: its watch went with it. The tree is looked at again and
		// places a new watch if the folder comes back.
		delete(n.kinds, ev.Name)
		n.gone[ev.Name] = true
		n.tree, changed = true, true
	}
	dir := filepath.Dir(ev.Name)
	switch n.kinds[dir] {
	case kindTree:
		// A folder made, removed or renamed; writes (the app's own log) change no run.
		if ev.Has(fsnotify.Create | fsnotify.Remove | fsnotify.Rename) {
			n.tree, changed = true, true
		}
	case kindRun:
		if filepath.Base(ev.Name) == journal.JournalFile {
			n.runs[dir], changed = true, true
		}
	case kindProbes:
		n.probes, changed = true, true
	}
	n.mu.Unlock()
	if changed {
		n.signal()
	}
}

func (n *notifier) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// notes is what the notifier gathered since the last take.
type notes struct {
	runs, gone         map[string]bool
	tree, probes, lost bool
}

// take returns what changed since the last take and starts gathering anew.
func (n *notifier) take() notes {
	n.mu.Lock()
	defer n.mu.Unlock()
	// The maps are handed over whole (the goroutine gathers into new ones), never shared.
	t := notes{tree: n.tree, probes: n.probes, lost: n.lost}
	if len(n.runs) > 0 {
		t.runs, n.runs = n.runs, map[string]bool{}
	}
	if len(n.gone) > 0 {
		t.gone, n.gone = n.gone, map[string]bool{}
	}
	n.tree, n.probes, n.lost = false, false, false
	return t
}
