package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUntilSeparatedBadInput: --until-separated beside --runs, --max-runs below 2 or without
// --until-separated, and --until-separated with other than two sides are each refused with
// one line naming the flag and the fix, exit 2, nothing started or left behind.
func TestUntilSeparatedBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"with --runs", []string{"--side", "pi", "--side", "claude", "--until-separated", "--runs", "5"}, "--runs: --until-separated decides"},
		{"max-runs 1", []string{"--side", "pi", "--side", "claude", "--until-separated", "--max-runs", "1"}, "--max-runs 1:"},
		{"max-runs alone", []string{"--side", "pi", "--side", "claude", "--max-runs", "5"}, "--max-runs: bounds --until-separated only"},
		{"one side", []string{"--side", "pi", "--until-separated"}, "--until-separated: compares two sides, 1 given"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, "")
			project := filepath.Join(r.home, "project")
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			r.tare(t, append([]string{"calibrate", "x", "--check", "true", "--project", project}, c.args...)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) || !strings.Contains(lines[0], "fix:") {
				t.Fatalf("exit %d, stderr %q: want exit 2 and one line saying %q and the fix", r.code, r.stderr, c.want)
			}
			if left := r.leftovers(t); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if runs, _ := filepath.Glob(filepath.Join(r.home, ".local", "state", "tare", "*", "*")); len(runs) > 0 {
				t.Errorf("run directories left behind: %v", runs)
			}
		})
	}
}
