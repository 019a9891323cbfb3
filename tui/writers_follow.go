package tui

import (
	"path/filepath"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/fsnotify/fsnotify"

	"tare/workshop"
)

// writersPoll is how often the experiments are read again without a word from inotify: a
// writer whose tare was killed writes nothing, and only a look at its process tells.
const writersPoll = 3 * time.Second

// writersFollower follows the experiments for the Writers pane: those below the state
// directory's workshop folder and those the operator opened. Writers are run by other
// processes (tare workshop run, manual, a detached run the app started); inotify on the
// experiments' records folders wakes it as soon as a state.json or a stream changes.
type writersFollower struct {
	state string
	extra []string
	fs    *fsnotify.Watcher // nil: polled only

	mu      sync.Mutex
	watched map[string]bool

	wake chan struct{}
	done chan struct{}
	once sync.Once
}

func newWritersFollower(state string, extra []string) *writersFollower {
	f := &writersFollower{state: state, extra: extra, watched: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if fs, err := fsnotify.NewWatcher(); err == nil {
		f.fs = fs
		go f.loop()
	}
	return f
}

func (f *writersFollower) loop() {
	for {
		select {
		case _, ok := <-f.fs.Events:
			if !ok {
				return
			}
			f.now()
		case _, ok := <-f.fs.Errors:
			if !ok {
				return
			}
			f.now()
		}
	}
}

// now asks for a read at once (after an action of the app's own).
func (f *writersFollower) now() tea.Cmd {
	if f != nil {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// exps are the experiments followed now.
func (f *writersFollower) exps() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range append(workshop.Find(f.state), f.extra...) {
		if abs, err := filepath.Abs(d); err == nil && !seen[abs] {
			seen[abs] = true
			out = append(out, abs)
		}
	}
	return out
}

// load reads every experiment and places the watches a new one needs.
func (f *writersFollower) load() writersMsg {
	exps := f.exps()
	if f.fs != nil {
		dirs := []string{}
		if f.state != "" {
			dirs = append(dirs, filepath.Join(f.state, workshop.Dir))
		}
		for _, e := range exps {
			dirs = append(dirs, e, filepath.Join(e, "records"), filepath.Join(e, "evaluation"))
			ids, _ := filepath.Glob(filepath.Join(e, "records", "*"))
			dirs = append(dirs, ids...)
		}
		for _, d := range dirs {
			f.mu.Lock()
			w := f.watched[d]
			f.mu.Unlock()
			if !w && f.fs.Add(d) == nil {
				f.mu.Lock()
				f.watched[d] = true
				f.mu.Unlock()
			}
		}
	}
	return loadWriters(exps)
}

// first reads at once; wait reads after the next change (or the poll), at most once a frame.
func (f *writersFollower) first() tea.Cmd {
	if f == nil {
		return nil
	}
	return func() tea.Msg { return f.load() }
}

func (f *writersFollower) wait() tea.Cmd {
	if f == nil {
		return nil
	}
	return func() tea.Msg {
		t := time.NewTimer(writersPoll)
		defer t.Stop()
		select {
		case <-f.wake:
		case <-t.C:
		case <-f.done:
			return nil
		}
		// A stream that writes fast costs one read per few frames, not one per line.
		select {
		case <-time.After(10 * frameTime):
		case <-f.done:
			return nil
		}
		return f.load()
	}
}

func (f *writersFollower) close() {
	if f == nil {
		return
	}
	f.once.Do(func() {
		close(f.done)
		if f.fs != nil {
			f.fs.Close()
		}
	})
}
