package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
)

// cliffOn runs tare cliff on the demo's cliff task (or script, when given) with agent and
// seed, as the command does.
func cliffOn(t *testing.T, agentName string, seed int64, script string, run string) (string, *CliffResult, error) {
	t.Helper()
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	if script == "" {
		script = paths.CliffScript
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	return Cliff(ctx, CliffOptions{RecordOptions: RecordOptions{Prompt: demo.Task, Side: journal.Side{Key: "a", Agent: agentName},
		Project: paths.Project, Check: demo.Check, CheckTimeout: time.Minute, AgentTimeout: 2 * time.Minute,
		Out: filepath.Join(t.TempDir(), "run"), Config: testConfig(t, []string{agentName}), Script: script, Seed: seed},
		Run: run, Tails: 3, Budget: 30, Jobs: 3, GapBelow: 0.2})
}

// cliffSeeds are seeds whose recording of the demo's cliff task takes the branch that
// deletes greet.sh at step 4, so each is a failed run with a known cliff.
var cliffSeeds = []int64{39, 43, 56, 78, 80, 84, 85, 101, 103, 107}

// TestCliffPinsAScriptedCliff: the real Codex CLI on tare's model server, ten seeded
// repetitions of a task whose runs are lost at step 4 (tails from before it pass about 85%
// of the time, after it never): within the default budget of 30 tails, cliff names step 4
// give or take one in at least 9 of the 10, each report saying so on its first line.
func TestCliffPinsAScriptedCliff(t *testing.T) {
	needRooms(t)
	type outcome struct {
		seed int64
		res  *CliffResult
		err  error
	}
	results := make([]outcome, len(cliffSeeds))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, seed := range cliffSeeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			dir, res, err := cliffOn(t, "codex", seed, "", "")
			if err == nil && res.Result == "pinned" {
				report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
				if first, _, _ := strings.Cut(string(report), "\n"); !strings.HasPrefix(first, "cliff at step ") {
					err = &reportError{first}
				}
			}
			results[i] = outcome{seed, res, err}
		}()
	}
	wg.Wait()
	near := 0
	for _, o := range results {
		if o.err != nil {
			t.Errorf("seed %d: %v", o.seed, o.err)
			continue
		}
		ok := o.res.Result == "pinned" && o.res.Step >= demo.CliffStep-1 && o.res.Step <= demo.CliffStep+1
		if ok {
			near++
		}
		if o.res.Spent > 30 {
			t.Errorf("seed %d: spent %d tails of a budget of 30", o.seed, o.res.Spent)
		}
		t.Logf("seed %d: %s at step %d after %d tails (%s)", o.seed, o.res.Result, o.res.Step, o.res.Spent, o.res.Why)
	}
	if near < 9 {
		t.Errorf("cliff pinned step %d±1 in %d of %d repetitions, want at least 9", demo.CliffStep, near, len(cliffSeeds))
	}
}

type reportError struct{ first string }

func (e *reportError) Error() string { return "report's first line is " + e.first }

