package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagePageRefusesAHugeFolder: a page folder holding a file larger than the cap (sparse:
// it costs the test nothing) is refused before it fills the disk.
func TestStagePageRefusesAHugeFolder(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "index.html"), []byte("<h1>x</h1>"), 0o644)
	if err := os.Truncate(filepath.Join(src, "index.html"), maxStage+1); err != nil {
		t.Fatal(err)
	}
	_, err := stagePage(src, filepath.Join(t.TempDir(), "page"))
	if err == nil || !strings.Contains(err.Error(), "fix:") {
		t.Fatalf("got %v, want a refusal with the fix", err)
	}
}

// TestCopyRegularFollowsNoLinkOnTheWay: a folder of the page swapped for a link after the
// walk saw it (sub -> a host folder) is refused, not followed: the host file is not copied.
func TestCopyRegularFollowsNoLinkOnTheWay(t *testing.T) {
	host, src := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(host, "secret.html"), []byte("host canary"), 0o644)
	if err := os.Symlink(host, filepath.Join(src, "sub")); err != nil {
		t.Fatal(err)
	}
	root, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dst := filepath.Join(t.TempDir(), "secret.html")
	if err := copyRegular(root, "sub/secret.html", dst); err == nil {
		t.Fatalf("a file reached through a link was copied")
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("the host file was copied to %s", dst)
	}
}
