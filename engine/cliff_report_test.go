package engine

import (
	"strings"
	"testing"

	"tare/agent"
	"tare/engine/journal"
	"tare/engine/run"
)

func cliffReportFixture() (*run.Recipe, *journal.Recording) {
	recipe := &run.Recipe{Project: "/p", Prompt: "task", Check: "make test", Sides: []journal.Side{{Key: "a", Agent: "claude"}}}
	rec := &journal.Recording{Agent: "claude", Steps: make([]agent.Step, 12)}
	return recipe, rec
}

// A report whose boundary lies next to a step no tail came from says so: "not measured",
// never a rate of 0/0 that reads like a measured 0.
func TestCliffReportSaysNotMeasured(t *testing.T) {
	recipe, rec := cliffReportFixture()
	res := &CliffResult{Result: "not pinned", Step: 7, Lo: 4, Hi: 9, Probability: 0.4, Near: 0.7, Budget: 9, Spent: 9, CostKnown: true,
		Models: &CliffModels{OneStep: 0.8, Decline: 0.15, NoChange: 0.05},
		Before: &StepRate{Step: 6}, After: &StepRate{Step: 7, Passed: 0, Verdicts: 3, Tails: 3, Hi: 0.56},
		Steps: []StepRate{{Step: 0, Passed: 3, Verdicts: 3, Tails: 3}, {Step: 7, Verdicts: 3, Tails: 3}, {Step: 12, Verdicts: 3, Tails: 3}}}
	report := CliffReport(recipe, rec, res)
	if !strings.Contains(report, "before    step 6: not measured\n") || strings.Contains(report, "0/0") {
		t.Errorf("an unmeasured step is not said to be:\n%s", report)
	}
	res.Before = &StepRate{Step: 6, Tails: 2}
	if report := CliffReport(recipe, rec, res); !strings.Contains(report, "step 6: not measured (2 tails, none with a verdict)") {
		t.Errorf("a step whose tails reached no verdict:\n%s", report)
	}
}

// A pinned report's first line gives the posterior it was pinned on; when the two steps'
// own intervals overlap the report says the step was named from all the tails; the cost
// gives the recording beside the tails.
func TestCliffReportFirstLineAndCost(t *testing.T) {
	recipe, rec := cliffReportFixture()
	res := &CliffResult{Result: "pinned", Step: 4, Probability: 0.81, Near: 0.97, StepOdds: 14, Budget: 30, Spent: 18, CostKnown: true,
		Models:        &CliffModels{OneStep: 0.98, Decline: 0.015, NoChange: 0.005},
		RecordingCost: 0.25, TailsCost: 1.5, Cost: 1.75,
		Before: &StepRate{Step: 3, Passed: 3, Verdicts: 3, Tails: 3, Rate: 1, Lo: 0.44, Hi: 1},
		After:  &StepRate{Step: 4, Passed: 0, Verdicts: 3, Tails: 3, Rate: 0, Lo: 0, Hi: 0.56}}
	report := CliffReport(recipe, rec, res)
	first, _, _ := strings.Cut(report, "\n")
	if first != "cliff at step 4 (p=0.97 within one step)" {
		t.Errorf("first line %q", first)
	}
	for _, want := range []string{"these two intervals overlap", "cost      recording $0.2500 + tails $1.5000 = $1.7500"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	res.Result = "gradual decline"
	res.Before, res.After = nil, nil
	res.Models = &CliffModels{OneStep: 0.02, Decline: 0.97, NoChange: 0.01}
	if first, _, _ := strings.Cut(CliffReport(recipe, rec, res), "\n"); first != "gradual decline: no single step" {
		t.Errorf("a gradual decline's first line: %q", first)
	}
}

// The report's words say what each number is: every explanation's probability under the
// stated prior, the rates before and after with their difference's interval, a step named
// only when "one step" is the likeliest explanation, "no difference detected" rather than a
// finding of none, and never "p=1.00" or "between step N and N".
func TestCliffReportWords(t *testing.T) {
	recipe, rec := cliffReportFixture()
	before := &StepRate{Step: 4, Passed: 6, Verdicts: 9, Tails: 9, Rate: 0.67, Lo: 0.35, Hi: 0.88}
	after := &StepRate{Step: 5, Passed: 0, Verdicts: 9, Tails: 9, Rate: 0, Lo: 0, Hi: 0.3}
	for _, tc := range []struct {
		res   *CliffResult
		first string
		want  []string
	}{
		{&CliffResult{Result: "pinned", Step: 5, Probability: 0.996, Near: 0.9991, Models: &CliffModels{OneStep: 0.9995, Decline: 0.0004, NoChange: 0.0001},
			Before: before, After: after, Difference: &RateDiff{D: 0.67, Lo: 0.29, Hi: 0.88}},
			"cliff at step 5 (p>0.99 within one step)",
			[]string{"models    one step > 0.99 · steady decline < 0.01 · no change < 0.01 (prior 1/3 each)", "before    step 4: 6/9", "after     step 5: 0/9", "difference +0.67 (95% interval +0.29 to +0.88)"}},
		{&CliffResult{Result: "not pinned", Step: 5, Lo: 5, Hi: 5, Probability: 0.7, Near: 0.79, Models: &CliffModels{OneStep: 0.8, Decline: 0.19, NoChange: 0.01},
			Before: before, After: after, Difference: &RateDiff{D: 0.67, Lo: 0.29, Hi: 0.88}},
			"not pinned: one step is the likeliest explanation (p=0.80); most likely at step 5 (p=0.70, within one step 0.79)",
			[]string{"steady decline 0.19", "difference +0.67"}},
		{&CliffResult{Result: "no cliff", Models: &CliffModels{OneStep: 0.2, Decline: 0.1, NoChange: 0.7},
			Before: &StepRate{Step: 0, Passed: 4, Verdicts: 9, Tails: 9}, After: &StepRate{Step: 12, Passed: 4, Verdicts: 9, Tails: 9}, Difference: &RateDiff{D: 0, Lo: -0.38, Hi: 0.38}},
			"no difference detected: no change is the likeliest explanation (p=0.70)",
			[]string{"start     step 0: 4/9", "last      step 12: 4/9", "difference +0.00 (95% interval -0.38 to +0.38)"}},
		{&CliffResult{Result: "gradual decline", Models: &CliffModels{OneStep: 0.3, Decline: 0.6, NoChange: 0.1}},
			"gradual decline: the likeliest explanation (p=0.60), no single step named", nil},
	} {
		tc.res.CostKnown = true
		report := CliffReport(recipe, rec, tc.res)
		if first, _, _ := strings.Cut(report, "\n"); first != tc.first {
			t.Errorf("first line %q, want %q", first, tc.first)
		}
		for _, w := range tc.want {
			if !strings.Contains(report, w) {
				t.Errorf("the report lacks %q:\n%s", w, report)
			}
		}
		for _, never := range []string{"1.00", "between step", "looks like chance"} {
			if strings.Contains(report, never) {
				t.Errorf("the report says %q:\n%s", never, report)
			}
		}
		if tc.res.Result == "no cliff" && strings.Contains(report, "step 0: 4/9 passed") && strings.Contains(report, "before    ") {
			t.Errorf("a report with no step names a before and after:\n%s", report)
		}
	}
}
