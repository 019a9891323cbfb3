package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
)

// differScript is the demo's model with the sides made to differ (see its comment): claude
// passes every run, codex fails every one.
const differScript = "testdata/differ.toml"

// TestUntilSeparatedStopsEarlyAndResumeContinues: two real agents in real rooms on tare's
// model server, sides that clearly differ. The run is stopped (as a kill would) after its
// first pair; tare resume continues the same sequence, keeping the pair already run, and
// stops at the pair where the test separates the sides, far below --max-runs; the report
// (text and report.json) says which method, after how many pairs and why.
func TestUntilSeparatedStopsEarlyAndResumeContinues(t *testing.T) {
	const maxRuns, jobs = 20, 2
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(differScript)
	if err != nil {
		t.Fatal(err)
	}
	sides, err := ParseSides([]string{"claude", "codex"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, []string{"claude", "codex"})
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// The first process: stopped once the first pair has finished.
	first, stop := context.WithCancel(ctx)
	bus := journal.NewBus()
	sub := bus.Subscribe(first, 64)
	go func() {
		done := map[string]bool{}
		for e := range sub.C() {
			if e.TailFinished != nil {
				done[e.TailFinished.ID] = true
			}
			if done["a-0"] && done["b-0"] {
				stop()
				return
			}
		}
	}()
	_, _, err = Calibrate(first, CalibrateOptions{Prompt: demo.Task, Sides: sides, Check: demo.Check, CheckTimeout: time.Minute,
		UntilSeparated: true, MaxRuns: maxRuns, Jobs: jobs, Project: paths.Project, Out: dir, Config: cfg, Script: script, Bus: bus})
	stop()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped calibrate returned %v, want context.Canceled", err)
	}
	before := journal.Replay("run", mustJournal(t, dir))
	if sep := separation(mustRecipe(t, dir), before); sep.Stopped != "interrupted" || sep.Pairs < 1 {
		t.Fatalf("after the stop: %s after %d pairs, want interrupted after at least one", sep.Stopped, sep.Pairs)
	}

	report, err := Resume(ctx, ResumeOptions{Dir: dir, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	st := journal.Replay("run", mustJournal(t, dir))
	for _, id := range []string{"a-0", "b-0"} {
		if tl := st.Tails[id]; tl == nil || len(tl.Earlier) > 0 || tl.Status != before.Tails[id].Status {
			t.Errorf("%s: finished before the stop, then run again or changed by the resume: %+v", id, tl)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep RunReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	sep := rep.Separation
	if sep == nil || sep.Stopped != "separated" || sep.Pairs < 2 || sep.Pairs > 10 || sep.Lo <= 0 || sep.Ahead != "a" {
		t.Fatalf("report.json separation %+v, want separated within 10 pairs, claude ahead by 1\n%s", sep, report)
	}
	if sep.Paired[0] != [2]string{"a-0", "b-0"} {
		t.Errorf("first pair %v, want the pair run before the stop, a-0 with b-0", sep.Paired[0])
	}
	// No run starts once the decision is taken: at most the ones in flight then.
	if started := len(st.Tails); started > 2*(sep.Pairs+jobs) || started >= 2*maxRuns {
		t.Errorf("%d runs started for a stop at pair %d with %d jobs", started, sep.Pairs, jobs)
	}
	if len(sep.After)+2*sep.Pairs+len(sep.LeftOut) != len(st.Tails) {
		t.Errorf("pairs %d, after the stop %v, left out %v: not every one of the %d runs is accounted for", sep.Pairs, sep.After, sep.LeftOut, len(st.Tails))
	}
	for _, want := range []string{"test by betting", "stopped          separated after", "confidence sequence",
		"runs to separate", "(estimate: normal approximation", "repeat a", "flip rate 0.00", "pass^2 1.00"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	t.Logf("report:\n%s", report)
}

func mustRecipe(t *testing.T, dir string) *Recipe {
	t.Helper()
	rec, err := ReadRecipe(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
