package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/engine/journal"
)

// TestRecordingEndedByTheProviderIsNotAnalysed: a recording whose run the provider ended (a
// quota wall at the second model call) is said to be so in tare record's report, is never
// cut by a swap (recorded again once, both attempts kept, then the swap stops and says why,
// with no tail run) and is refused by cliff: the steps where a provider cut a run say nothing
// about the agent. Before, the swap swapped the cut run's workspaces as if the agent had
// left them there, and cliff looked for a cliff in it.
func TestRecordingEndedByTheProviderIsNotAnalysed(t *testing.T) {
	needRooms(t)
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# walled\n"), 0o644)
	script := filepath.Join(dir, "wall.toml")
	os.WriteFile(script, []byte("[[turn]]\ntext = \"Writing it.\"\nshell = \"echo hi > hi.txt\"\n\n[[turn]]\ntext = \"Never answered.\"\nshell = \"ls\"\nerror = \"quota\"\n"), 0o644)
	cfg := testConfig(t, []string{"codex"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ro := RecordOptions{Prompt: "Write hi.txt.", Project: project, Check: "test -f hi.txt", CheckTimeout: time.Minute,
		AgentTimeout: time.Minute, Config: cfg, Script: script, Side: journal.Side{Key: "a", Agent: "codex"}}

	ro.Out = filepath.Join(dir, "record")
	recDir, recording, err := Record(ctx, ro)
	if err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(recDir, "report.txt"))
	if recording.Stopped == nil || recording.Stopped.Kind != "quota" || !strings.Contains(string(report), "stopped   ended by the provider (quota)") {
		t.Errorf("the recording's stop: %+v; want quota, said in the report:\n%s", recording.Stopped, report)
	}
	if _, _, err := Cliff(ctx, CliffOptions{RecordOptions: RecordOptions{Config: cfg}, Run: recDir, Tails: 1, Budget: 2, Jobs: 1}); err == nil || !strings.Contains(err.Error(), "cut by its provider") {
		t.Errorf("cliff on a recording the provider ended: %v; want it refused", err)
	}

	ro.Out = filepath.Join(dir, "swap")
	_, _, err = Swap(ctx, SwapOptions{RecordOptions: ro, A: journal.Side{Agent: "codex"}, B: journal.Side{Agent: "codex"},
		Cuts: []float64{1}, Tails: 1, Jobs: 2, Handoff: "trail"})
	if err == nil || !strings.Contains(err.Error(), "original a (codex) was ended by the provider (quota)") {
		t.Fatalf("swap of originals the provider ended: %v; want it stopped, saying why", err)
	}
	for _, d := range []string{"a", "a.attempt-1"} {
		r, err := journal.ReadRecording(filepath.Join(ro.Out, d))
		if err != nil || r.Stopped == nil {
			t.Errorf("%s: %v, stopped %v; want both recordings kept, each ended by the provider", d, err, r)
		}
	}
	if tails, _ := os.ReadDir(filepath.Join(ro.Out, "tails")); len(tails) > 0 {
		t.Errorf("%d tails ran from originals the provider ended", len(tails))
	}
}
