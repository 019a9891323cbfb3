package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"tare/capsule"
	"tare/engine/journal"
)

// GCOptions are tare gc's.
type GCOptions struct {
	// StateDir holds the runs (<state>/<command>/<run>/store).
	StateDir string
	// Keep leaves unreferenced objects written within it (0: everything unreferenced goes).
	Keep time.Duration
	// DryRun removes nothing and reports what would go.
	DryRun bool
	// Progress, when set, gets a line per run store that had something to free.
	Progress io.Writer
}

// GCResult is what tare gc did across the runs.
type GCResult struct {
	capsule.GCReport
	// Stores counts the run stores collected.
	Stores int
	// Busy are the runs left alone because a tare is running them (their rooms may count
	// on objects no capsule reaches yet).
	Busy []string
	// Failed are the run stores that could not be collected, with why; nothing was removed
	// from them.
	Failed []error
}

// GC collects the capsule store of every run below o.StateDir (capsule.Store.GC). Each run
// is locked as tare resume locks it while its store is collected, so no tail or resume
// starts on it meanwhile; a run another tare holds is left alone and listed in Busy.
func GC(ctx context.Context, o GCOptions) (GCResult, error) {
	var res GCResult
	kinds, err := os.ReadDir(o.StateDir)
	if os.IsNotExist(err) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("state directory %s: %v", o.StateDir, err)
	}
	for _, k := range kinds {
		if !k.IsDir() { // a symlink is not followed: the state dir's own runs only
			continue
		}
		runs, err := os.ReadDir(filepath.Join(o.StateDir, k.Name()))
		if err != nil {
			return res, fmt.Errorf("state directory %s: %v", o.StateDir, err)
		}
		for _, r := range runs {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			dir := filepath.Join(o.StateDir, k.Name(), r.Name())
			if !r.IsDir() || !isStore(filepath.Join(dir, "store")) {
				continue
			}
			rep, busy, err := gcRun(ctx, dir, o)
			switch {
			case busy:
				res.Busy = append(res.Busy, dir)
			case err != nil:
				res.Failed = append(res.Failed, err)
			default:
				res.Stores++
				res.Add(rep)
				if o.Progress != nil && rep.Objects+rep.Temps > 0 {
					verb := "freed"
					if o.DryRun {
						verb = "would free"
					}
					fmt.Fprintf(o.Progress, "tare gc: %s: %s %s\n", journal.Printable(dir), verb, rep.Describe())
				}
			}
		}
	}
	return res, nil
}

// isStore says whether dir is a capsule store (a folder, not a symlink, with its marker).
func isStore(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	m, err := os.Lstat(filepath.Join(dir, "tare-store"))
	return err == nil && m.Mode().IsRegular()
}

// gcRun collects one run's store holding the run's lock; busy when another tare holds it.
func gcRun(ctx context.Context, dir string, o GCOptions) (capsule.GCReport, bool, error) {
	// As run.Lock: a planted lock symlink would have gc truncate and write the file it names.
	lock, err := journal.OpenNoFollow(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return capsule.GCReport{}, false, fmt.Errorf("run directory %s: lock: %v", dir, err)
	}
	defer lock.Close() // releases the flock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == syscall.EWOULDBLOCK {
		return capsule.GCReport{}, true, nil
	} else if err != nil {
		return capsule.GCReport{}, false, fmt.Errorf("run directory %s: lock: %v", dir, err)
	}
	// As run.Lock does: a tail or resume refused meanwhile names this process.
	_ = lock.Truncate(0)
	_, _ = lock.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	s, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		return capsule.GCReport{}, false, err
	}
	rep, err := s.GC(ctx, o.Keep, o.DryRun)
	return rep, false, err
}
