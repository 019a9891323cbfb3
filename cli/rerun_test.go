package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/engine/run"
)

// tare rerun repeats a run in this process without moving it to another working folder: a
// recipe whose command line gave a relative --project reruns from anywhere, and the
// process's working folder is where it was.
func TestRerunKeepsTheWorkingFolder(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	made := t.TempDir() // where the run was made
	project := filepath.Join(made, "proj")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The recorded command line fails as soon as the repeat reads it (no agent "nosuch"), so
	// the repeat starts no room; what it reached is in its error.
	rec := run.Recipe{Format: "tare-recipe 1", Kind: "calibrate", Project: project,
		Argv: []string{"calibrate", "x", "--side", "nosuch", "--project", "proj"}}
	data, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, run.RecipeFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Getwd()
	cmd := root()
	cmd.SetArgs([]string{"rerun", dir, "--yes"})
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), `unknown agent "nosuch"`) {
		t.Fatalf("rerun: %v, want the recorded command line's own error", err)
	}
	if after, _ := os.Getwd(); after != before {
		t.Errorf("the working folder moved from %s to %s", before, after)
		os.Chdir(before)
	}
}
