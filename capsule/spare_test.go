package capsule

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// stagedWatch is a staging store over a store holding the capsule "start" of a small
// workspace, with a watcher on the workspace and spares kept, as snap-watch serves it.
func stagedWatch(t *testing.T) (st *Store, w *Watcher, ws string) {
	t.Helper()
	ws = t.TempDir()
	write(t, filepath.Join(ws, "a/b/c.txt"), "one", 0o644)
	write(t, filepath.Join(ws, "top.txt"), "top", 0o644)
	dir := t.TempDir()
	base := filepath.Join(dir, "store")
	s, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	snap(t, s, ws, "start")
	if st, err = OpenStage(filepath.Join(dir, "stage"), base); err != nil {
		t.Fatal(err)
	}
	if w, err = NewWatcher(ws); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := st.keepSpares(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.spares.close)
	return st, w, ws
}

// inodes maps the inode of every file below dir (not named with a leading dot) to its path.
func inodes(t *testing.T, dir string) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && !strings.HasPrefix(fi.Name(), ".") {
			out[fi.Sys().(*syscall.Stat_t).Ino] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// objectsMatchNames checks that every object of the (staging) store hashes to its name.
func objectsMatchNames(t *testing.T, s *Store) {
	t.Helper()
	for _, kind := range []string{"blobs", "trees"} {
		for _, p := range inodes(t, filepath.Join(s.Dir(), kind)) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := hashBytes(data), filepath.Base(filepath.Dir(p))+filepath.Base(p); got != want {
				t.Errorf("%s holds %d bytes hashing to %s", p, len(data), got)
			}
		}
	}
}

// TestServedCapsuleWritesIntoSpares: the objects and record of a capsule the watcher
// serves are files made before the step (its spares), so the agent does not wait for the
// file system to allocate them; and the capsule is still the one a full walk takes.
func TestServedCapsuleWritesIntoSpares(t *testing.T) {
	st, w, ws := stagedWatch(t)
	spareInodes := inodes(t, filepath.Join(st.Dir(), spareDir))
	if len(spareInodes) != spareCount {
		t.Fatalf("%d spares made, want %d", len(spareInodes), spareCount)
	}
	write(t, filepath.Join(ws, "a/b/c.txt"), "two", 0o644)
	c, err := st.SnapWatched(context.Background(), w, "toolu_1")
	if err != nil {
		t.Fatal(err)
	}
	if full := snap(t, openStore(t), ws, "full"); c.Walk != "dirty" || c.Root != full.Root {
		t.Fatalf("served capsule: walk %s root %s, a full walk %s", c.Walk, c.Root, full.Root)
	}
	var written int
	for _, kind := range []string{"blobs", "trees", "capsules"} {
		for ino, p := range inodes(t, filepath.Join(st.Dir(), kind)) {
			written++
			if _, ok := spareInodes[ino]; !ok {
				t.Errorf("%s was created during the step, not written into a spare", p)
			}
		}
	}
	// The blob, the trees of a/b, a and the top, and the record.
	if written != 5 {
		t.Errorf("the step wrote %d files, want 5", written)
	}
	objectsMatchNames(t, st)
	st.spares.refill()
	if n := len(inodes(t, filepath.Join(st.Dir(), spareDir))); n != spareCount {
		t.Errorf("%d spares after the refill, want %d", n, spareCount)
	}
}

// TestTamperedSparesAreNotUsed: the room can write the staging store's spares; one written
// into or hard-linked elsewhere is thrown away, so a capsule never holds its bytes.
func TestTamperedSparesAreNotUsed(t *testing.T) {
	st, w, ws := stagedWatch(t)
	names, err := readNames(filepath.Join(st.Dir(), spareDir))
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	for i, n := range names {
		p := filepath.Join(st.Dir(), spareDir, n)
		if i%2 == 0 {
			write(t, p, strings.Repeat("planted by the room\n", 100), 0o600)
		} else if err := os.Link(p, victim+n); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(ws, "a/b/c.txt"), "two", 0o644)
	c, err := st.SnapWatched(context.Background(), w, "toolu_1")
	if err != nil {
		t.Fatal(err)
	}
	if full := snap(t, openStore(t), ws, "full"); c.Root != full.Root {
		t.Fatalf("capsule root %s, a full walk %s", c.Root, full.Root)
	}
	objectsMatchNames(t, st)
	for _, n := range names[1:2] {
		if data, err := os.ReadFile(victim + n); err != nil || len(data) != 0 {
			t.Fatalf("a hard-linked spare was written: %q %v", data, err)
		}
	}
}

// TestStatCacheRewrittenInPlace: a step rewrites a folder's stat cache in its file (no new
// file, so no inode to allocate), but never one with another link, which would write
// through to a file elsewhere.
func TestStatCacheRewrittenInPlace(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "f.txt"), "one", 0o644)
	s := openStore(t)
	snap(t, s, ws, "start")
	cache := s.cachePath(".")
	before, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "f.txt"), "two!", 0o644)
	waitTick(t)
	snap(t, s, ws, "two")
	after, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the stat cache was replaced by a new file, not rewritten in place")
	}
	if s.loadCache(".").entries["f.txt"].hash == "" {
		t.Error("the rewritten cache does not hold f.txt")
	}

	victim := filepath.Join(t.TempDir(), "victim")
	write(t, victim, "the operator's file", 0o644)
	if err := os.Remove(cache); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, cache); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "f.txt"), "three", 0o644)
	waitTick(t)
	snap(t, s, ws, "three")
	if data, err := os.ReadFile(victim); err != nil || string(data) != "the operator's file" {
		t.Fatalf("the cache was written through a hard link: %q %v", data, err)
	}
}
