package capsule

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapAsksTheWatcher: with a snap-watch serving the workspace, the hook's tare snap (a
// real process) gets a capsule built from the watcher's dirty paths, identical to a full
// walk; with none serving, tare snap walks and gives the same capsule.
func TestSnapAsksTheWatcher(t *testing.T) {
	ws, storeDir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "one\n", 0o644)
	write(t, filepath.Join(ws, "src", "b.txt"), "two\n", 0o644)
	s, err := Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snap(context.Background(), ws, "start"); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(t.TempDir(), "snap.sock")
	stop, err := serveSnaps(storeDir, "", ws, socket)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "src", "b.txt"), "two, changed\n", 0o644)
	write(t, filepath.Join(ws, "new", "c.txt"), "three\n", 0o755)
	if stderr, err := runSnapMain(t, strings.NewReader(""), "--store", storeDir, "--work", ws, "--socket", socket, "--id", "t1"); err != nil {
		t.Fatalf("tare snap: %v: %s", err, stderr)
	}
	stop()
	other, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	atT1, err := other.Snap(context.Background(), ws, "at-t1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "a.txt"), "one, changed after the watcher stopped\n", 0o644)
	if stderr, err := runSnapMain(t, strings.NewReader(""), "--store", storeDir, "--work", ws, "--socket", socket, "--id", "t2"); err != nil {
		t.Fatalf("tare snap without a watcher: %v: %s", err, stderr)
	}
	list, err := s.List()
	if err != nil || len(list) != 3 {
		t.Fatalf("%d capsules (%v), want 3", len(list), err)
	}
	if list[1].Root != atT1.Root {
		t.Fatalf("the watcher's capsule differs from a full walk of the same workspace")
	}
	if list[1].ID != "t1" || list[1].Walk != "dirty" || list[2].ID != "t2" || list[2].Walk != "full" {
		t.Fatalf("capsules %s/%s and %s/%s, want t1 by the watcher (dirty) and t2 by a walk (full)", list[1].ID, list[1].Walk, list[2].ID, list[2].Walk)
	}
	full, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := full.Snap(context.Background(), ws, "check")
	if err != nil {
		t.Fatal(err)
	}
	if list[2].Root != want.Root {
		t.Fatalf("the walk's capsule differs from a fresh full walk")
	}
}
