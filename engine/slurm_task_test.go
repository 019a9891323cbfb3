package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriterLogsComeBackWithoutFollowingLinks: a writer's stdout and stderr come back from its
// job as files of the end capsule; one that came back as a link (to a file of this machine's)
// is left out, never read through, and a regular one is put in place.
func TestWriterLogsComeBackWithoutFollowingLinks(t *testing.T) {
	dir := t.TempDir()
	end := filepath.Join(dir, "end")
	os.MkdirAll(end, 0o755)
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("the operator's\n"), 0o600)
	os.Symlink(secret, filepath.Join(end, taskEvents))
	os.WriteFile(filepath.Join(end, taskStderr), []byte("warning\n"), 0o644)
	events, stderr := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "stderr.log")
	if err := putBackLogs(end, map[string]string{taskEvents: events, taskStderr: stderr}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(events); err == nil {
		t.Errorf("a linked stdout was read through: %q", data)
	}
	if data, err := os.ReadFile(stderr); err != nil || string(data) != "warning\n" {
		t.Errorf("stderr put back: %q %v", data, err)
	}
}
