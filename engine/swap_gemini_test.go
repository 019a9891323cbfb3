package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
)

// TestSwapGeminiWithClaude: the real Gemini CLI as a swap's side a and Claude Code as side
// b, on the demo's swap task at its last cut, one tail a cell: Gemini resumes its own
// session natively, takes Claude Code's workspace and trail by handoff, and hands its own
// to Claude Code. Every cell has its verdict, and the verdict is the workspace's (a's
// original adds the file that breaks greet.sh, b's does not), whoever continues it.
func TestSwapGeminiWithClaude(t *testing.T) {
	needRooms(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir, res, err := Swap(ctx, SwapOptions{RecordOptions: RecordOptions{Prompt: demo.Task, Project: paths.Project, Check: demo.Check,
		CheckTimeout: time.Minute, AgentTimeout: 2 * time.Minute, Out: filepath.Join(t.TempDir(), "swap"),
		Config: testConfig(t, []string{"gemini", "claude"}), Script: paths.SwapScript, Seed: demo.SwapSeed},
		A: journal.Side{Agent: "gemini"}, B: journal.Side{Agent: "claude"}, Cuts: []float64{1}, Tails: 1, Jobs: 3, Handoff: "trail"})
	if err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if len(res.Cuts) != 1 || len(res.Cuts[0].Cells) != 6 {
		t.Fatalf("want one cut of 6 cells (a and b native, 4 handoffs)\n%s", report)
	}
	failed := false
	for _, cell := range res.Cuts[0].Cells {
		want := map[string]int{"a": 0, "b": 1}[cell.Workspace]
		if cell.Verdicts != 1 || cell.Passed != want {
			failed = true
			t.Errorf("workspace %s continued by %s (%s): %d of %d passed, want %d of 1",
				cell.Workspace, cell.Agent, cell.How, cell.Passed, cell.Verdicts, want)
		}
	}
	if failed {
		// What each original did: a recording shorter than the script's four steps is where
		// the wrong workspace came from.
		for _, side := range []string{"a", "b"} {
			rec, err := journal.ReadRecording(filepath.Join(dir, side))
			if err != nil {
				t.Logf("original %s: %v", side, err)
				continue
			}
			stderr, _ := os.ReadFile(filepath.Join(dir, side, "original", "stderr.log"))
			t.Logf("original %s (%s): %s, %d steps, stopped %+v; stderr's end: %s", side, rec.Agent, rec.Exit, len(rec.Steps), rec.Stopped, tailOf(string(stderr), 1500))
		}
		t.Logf("the report:\n%s", report)
	}
}

// tailOf is the end of s, at most n bytes.
func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
