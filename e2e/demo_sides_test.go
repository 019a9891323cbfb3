package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoComparesAnyTwoAgents: `tare demo --sides gemini,claude` calibrates Gemini CLI
// against Claude Code on the demo, each side's runs scored; a --sides that is not two known
// agents is one line naming the flag, exit 2, and no state left.
func TestDemoComparesAnyTwoAgents(t *testing.T) {
	r := newRun(t, "")
	r.tare(t, "demo", "--sides", "gemini,claude", "--runs", "1", "--jobs", "2")
	if r.code != 0 {
		t.Fatalf("tare demo --sides gemini,claude exited %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Each side's row: its key, its agent and one scored run of one.
	rows := map[string]bool{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.HasSuffix(f[2], "/1") {
			rows[f[0]+" "+f[1]] = true
		}
	}
	if !rows["a gemini"] || !rows["b claude"] || !strings.Contains(r.stdout, "the CLI reported no cost") {
		t.Errorf("the report does not show gemini (a, priced by tare) against claude (b):\n%s", r.stdout)
	}
	for _, bad := range []string{"gemini", "gemini,claude,pi", "gemini,aider"} {
		q := newRun(t, "")
		q.tare(t, "demo", "--sides", bad)
		if q.code != 2 || strings.Count(strings.TrimSpace(q.stderr), "\n") != 0 || !strings.Contains(q.stderr, "--sides") {
			t.Errorf("--sides %q: exit %d, stderr %q; want exit 2 and one line naming --sides", bad, q.code, q.stderr)
		}
		if entries, _ := os.ReadDir(filepath.Join(q.home, ".local", "state")); len(entries) > 0 {
			t.Errorf("--sides %q left state behind: %v", bad, entries)
		}
	}
}
