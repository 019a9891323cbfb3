package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
	"tare/engine/run"
)

// walledScript is the demo's model with the sides made to differ (see its comment): claude
// passes every run, codex fails every one but a seeded quarter, which a quota wall ends
// with no verdict.
const walledScript = "testdata/differ-walled.toml"

// walledSeed draws, for walledScript, a quota wall for runs within the first pairs.
const walledSeed = 3

// TestUntilSeparatedStopsEarlyAndResumeContinues: two real agents in real rooms on tare's
// model server, sides that clearly differ, some runs ended by a quota wall. The run is
// stopped (as a kill would) after its first pair; tare resume continues the same sequence,
// keeping the pair already run, and stops far below --max-runs at the pair where the test
// separates the sides with every run left out counted the worst way for the side ahead
// (later than pairing the verdicts alone would). The report says so in its stop line, gives
// the interval first and no difference at the stop, and its run count only for the
// difference named with --detect.
func TestUntilSeparatedStopsEarlyAndResumeContinues(t *testing.T) {
	needRooms(t)
	const maxRuns, jobs, detect = 30, 2, 0.3
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(walledScript)
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
		UntilSeparated: true, MaxRuns: maxRuns, Detect: detect, Jobs: jobs, Project: paths.Project, Out: dir, Config: cfg,
		Script: script, Seed: walledSeed, Bus: bus})
	stop()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped calibrate returned %v, want context.Canceled", err)
	}
	before := journal.Replay("run", mustJournal(t, dir))
	rec := mustRecipe(t, dir)
	set, err := separateOf(rec)
	if err != nil || set == nil {
		t.Fatalf("the recipe's until_separated settings: %v, %v", set, err)
	}
	if sep := separation(rec, *set, before); sep.Stopped != "interrupted" || sep.Pairs < 1 {
		t.Fatalf("after the stop: %s after %d pairs, want interrupted after at least one", sep.Stopped, sep.Pairs)
	}

	report, err := Resume(ctx, ResumeOptions{Dir: dir, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", report)
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
	if sep == nil || sep.Stopped != "separated" || sep.Ahead != "a" || sep.Pairs < 2 || sep.Pairs > 20 || sep.Hi < 0.99 {
		t.Fatalf("report.json separation %+v, want separated within 20 pairs, claude ahead, the interval reaching +1\n%s", sep, report)
	}
	if sep.Paired[0] != [2]string{"a-0", "b-0"} {
		t.Errorf("first pair %v, want the pair run before the stop, a-0 with b-0", sep.Paired[0])
	}

	// The decision by hand, from the journal: run k of a with run k of b; a run with no
	// verdict counted the worst way for a (a's as a fail, b's as a pass) must separate, and
	// pairing the verdicts alone would have separated sooner.
	sb := separateBoundary(maxRuns)
	outcome := func(id string, worst int) int {
		tl := st.Tails[id]
		if tl == nil {
			t.Fatalf("%s: not run", id)
		}
		switch a, ok := tl.Counted(); {
		case ok && a.Status == journal.StatusPassed:
			return 1
		case ok:
			return 0
		}
		return worst
	}
	walk := func(pairs [][2]int) int {
		s, k := 0, 0
		for i, p := range pairs {
			if p[0] != p[1] {
				k++
				s += p[0] - p[1]
			}
			if sb.Crosses(s, k) > 0 {
				return i + 1
			}
		}
		return 0
	}
	var worst [][2]int
	var va, vb []int
	leftOut := 0
	for k := range maxRuns {
		ida, idb := fmt.Sprintf("a-%d", k), fmt.Sprintf("b-%d", k)
		if st.Tails[ida] == nil || st.Tails[idb] == nil {
			break
		}
		x, y := outcome(ida, -1), outcome(idb, -1)
		if x < 0 || y < 0 {
			if k < sep.Pairs {
				leftOut++
			}
		}
		if x >= 0 {
			va = append(va, x)
		}
		if y >= 0 {
			vb = append(vb, y)
		}
		worst = append(worst, [2]int{max(x, 0), max(y, 0) + b2i(y < 0)})
	}
	var verdicts [][2]int
	for k := range min(len(va), len(vb)) {
		verdicts = append(verdicts, [2]int{va[k], vb[k]})
	}
	if want := walk(worst); sep.Pairs != want {
		t.Errorf("separated after %d pairs; counting the runs left out the worst way for a, the sign test separates after %d", sep.Pairs, want)
	}
	if leftOut == 0 || sep.LeftOutInDecision != leftOut {
		t.Fatalf("%d runs without a verdict among the decision's pairs (report: %d): the seeded quota walls should put some there; fix walledSeed", leftOut, sep.LeftOutInDecision)
	}
	if alone := walk(verdicts); alone == 0 || alone >= sep.Pairs {
		t.Errorf("pairing the verdicts alone separates after %d pairs, the rule after %d: want the rule later", alone, sep.Pairs)
	}
	// No run starts once the decision is taken: at most the ones in flight then.
	if started := len(st.Tails); started > 2*(sep.Pairs+jobs) || started >= 2*maxRuns {
		t.Errorf("%d runs started for a stop at pair %d with %d jobs", started, sep.Pairs, jobs)
	}
	if len(sep.After)+2*sep.Pairs+len(sep.LeftOut)-sep.LeftOutInDecision != len(st.Tails) {
		t.Errorf("pairs %d, after the stop %v, left out %v: not every one of the %d runs is accounted for", sep.Pairs, sep.After, sep.LeftOut, len(st.Tails))
	}
	for _, want := range []string{
		"exact sequential sign test",
		fmt.Sprintf("stopped          separated after %d pairs: a ahead, with the %d %s left out counted the worst and the best way alike", sep.Pairs, leftOut, runsWord(leftOut)),
		fmt.Sprintf("difference a-b  %+.2f to %+.2f: 95%% confidence sequence over the %d pairs", sep.Lo, sep.Hi, sep.Pairs),
		"no point estimate",
		"pass rate a      ", "confidence sequence over its runs (anytime-valid",
		"left out         ", "counts each as a fail and as a pass of its side",
		"to detect 0.30   80% power needs --max-runs 60",
		"repeat a", "flip rate 0.00", "pass^2 1.00",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "runs to separate") {
		t.Errorf("report gives a run count from the observed difference:\n%s", report)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mustRecipe(t *testing.T, dir string) *run.Recipe {
	t.Helper()
	rec, err := run.ReadRecipe(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
