package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/capsule"
	"tare/demo"
	"tare/engine/journal"
	"tare/engine/run"
)

// calibrateDemo runs a calibrate on the shipped demo with the given sides.
func calibrateDemo(t *testing.T, sides []string, runs, jobs int, check string, checkTimeout time.Duration) (string, string, error) {
	t.Helper()
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseSides(sides, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, sides)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	return Calibrate(ctx, CalibrateOptions{Prompt: demo.Task, Sides: parsed, Check: check, CheckTimeout: checkTimeout,
		Runs: runs, Jobs: jobs, Project: paths.Project, Out: filepath.Join(t.TempDir(), "run"), Config: cfg, Script: paths.Script, Seed: 7})
}

// TestCalibrateOnTheDemoGivesRatesStrictlyBetweenZeroAndOne: the shipped demo, two real
// agents in real rooms against the scripted model: every tail is scored, both sides land
// strictly between 0 and 1, and the run directory holds what DESIGN.md says.
func TestCalibrateOnTheDemoGivesRatesStrictlyBetweenZeroAndOne(t *testing.T) {
	needRooms(t)
	dir, report, err := calibrateDemo(t, []string{"claude", "codex"}, 4, 1, demo.Check, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	events, err := journal.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := journal.Replay("run", events)
	for _, tally := range st.Tally() {
		if tally.Verdicts != 4 || tally.Passed == 0 || tally.Passed == 4 {
			t.Errorf("side %s: %d/%d passed, want 4 scored and a rate strictly between 0 and 1\n%s", tally.Side.Key, tally.Passed, tally.Verdicts, report)
		}
		if tally.Lo <= 0 && tally.Hi >= 1 {
			t.Errorf("side %s: interval %.2f-%.2f", tally.Side.Key, tally.Lo, tally.Hi)
		}
		// Claude names its model in the stream, Codex only in its rollout: tare prices both.
		if u := tally.Usage; u.Cost <= 0 || len(u.Unpriced) > 0 || u.Model == "" {
			t.Errorf("side %s (%s): tare's cost %.4f for model %q, unpriced %v", tally.Side.Key, tally.Side.Agent, u.Cost, u.Model, u.Unpriced)
		}
	}
	for _, want := range []string{"95% interval", "usage a", "usage b", "the CLI said $", "the CLI reported no cost"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	for _, f := range []string{run.RecipeFile, journal.JournalFile, "usage.json", "report.txt", "tails/a-0/result.json", "tails/b-3/stdout.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	store, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	caps, err := store.List()
	if err != nil || len(caps) != 9 {
		t.Fatalf("store holds %d capsules (%v), want the start and one end per tail", len(caps), err)
	}
}

// TestCalibrateChecksThatFailToRun: a check that never exits is stopped at its timeout and
// the tail fails, a check command that does not exist fails the tail with the shell's word;
// the run goes on to its report either way.
func TestCalibrateChecksThatFailToRun(t *testing.T) {
	needRooms(t)
	cases := []struct{ check, want string }{
		{"sleep 600", "check timed out after 2s"},
		{"no-such-check-command-tare", "check exit 127"},
	}
	for _, c := range cases {
		t.Run(c.check, func(t *testing.T) {
			began := time.Now()
			dir, report, err := calibrateDemo(t, []string{"pi"}, 2, 2, c.check, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			st := journal.Replay("run", mustJournal(t, dir))
			for _, id := range []string{"a-0", "a-1"} {
				tl := st.Tails[id]
				if tl == nil || tl.Status != "failed" || !strings.Contains(tl.Detail, c.want) {
					t.Fatalf("tail %s: %+v, want failed with %q", id, tl, c.want)
				}
			}
			if !st.Finished || !strings.Contains(report, " 0/2 ") {
				t.Fatalf("the run did not finish with its report:\n%s", report)
			}
			if time.Since(began) > 3*time.Minute {
				t.Errorf("took %s: the timeout did not stop the check", time.Since(began))
			}
		})
	}
}

func TestResumeRefusesWhatIsNotARun(t *testing.T) {
	dir := t.TempDir()
	_, err := Resume(context.Background(), ResumeOptions{Dir: dir, Config: testConfig(t, nil)})
	if err == nil || !strings.Contains(err.Error(), "not a tare run") || !strings.Contains(err.Error(), "fix:") {
		t.Fatalf("got %v", err)
	}
	os.WriteFile(filepath.Join(dir, run.RecipeFile), []byte(`{"format":"something else"}`), 0o644)
	if _, err := Resume(context.Background(), ResumeOptions{Dir: dir, Config: testConfig(t, nil)}); err == nil || !strings.Contains(err.Error(), "not a tare run") {
		t.Fatalf("got %v", err)
	}
}

func mustJournal(t *testing.T, dir string) []journal.Event {
	t.Helper()
	events, err := journal.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return events
}
