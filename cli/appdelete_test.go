package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/config"
	"tare/engine/journal"
)

// The app's delete removes a run of the state directory, whole, and refuses any other folder.
func TestAppDeleteRemovesOnlyRuns(t *testing.T) {
	state := t.TempDir()
	e := &appEngine{cfg: &config.Config{StateDir: state}}
	dir := filepath.Join(state, "calibrate", "calibrate-x")
	os.MkdirAll(filepath.Join(dir, "tails", "a-0"), 0o755)
	j, err := journal.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	j.Append(&journal.Event{RunFinished: &journal.RunFinished{Report: "r"}})
	j.Close()
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, journal.JournalFile), []byte("{}\n"), 0o644)
	if err := e.Delete(context.Background(), other); err == nil || !strings.Contains(err.Error(), "not a run of the state directory") {
		t.Errorf("a folder outside the state directory: %v", err)
	}
	if err := e.Delete(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(state); len(left) != 1 || left[0].Name() != "calibrate" {
		t.Errorf("left in the state directory: %v", left)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the run is still there: %v", err)
	}
}
