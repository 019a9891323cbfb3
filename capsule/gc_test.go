package capsule

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// orphan stores data as an object of kind that no capsule reaches, as a snapshot killed
// after its objects were made durable but before its record leaves it; it returns the
// object's path.
func orphan(t *testing.T, s *Store, kind string, data []byte) string {
	t.Helper()
	b := newBatch(s)
	rel := objectRel(kind, hashBytes(data))
	if err := b.put(rel, data); err != nil {
		t.Fatal(err)
	}
	if err := b.flush(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(s.dir, rel)
}

// leftover is a temporary file a writer killed mid-write leaves in dir below the store.
func leftover(t *testing.T, s *Store, dir string, size int) string {
	t.Helper()
	p := filepath.Join(s.dir, dir, ".0123abcd.tmp-deadbeef0001")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, p, string(make([]byte, size)), 0o600)
	return p
}

// TestGCRemovesWhatNoCapsuleReaches: gc removes the unreferenced objects and dead writers'
// temporary files and says how many bytes that freed; a dry run says the same and removes
// nothing; every capsule is whole and restores afterwards; what was written after the
// cutoff stays.
func TestGCRemovesWhatNoCapsuleReaches(t *testing.T) {
	ctx := context.Background()
	ws := richWorkspace(t)
	s := openStore(t)
	first := snap(t, s, ws, "start")
	write(t, filepath.Join(ws, "src/a/b/c/deep.go"), "package c // changed\n", 0o644)
	last := snap(t, s, ws, "step")
	garbage := []string{
		orphan(t, s, "blobs", []byte("a blob no capsule reaches")),
		orphan(t, s, "trees", encodeTree([]Entry{{Name: "x", Kind: KindSymlink, Mode: 0o777, Target: "y", Size: 1}})),
		leftover(t, s, "blobs/ab", 100),
		leftover(t, s, "capsules", 10),
	}
	var want int64
	for _, p := range garbage {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want += fi.Size()
	}
	before := storeObjects(t, s, "blobs")

	dry, err := s.GC(ctx, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Objects != 2 || dry.Temps != 2 || dry.Bytes != want {
		t.Fatalf("dry run reports %+v, want 2 objects and 2 temporary files, %d bytes", dry, want)
	}
	for _, p := range garbage {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the dry run removed %s: %v", p, err)
		}
	}

	young, err := s.GC(ctx, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if young.Objects+young.Temps != 0 || young.Young != 4 {
		t.Fatalf("gc keeping an hour reports %+v, want the 4 young files kept", young)
	}

	got, err := s.GC(ctx, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Objects != 2 || got.Temps != 2 || got.Bytes != want || got.Live != dry.Live {
		t.Fatalf("gc reports %+v, want what the dry run said (%+v)", got, dry)
	}
	for _, p := range garbage {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is still there after gc: %v", p, err)
		}
	}
	if after := storeObjects(t, s, "blobs"); len(after) != len(before)-1 {
		t.Fatalf("gc left %d blobs of %d, want all but the orphan", len(after), len(before))
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("after gc: %v", err)
	}
	for _, c := range []Capsule{first, last} {
		if err := s.Restore(ctx, c, filepath.Join(t.TempDir(), "out")); err != nil {
			t.Fatalf("restore %s after gc: %v", c.Name(), err)
		}
	}
	// The stat cache names the workspace's blobs: the next snapshot, which trusts it, is whole.
	write(t, filepath.Join(ws, "README.md"), "# changed again\n", 0o644)
	snap(t, s, ws, "after-gc")
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("a snapshot after gc: %v", err)
	}
}

// TestGCConcurrentWithRecordingLosesNothing: gc runs over and over, from a store handle of
// its own as another tare process would, while a recording takes capsules; orphans of the
// very contents the recording writes are there to tempt it. Every capsule stays whole and
// the last one is the workspace.
func TestGCConcurrentWithRecordingLosesNothing(t *testing.T) {
	ctx := context.Background()
	ws := richWorkspace(t)
	s := openStore(t)
	snap(t, s, ws, "start")
	const steps = 40
	content := func(i int) string { return fmt.Sprintf("step %d of the recording\n", i) }
	for i := range steps {
		orphan(t, s, "blobs", []byte(content(i)))
	}
	other, err := Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var gcErr error
	var freed GCReport
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			rep, err := other.GC(ctx, 0, false)
			if err != nil {
				gcErr = err
				return
			}
			freed.Add(rep)
		}
	}()
	w, err := NewWatcher(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range steps {
		write(t, filepath.Join(ws, fmt.Sprintf("out/%d.txt", i%7)), content(i), 0o644)
		if _, err := s.SnapWatched(ctx, w, fmt.Sprintf("toolu_%d", i)); err != nil {
			close(done)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if gcErr != nil {
		t.Fatal(gcErr)
	}
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("after gc beside the recording (gc freed %+v): %v", freed, err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if full := snap(t, openStore(t), ws, "full"); list[len(list)-1].Root != full.Root {
		t.Fatalf("the last capsule has root %s, the workspace %s", list[len(list)-1].Root, full.Root)
	}
}
