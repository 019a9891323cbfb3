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
