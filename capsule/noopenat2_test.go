package capsule

import (
	"context"
	"path/filepath"
	"testing"
)

// TestStoreWithoutOpenat2: in a room openat2 answers ENOSYS (its seccomp filter cannot
// see the mode openat2 takes), so the room's tare snap and snap-watch open every store path
// component by component. A snapshot, its restore and an import work that way too, and a
// symlink planted in the store or the stage is still refused, never followed.
func TestStoreWithoutOpenat2(t *testing.T) {
	noOpenat2 = true
	defer func() { noOpenat2 = false }()
	ws := richWorkspace(t)
	s := openStore(t)
	c := snap(t, s, ws, "toolu_01")
	dest := filepath.Join(t.TempDir(), "restored")
	if err := s.Restore(context.Background(), c, dest); err != nil {
		t.Fatal(err)
	}
	sameTree(t, scan(t, ws), scan(t, dest))
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range stagedSymlinks {
		if problem := importThroughSymlink(t, p); problem != "" {
			t.Errorf("staged %s: %s", p, problem)
		}
	}
	for _, p := range storeSymlinks(t) {
		if problem := snapThroughStoreSymlink(t, p); problem != "" {
			t.Errorf("store %s: %s", p, problem)
		}
	}
}
