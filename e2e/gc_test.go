package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"tare/capsule"
)

// gcRunDir makes a run directory below state with a store of one capsule and, planted in
// it, an object no capsule reaches (size bytes): what a snapshot killed before its record
// leaves. It returns the run directory and the orphan's path.
func gcRunDir(t *testing.T, state, name string, size int) (string, string) {
	t.Helper()
	dir := filepath.Join(state, "record", name)
	ws := filepath.Join(dir, "original", "work")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snap(context.Background(), ws, "start"); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "store", "blobs", "ee", strings.Repeat("e", 62))
	if err := os.MkdirAll(filepath.Dir(orphan), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, make([]byte, size), 0o444); err != nil {
		t.Fatal(err)
	}
	return dir, orphan
}

// TestGCFreesUnreferencedObjectsAndLeavesRunningRuns: tare gc --dry-run reports what it
// would free and removes nothing; tare gc --keep-days 0 removes the orphan of an idle run,
// reports the bytes, and leaves a run another tare holds (its rooms may count on objects
// no capsule reaches yet); the capsules stay whole.
func TestGCFreesUnreferencedObjectsAndLeavesRunningRuns(t *testing.T) {
	r := newRun(t, "")
	state := filepath.Join(r.home, ".local", "state", "tare")
	idle, idleOrphan := gcRunDir(t, state, "idle", 4321)
	busy, busyOrphan := gcRunDir(t, state, "busy", 1234)
	lock, err := os.OpenFile(filepath.Join(busy, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	r.tare(t, "gc", "--dry-run", "--keep-days", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "would free (dry run, nothing removed) 1 object and 0 leftover files, 4.3 kB in 1 run store") ||
		!strings.Contains(r.stdout, busy+" is being run by another tare: left alone") {
		t.Fatalf("tare gc --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{idleOrphan, busyOrphan} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the dry run removed %s: %v", p, err)
		}
	}

	r.tare(t, "gc", "--keep-days", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "freed 1 object and 0 leftover files, 4.3 kB in 1 run store") ||
		!strings.Contains(r.stderr, idle+": freed 1 object") {
		t.Fatalf("tare gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(idleOrphan); !os.IsNotExist(err) {
		t.Fatalf("the idle run's orphan is still there: %v", err)
	}
	if _, err := os.Stat(busyOrphan); err != nil {
		t.Fatalf("gc touched the store of a run another tare holds: %v", err)
	}
	s, err := capsule.Open(filepath.Join(idle, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatalf("after gc: %v", err)
	}
}
