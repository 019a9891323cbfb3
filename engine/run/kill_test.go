package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/engine/journal"
)

// TestKillRequestCarriesTheAnswer: the kill request file carries the operator's answer to the
// process that runs the tail; an answer tare does not know is refused before anything is
// written, and a request without one (an older tare's) reads as not asked.
func TestKillRequestCarriesTheAnswer(t *testing.T) {
	dir := t.TempDir()
	if err := RequestKill(dir, "a-0", "maybe"); err == nil || !strings.Contains(err.Error(), `fix: "failed"`) {
		t.Fatalf("RequestKill with answer maybe: %v, want a refusal naming the answers", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "control")); !os.IsNotExist(err) {
		t.Errorf("a refused kill left %s/control behind", dir)
	}
	path := killFile(dir, "a-0")
	os.MkdirAll(filepath.Dir(path), 0o755)
	for text, want := range map[string]journal.KillAs{
		"2026-01-01T00:00:00Z\n" + killAsPrefix + "failed\n":   journal.KillFailed,
		"2026-01-01T00:00:00Z\n" + killAsPrefix + "left-out\n": journal.KillLeftOut,
		"2026-01-01T00:00:00Z\n":                               journal.KillNotAsked,
		"2026-01-01T00:00:00Z\n" + killAsPrefix + "perhaps\n":  journal.KillNotAsked,
	} {
		os.WriteFile(path, []byte(text), 0o644)
		if got := readKillAs(path); got != want {
			t.Errorf("kill request %q reads as %q, want %q", text, got, want)
		}
	}
}
