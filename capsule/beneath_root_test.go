package capsule

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadFileBeneathRefusesASymlinkedRoot: a room can replace a folder it writes (a writer's
// drafts/) with a symlink to a host folder; reading "beneath" that root must not move the
// whole read to where the link points.
func TestReadFileBeneathRefusesASymlinkedRoot(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	if err := os.Mkdir(host, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "README.md"), []byte("HOST SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	drafts := filepath.Join(dir, "drafts")
	if err := os.Symlink(host, drafts); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFileBeneath(drafts, "README.md", 1<<20); err == nil {
		t.Fatalf("read %q through a symlinked root", b)
	}
	// A real folder still reads.
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "a.md"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFileBeneath(real, "a.md", 1<<20); err != nil || string(b) != "ok" {
		t.Fatalf("a plain folder: %q, %v", b, err)
	}
}