// TestCliffOnAnEarlierRecording: tare record once, tare cliff --run DIR later finds the same
// cliff; a second --run with a bigger budget counts the tails already spent instead of
// starting over; a recording that passed stops at once, and --run on it is refused with
// nothing written.
func TestCliffOnAnEarlierRecording(t *testing.T) {
	needRooms(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, []string{"codex"})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	record := func(seed int64) string {
		dir, _, err := Record(ctx, RecordOptions{Prompt: demo.Task, Side: journal.Side{Key: "a", Agent: "codex"}, Project: paths.Project,
			Check: demo.Check, CheckTimeout: time.Minute, AgentTimeout: 2 * time.Minute, Out: filepath.Join(t.TempDir(), "rec"),
			Config: cfg, Script: paths.CliffScript, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := record(cliffSeeds[0])
	analyse := func(dir string, budget int) (*CliffResult, error) {
		_, res, err := Cliff(ctx, CliffOptions{RecordOptions: RecordOptions{Config: cfg}, Run: dir, Tails: 3, Budget: budget, Jobs: 3, GapBelow: 0.2})
		return res, err
	}
	first, err := analyse(dir, 30)
	if err != nil {
		t.Fatal(err)
	}
	if first.Result != "pinned" || first.Step < demo.CliffStep-1 || first.Step > demo.CliffStep+1 {
		t.Fatalf("--run on an earlier recording: %s at step %d (%s), want pinned at %d±1", first.Result, first.Step, first.Why, demo.CliffStep)
	}
	again, err := analyse(dir, 40)
	if err != nil {
		t.Fatal(err)
	}
	if again.Spent != first.Spent || again.Step != first.Step {
		t.Errorf("a second analysis spent %d tails (first %d) and names step %d (first %d): it should count the tails already spent and stop", again.Spent, first.Spent, again.Step, first.Step)
	}

	// Seed 1's recording keeps greet.sh: it passes.
	passed := record(1)
	journal := filepath.Join(passed, "journal.jsonl")
	before, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := analyse(passed, 30); err == nil || !strings.Contains(err.Error(), "passed its check") {
		t.Fatalf("--run on a recording that passed: %v, want a refusal naming it", err)
	}
	after, _ := os.ReadFile(journal)
	if string(after) != string(before) {
		t.Errorf("--run on a passed recording wrote to its journal")
	}
	if _, err := os.Stat(filepath.Join(passed, cliffFile)); err == nil {
		t.Errorf("--run on a passed recording left %s", cliffFile)
	}
	_, res, err := cliffOn(t, "codex", 1, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "passed" || res.Spent != 0 {
		t.Errorf("a recording that passed: %s after %d tails, want passed and none", res.Result, res.Spent)
	}
}

// TestCliffReportsAModelGap: a task the scripted model never gets right (greet.sh always
// prints the wrong greeting) has no cliff: tails from the start never pass, and once their
// upper 95% bound is below --gap-below the report says model gap, within the budget.
func TestCliffReportsAModelGap(t *testing.T) {
	needRooms(t)
	script := filepath.Join(t.TempDir(), "wrong.toml")
	if err := os.WriteFile(script, []byte(`[[turn]]
text = "Writing the greeting."
shell = '''printf '#!/bin/sh\necho "Hello tare!"\n' > greet.sh'''

[[turn]]
text = "Checking."
shell = "sh greet.sh"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, res, err := cliffOn(t, "codex", 5, script, "")
	if err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if res.Result != "model gap" || !strings.HasPrefix(string(report), "no cliff: model gap\n") {
		t.Fatalf("a hopeless task: %s after %d tails\n%s", res.Result, res.Spent, report)
	}
	if res.Spent > 30 {
		t.Errorf("spent %d tails of 30", res.Spent)
	}
}

// cliff8Script is the statistics review's real experiment: eight tool calls, the fifth a
// branch that writes the right greeting with probability 0.7 and a wrong one otherwise, and
// nothing later repairs it. Tails from steps 0-4 draw the fifth call again and pass about 70%
// of the time; tails from step 5 on never pass.
const cliff8Script = `final = "Done."

[[turn]]
text = "Looking at the project."
shell = "cat README.md greet.sh"

[[turn]]
text = "Making a notes folder."
shell = "mkdir -p notes"

[[turn]]
text = "Noting the task."
shell = "echo 'greet.sh must print the greeting' > notes/task.txt"

[[turn]]
text = "Listing the project."
shell = "ls -la"

[[turn]]
text = "Writing the greeting."
shell = '''printf '#!/bin/sh\necho "hello, tare"\n' > greet.sh'''
  [[turn.branch]]
  p = 0.3
  text = "Writing the greeting."
  shell = '''printf '#!/bin/sh\necho "Hello tare!"\n' > greet.sh'''

[[turn]]
text = "Listing again."
shell = "ls notes"

[[turn]]
text = "Noting what changed."
shell = "echo 'greet.sh written' >> notes/task.txt"

[[turn]]
text = "Leaving a last note."
shell = "echo done > notes/done.txt"
`

// cliff8Seed is a seed whose recording of cliff8Script takes the wrong branch at step 5.
const cliff8Seed = 7

// TestCliffEightStepsStepFiveDecides: the real Codex CLI on tare's model server, on the
// eight-step task whose fifth call decides: the report names step 5 (within one step) on
// its first line, and its words give each explanation's probability, the rates before and
// after with their difference's interval, and no "p=1.00" or "between step N and N".
func TestCliffEightStepsStepFiveDecides(t *testing.T) {
	needRooms(t)
	script := filepath.Join(t.TempDir(), "cliff8.toml")
	if err := os.WriteFile(script, []byte(cliff8Script), 0o644); err != nil {
		t.Fatal(err)
	}
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir, res, err := Cliff(ctx, CliffOptions{RecordOptions: RecordOptions{Prompt: demo.Task, Side: journal.Side{Key: "a", Agent: "codex"},
		Project: paths.Project, Check: demo.Check, CheckTimeout: time.Minute, AgentTimeout: 2 * time.Minute,
		Out: filepath.Join(t.TempDir(), "run"), Config: testConfig(t, []string{"codex"}), Script: script, Seed: cliff8Seed},
		Tails: 3, Budget: 60, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", report)
	if res.Result == "passed" {
		t.Fatalf("seed %d's recording passed: it no longer takes the wrong branch at step 5", cliff8Seed)
	}
	first, _, _ := strings.Cut(string(report), "\n")
	if res.Result != "pinned" || res.Step < 4 || res.Step > 6 || !strings.HasPrefix(first, fmt.Sprintf("cliff at step %d (p", res.Step)) {
		t.Fatalf("%s at step %d after %d tails, first line %q: want the cliff pinned at step 5±1", res.Result, res.Step, res.Spent, first)
	}
	for _, want := range []string{"  models    one step ", " · steady decline ", " · no change ", "(prior 1/3 each)",
		fmt.Sprintf("  before    step %d: ", res.Step-1), fmt.Sprintf("  after     step %d: ", res.Step), "  difference +", "(95% interval "} {
		if !strings.Contains(string(report), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	for _, never := range []string{"1.00", "between step", "looks like chance"} {
		if strings.Contains(string(report), never) {
			t.Errorf("the report says %q", never)
		}
	}
	if res.Models == nil || res.Models.OneStep < res.Near || res.Difference == nil {
		t.Errorf("the result's models %+v and difference %+v", res.Models, res.Difference)
	}
}
