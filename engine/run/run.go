// Package run is one run folder being written: its lock, its journal and the state the
// journal adds up to, the bus its events go out on, its recipe, and the watches that stop or
// flag a tail (kill requests, stalls). Every analysis writes its run through it, so the
// journal's order guarantee (journal first, final events fsynced, then the bus) holds for all.
package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"tare/capsule"
	"tare/engine/journal"
)

// Run is one run directory being written: its journal, the bus its events go out on, and
// the state they add up to. Every event goes to the journal first (final ones fsynced), then
// to the bus, so a subscriber that falls behind never costs the record anything.
type Run struct {
	dir     string
	journal *journal.Journal
	bus     *journal.Bus
	lock    *os.File

	mu    sync.Mutex
	state *journal.RunState
	// err is the first journal write that failed: from then on the run's record is lost.
	err error
}

// DirName is the default name of a run's directory: the project's folder name and the
// time, as the seed names them.
func DirName(project string, now time.Time) string {
	return fmt.Sprintf("%s-%s", filepath.Base(project), now.Format("20060102-150405"))
}

// MakeFreeDir creates the default run directory below parent for project, taking the
// next "-N" when another process made the same name first: the name is chosen by the
// creation itself, so runs started in the same second (tare judge as the check of tails
// judged side by side) never share one.
func MakeFreeDir(parent, project string, now time.Time) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("run directory %s: %v", parent, err)
	}
	name := DirName(project, now)
	dir := filepath.Join(parent, name)
	for n := 2; ; n++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", fmt.Errorf("run directory %s: %v", dir, err)
		}
		dir = filepath.Join(parent, fmt.Sprintf("%s-%d", name, n))
	}
}

// New creates the run directory of a new run: out when the operator named one, else a fresh
// name below parent for project, chosen by the creation itself (MakeFreeDir) so that two runs
// started in the same second never share one. The caller learns the name from the run
// (Dir), never by predicting it. A nil bus is a new one.
func New(out, parent, project string, bus *journal.Bus) (*Run, error) {
	if out != "" {
		return Create(out, bus)
	}
	dir, err := MakeFreeDir(parent, project, time.Now())
	if err != nil {
		return nil, err
	}
	r, err := Open(dir, bus)
	if err != nil {
		os.Remove(dir) // empty still: nothing of a run is left behind
		return nil, err
	}
	return r, nil
}

// Create makes a new run directory; it refuses one that holds anything, so a run never
// writes over another. An empty folder holds no run: the app makes one with MakeFreeDir to
// name a run before another process starts it there. A nil bus is a new one.
func Create(dir string, bus *journal.Bus) (*Run, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("run directory %s: %v", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if os.IsExist(err) && emptyDir(dir) {
			return Open(dir, bus)
		}
		if os.IsExist(err) {
			return nil, fmt.Errorf("run directory %s exists; fix: choose another --out, or continue it with tare resume %s", dir, dir)
		}
		return nil, fmt.Errorf("run directory %s: %v", dir, err)
	}
	return Open(dir, bus)
}

// emptyDir reports whether dir is a folder (not a link to one) with nothing in it.
func emptyDir(dir string) bool {
	if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
		return false
	}
	names, err := os.ReadDir(dir)
	return err == nil && len(names) == 0
}

// Open opens an existing run directory for appending (tare resume). It holds the run's lock
// until Close, so two processes never write one run.
func Open(dir string, bus *journal.Bus) (*Run, error) {
	lock, err := Lock(dir)
	if err != nil {
		return nil, err
	}
	r, err := openLocked(dir, bus)
	if err != nil {
		lock.Close()
		return nil, err
	}
	r.lock = lock
	return r, nil
}

func openLocked(dir string, bus *journal.Bus) (*Run, error) {
	events, err := journal.ReadJournal(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	j, err := journal.OpenJournal(dir)
	if err != nil {
		return nil, err
	}
	if bus == nil {
		bus = journal.NewBus()
	}
	return &Run{dir: dir, journal: j, bus: bus, state: journal.Replay(filepath.Base(dir), events)}, nil
}

// Dir is the run's directory.
func (r *Run) Dir() string { return r.dir }

// Emit records e in the journal, then publishes it. A journal that cannot be written stops
// the run: a run whose record is lost is worth nothing, so every caller stops on an error.
func (r *Run) Emit(e journal.Event) error {
	e = journal.PrintableEvent(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.journal.Append(&e); err != nil {
		if r.err == nil {
			r.err = err
		}
		return err
	}
	r.state.Apply(e)
	r.bus.Publish(e)
	return nil
}

// Err is the first journal write that failed, or nil. A caller that could not stop on
// Emit's error (a watch, a stream) finds it here: the run must stop all the same.
func (r *Run) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Snapshot returns a copy of the run's state as the journal has it now.
func (r *Run) Snapshot() *journal.RunState {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp := *r.state
	cp.Tails = make(map[string]*journal.TailState, len(r.state.Tails))
	for id, t := range r.state.Tails {
		tc := *t
		cp.Tails[id] = &tc
	}
	cp.Order = append([]string(nil), r.state.Order...)
	return &cp
}

// Close closes the journal and lets go of the run's lock.
func (r *Run) Close() error {
	err := r.journal.Close()
	if r.lock != nil {
		r.lock.Close() // releases the flock
	}
	return err
}

// Lock takes the run directory's lock, naming the holder when another tare has it; closing
// the file lets go of it.
func Lock(dir string) (*os.File, error) {
	f, err := journal.OpenNoFollow(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run directory %s: lock: %v", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		return nil, fmt.Errorf("%s is being run by another tare (pid %s); fix: let it finish, or watch it with tare watch %s",
			dir, strings.TrimSpace(string(holder)), dir)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	return f, nil
}

// Alive reports whether a process holds runDir's lock: the run is live, not crashed.
func Alive(runDir string) bool {
	f, err := journal.OpenNoFollow(filepath.Join(runDir, "lock"), os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// CreateFile is os.Create for a file tare writes in a run folder (a log, a tail's stdout):
// journal.OpenNoFollow, so a link in its place is refused, not written through.
func CreateFile(path string) (*os.File, error) {
	return journal.OpenNoFollow(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// WriteFile is capsule.WriteFileAtomic for a file of a run folder (its report, a tail's
// result, the recipe), refusing one whose name is taken by anything but a regular file:
// the rename would replace a symlink without following it, but a link there was planted,
// and the run is not tare's as it left it.
func WriteFile(path string, data []byte) error {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s, not a file tare wrote; tare never writes through a link in a run folder; fix: remove it", path, fileKind(st.Mode()))
	}
	return capsule.WriteFileAtomic(path, data, 0o644)
}

// fileKind names a mode's file type for messages.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "folder"
	case m&os.ModeNamedPipe != 0:
		return "fifo"
	}
	return "special file"
}
