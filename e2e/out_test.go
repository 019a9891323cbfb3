package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativeOutIsTheOperatorsFolder: a calibrate given a relative --out runs its tails
// (they were all "not started": the rooms got a relative workspace) and writes its run
// below the folder the operator typed it in.
func TestRelativeOutIsTheOperatorsFolder(t *testing.T) {
	r := newRun(t, "")
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	os.MkdirAll(project, 0o755)
	script := filepath.Join(dir, "build.toml")
	os.WriteFile(script, []byte("[[turn]]\ntext = \"Writing.\"\nwrite = { path = \"done.txt\", content = \"ok\" }\n\n[[turn]]\ntext = \"Done.\"\n"), 0o644)
	cmd := exec.Command(tareBin, "calibrate", "write done.txt", "--side", "codex", "--script", script, "--runs", "1",
		"--project", project, "--out", "run2", "--check", "test -f done.txt")
	cmd.Dir, cmd.Env = dir, r.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("calibrate --out run2: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "not started") || !strings.Contains(string(out), "1/1") {
		t.Errorf("the tail did not run and pass:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "run2", "journal.jsonl")); err != nil {
		t.Errorf("the run is not below the operator's folder: %v", err)
	}
}
