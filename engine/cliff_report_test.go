package engine

import (
	"strings"
	"testing"

	"tare/agent"
	"tare/engine/journal"
)

func cliffReportFixture() (*Recipe, *journal.Recording) {
	recipe := &Recipe{Project: "/p", Prompt: "task", Check: "make test", Sides: []journal.Side{{Key: "a", Agent: "claude"}}}
	rec := &journal.Recording{Agent: "claude", Steps: make([]agent.Step, 12)}
	return recipe, rec
}

// A report whose boundary lies next to a step no tail came from says so: "not measured",
// never a rate of 0/0 that reads like a measured 0.
func TestCliffReportSaysNotMeasured(t *testing.T) {
	recipe, rec := cliffReportFixture()
	res := &CliffResult{Result: "not pinned", Step: 7, Lo: 4, Hi: 9, Probability: 0.4, Near: 0.7, Budget: 9, Spent: 9, CostKnown: true,
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
	if first, _, _ := strings.Cut(CliffReport(recipe, rec, res), "\n"); first != "gradual decline: no single step" {
		t.Errorf("a gradual decline's first line: %q", first)
	}
}
