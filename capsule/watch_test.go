package capsule

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWatcherReportsChanges(t *testing.T) {
	ws := richWorkspace(t)
	w, err := NewWatcher(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if d, err := w.Dirty(); err != nil || len(d) != 0 {
		t.Fatalf("quiet workspace: %v %v", d, err)
	}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"modify", func() { write(t, filepath.Join(ws, "src/a/b/c/deep.go"), "changed", 0o644) }, []string{"src/a/b/c/deep.go"}},
		{"chmod", func() { os.Chmod(filepath.Join(ws, "README.md"), 0o600) }, []string{"README.md"}},
		{"delete", func() { os.Remove(filepath.Join(ws, "empty.txt")) }, []string{"empty.txt"}},
		{"new folder with files at once", func() {
			write(t, filepath.Join(ws, "fresh/one/two/file"), "f", 0o644)
		}, []string{"fresh"}},
		{"change inside the new folder", func() { write(t, filepath.Join(ws, "fresh/one/two/file"), "g", 0o644) }, []string{"fresh/one/two/file"}},
		{"rename folder", func() { os.Rename(filepath.Join(ws, "src/a"), filepath.Join(ws, "src/z")) }, []string{"src/a", "src/z"}},
		{"change inside the moved folder", func() { write(t, filepath.Join(ws, "src/z/b/c/same.go"), "moved", 0o644) }, []string{"src/z/b/c/same.go"}},
		{"symlink", func() { os.Symlink("x", filepath.Join(ws, "names/new-link")) }, []string{"names/new-link"}},
		{"remove folder", func() { os.RemoveAll(filepath.Join(ws, "fresh")) }, []string{"fresh"}},
	}
	for _, st := range steps {
		st.do()
		got, err := w.Dirty()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if strings.Join(got, ",") != strings.Join(st.want, ",") {
			t.Fatalf("%s: dirty %q, want %q", st.name, got, st.want)
		}
	}
}

// SnapWatched over random edits gives the root a full walk gives.
func TestSnapWatchedMatchesFullWalk(t *testing.T) {
	ws := richWorkspace(t)
	w, err := NewWatcher(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s, verifier := openStore(t), openStore(t)
	snap(t, s, ws, "start")
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 60 {
		mutate(t, rng, ws)
		if round%7 == 0 { // several edits in one step
			mutate(t, rng, ws)
		}
		c, err := s.SnapWatched(context.Background(), w, fmt.Sprintf("r%d", round))
		if err != nil {
			t.Fatal(err)
		}
		full := snap(t, verifier, ws, "full")
		if c.Root != full.Root || c.Walk != "dirty" {
			t.Fatalf("round %d: watched %s (%s), full walk %s", round, c.Root, c.Walk, full.Root)
		}
	}
}

// When the kernel queue overflows, Dirty says so and SnapWatched walks fully.
func TestWatcherOverflow(t *testing.T) {
	ws := t.TempDir()
	w, err := NewWatcher(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := openStore(t)
	snap(t, s, ws, "start")
	limit, _ := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	var n int
	fmt.Sscan(string(limit), &n)
	if n == 0 {
		n = 16384
	}
	// Each new file queues at least two events (create, close_write).
	for i := 0; i < n/2+100; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.SnapWatched(context.Background(), w, "after-flood")
	if err != nil || c.Walk != "full" {
		t.Fatalf("%+v %v", c, err)
	}
	full := snap(t, openStore(t), ws, "verify")
	if c.Root != full.Root {
		t.Fatal("root differs from a full walk")
	}
	// The watcher works again afterwards.
	write(t, filepath.Join(ws, "later"), "l", 0o644)
	if d, err := w.Dirty(); err != nil || strings.Join(d, ",") != "later" {
		t.Fatalf("after overflow: %v %v", d, err)
	}
	w.Close()
	if _, err := w.Dirty(); err == nil || errors.Is(err, ErrOverflow) {
		t.Fatalf("closed watcher: %v", err)
	}
}
