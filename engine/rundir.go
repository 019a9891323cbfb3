package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
)

// run is one run directory being written: its journal, the bus its events go out on, and
// the state they add up to. Every event goes to the journal first (final ones fsynced), then
// to the bus, so a subscriber that falls behind never costs the record anything.
type run struct {
	dir     string
	journal *journal.Journal
	bus     *journal.Bus
	lock    *os.File

	mu    sync.Mutex
	state *journal.RunState
}

// RunDirName is the default name of a run's directory: the project's folder name and the
// time, as the seed names them.
func RunDirName(project string, now time.Time) string {
	return fmt.Sprintf("%s-%s", filepath.Base(project), now.Format("20060102-150405"))
}

// MakeFreeRunDir creates the default run directory below parent for project, taking the
// next "-N" when another process made the same name first: the name is chosen by the
// creation itself, so runs started in the same second (tare judge as the check of tails
// judged side by side) never share one.
func MakeFreeRunDir(parent, project string, now time.Time) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("run directory %s: %v", parent, err)
	}
	name := RunDirName(project, now)
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

// newRun creates the run directory of a new run of kind: out when the operator named one,
// else a fresh name below the state directory's folder for kind, chosen by the creation
// itself (MakeFreeRunDir) so that two runs started in the same second never share one. The
// caller learns the name from the run, never by predicting it.
func newRun(out string, cfg *config.Config, kind, project string, bus *journal.Bus) (*run, error) {
	if out != "" {
		return createRun(out, bus)
	}
	dir, err := MakeFreeRunDir(filepath.Join(cfg.StateDir, kind), project, time.Now())
	if err != nil {
		return nil, err
	}
	r, err := openRun(dir, bus)
	if err != nil {
		os.Remove(dir) // empty still: nothing of a run is left behind
		return nil, err
	}
	return r, nil
}

// createRun makes a new run directory; it refuses one that holds anything, so a run never
// writes over another. An empty folder holds no run: the app makes one with MakeFreeRunDir to
// name a run before another process starts it there.
func createRun(dir string, bus *journal.Bus) (*run, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("run directory %s: %v", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if os.IsExist(err) && emptyDir(dir) {
			return openRun(dir, bus)
		}
		if os.IsExist(err) {
			return nil, fmt.Errorf("run directory %s exists; fix: choose another --out, or continue it with tare resume %s", dir, dir)
		}
		return nil, fmt.Errorf("run directory %s: %v", dir, err)
	}
	return openRun(dir, bus)
}

// emptyDir reports whether dir is a folder (not a link to one) with nothing in it.
func emptyDir(dir string) bool {
	if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
		return false
	}
	names, err := os.ReadDir(dir)
	return err == nil && len(names) == 0
}

// openRun opens an existing run directory for appending (tare resume). It holds the run's
// lock until close, so two processes never write one run.
func openRun(dir string, bus *journal.Bus) (*run, error) {
	lock, err := lockRun(dir)
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

func openLocked(dir string, bus *journal.Bus) (*run, error) {
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
	return &run{dir: dir, journal: j, bus: bus, state: journal.Replay(filepath.Base(dir), events)}, nil
}

// emit records e in the journal, then publishes it. A journal that cannot be written stops
// the run: a run whose record is lost is worth nothing.
func (r *run) emit(e journal.Event) error {
	e = journal.PrintableEvent(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.journal.Append(&e); err != nil {
		return err
	}
	r.state.Apply(e)
	r.bus.Publish(e)
	return nil
}

// snapshot returns a copy of the run's state as the journal has it now.
func (r *run) snapshot() *journal.RunState {
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

func (r *run) close() error {
	err := r.journal.Close()
	if r.lock != nil {
		r.lock.Close() // releases the flock
	}
	return err
}

// lockRun takes the run directory's lock, naming the holder when another tare has it.
func lockRun(dir string) (*os.File, error) {
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

// createRunFile is os.Create for a file tare writes in a run folder (a log, a tail's stdout):
// journal.OpenNoFollow, so a link in its place is refused, not written through.
func createRunFile(path string) (*os.File, error) {
	return journal.OpenNoFollow(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// writeRunFile is capsule.WriteFileAtomic for a file of a run folder (its report, a tail's
// result, the recipe), refusing one whose name is taken by anything but a regular file:
// the rename would replace a symlink without following it, but a link there was planted,
// and the run is not tare's as it left it.
func writeRunFile(path string, data []byte) error {
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
