package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/engine/journal"
	"tare/engine/run"
	"tare/modelserver"
)

// killScript: every tail writes hi.txt (the check's pass), then its second answer either
// comes at once or, in the branch, waits ten minutes: a tail an operator watching it would
// stop.
const killScript = `[[turn]]
text = "Writing."
shell = "echo hi > hi.txt"

[[turn]]
text = "Done."
[[turn.branch]]
p = 0.5
delay = "10m"
`

// TestCalibrateKillPolicy runs claude in real rooms on tare's model server. Of three tails,
// two hang and are killed from the live view's path (RequestKill with the operator's answer):
// a-0 counted as failed, a-1 left out as an infrastructure fault; a-2 passes. The journal
// keeps each answer on the tail's end, the report and report.json count a-0 as a failure and
// give the bounds that a-1's leaving out allows, with the policy in words. Then tare resume
// --retry runs both again and both retries pass: a-1's retry counts (a new attempt beside the
// killed one, which stays on the record), a-0's does not replace its counted failure.
// Before, the report said 1/1 1.00 with 2 no verdict, and 3/3 after the retries.
func TestCalibrateKillPolicy(t *testing.T) {
	needRooms(t)
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# kill\n"), 0o644)
	scriptPath := filepath.Join(dir, "kill.toml")
	os.WriteFile(scriptPath, []byte(killScript), 0o644)
	script, err := modelserver.ParseScript([]byte(killScript), scriptPath)
	if err != nil {
		t.Fatal(err)
	}
	// The seed whose draws hang a-0 and a-1's first attempts, not a-2's, nor the retries'.
	hangs := func(seed int64, stream string) bool { return script.StreamBranch(seed, stream, 2) == 1 }
	var seed int64
	for s := int64(1); s < 10000 && seed == 0; s++ {
		if hangs(s, "a-0@0") && hangs(s, "a-1@0") && !hangs(s, "a-2@0") && !hangs(s, "a-0@1") && !hangs(s, "a-1@1") {
			seed = s
		}
	}
	if seed == 0 {
		t.Fatal("no seed below 10000 draws the tails this test needs")
	}
	sides, _ := ParseSides([]string{"claude"}, nil)
	cfg := testConfig(t, []string{"claude"})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out := filepath.Join(dir, "run")
	type result struct {
		report string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		_, report, err := Calibrate(ctx, CalibrateOptions{Prompt: "Write hi.txt.", Sides: sides, Check: "test -f hi.txt",
			CheckTimeout: time.Minute, Runs: 3, Jobs: 3, Project: project, Out: out, Config: cfg, Script: scriptPath, Seed: seed})
		done <- result{report, err}
	}()
	// Kill each hanging tail once its first tool call is on the journal: it waits for its
	// second answer, ten minutes off, so it is running when the kill lands.
	for id, as := range map[string]journal.KillAs{"a-0": journal.KillFailed, "a-1": journal.KillLeftOut} {
		for {
			if events, err := journal.ReadJournal(out); err == nil {
				if tl := journal.Replay("run", events).Tails[id]; tl != nil && tl.Status == journal.StatusRunning && tl.Calls > 0 {
					break
				}
			}
			select {
			case r := <-done:
				t.Fatalf("the run ended before %s was killed: %v\n%s", id, r.err, r.report)
			case <-ctx.Done():
				t.Fatalf("%s never made its first tool call", id)
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err := run.RequestKill(out, id, as); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	st := journal.Replay("run", mustJournal(t, out))
	for id, want := range map[string]journal.KillAs{"a-0": journal.KillFailed, "a-1": journal.KillLeftOut} {
		if tl := st.Tails[id]; tl == nil || tl.Reason != journal.ReasonKilled || tl.Kill != want {
			t.Fatalf("tail %s: %+v; want killed, journaled as %q", id, tl, want)
		}
	}
	for _, want := range []string{
		" 1/2   0.50 ",
		"rate 1/3-2/3 if the 1 left out had failed/passed (95% ",
		"a     1/2 passed · 1 failed with no verdict (1 killed, counted as failed) · 1 no verdict, left out (1 killed, left out: infrastructure) · 1/3-2/3 if the 1 left out had failed/passed",
		"is not assumed to be missing at random",
	} {
		if !strings.Contains(r.report, want) {
			t.Errorf("report lacks %q:\n%s", want, r.report)
		}
	}
	var rj RunReport
	if data, err := os.ReadFile(filepath.Join(out, ReportFile)); err != nil || json.Unmarshal(data, &rj) != nil || len(rj.Sides) != 1 {
		t.Fatalf("report.json: %v", err)
	}
	if s := rj.Sides[0]; s.Passed != 1 || s.Failed != 1 || s.FailedNoVerdict["killed, counted as failed"] != 1 || s.NoVerdict != 1 || s.Bounds == nil ||
		s.Bounds.LeftOut != 1 || s.Bounds.Of != 3 || fmt.Sprintf("%.3f %.3f", s.Bounds.Worst, s.Bounds.Best) != "0.333 0.667" {
		t.Errorf("report.json side %+v, bounds %+v; want 1 passed, 1 failed (killed), 1 left out, bounds 1/3-2/3", s, s.Bounds)
	}

	report, err := Resume(ctx, ResumeOptions{Dir: out, Config: cfg, Retry: []string{"a-0", "a-1"}})
	if err != nil {
		t.Fatal(err)
	}
	st = journal.Replay("run", mustJournal(t, out))
	for _, id := range []string{"a-0", "a-1"} {
		if tl := st.Tails[id]; tl == nil || tl.Status != journal.StatusPassed || len(tl.Earlier) != 1 || tl.Earlier[0].Reason != journal.ReasonKilled {
			t.Fatalf("tail %s after the retry: %+v; want its retry passed beside the killed attempt", id, tl)
		}
	}
	if s := st.Tally()[0]; s.Passed != 2 || s.Failed != 1 || s.NoVerdict != 0 {
		t.Errorf("tally after the retries %+v; want 2 passed (a-1's retry, a-2) and a-0's killed attempt still failed", s)
	}
	if want := "a     2/3 passed · 1 failed with no verdict (1 killed, counted as failed) · 2 retried (1 killed, counted as failed, 1 killed, left out: infrastructure)"; !strings.Contains(report, want) {
		t.Errorf("report after the retries lacks %q:\n%s", want, report)
	}
}
