package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tare/engine/journal"
)

// swapCounts is one cell's tails: passed, failed and no verdict.
type swapCounts struct{ passed, failed, none int }

// swapState is a swap's journal state with the given cells per cut (keys workspace, agent,
// n(ative) or h(andoff), as the tail ids have them), each cut's tails from step[ci].
func swapState(cuts []map[string]swapCounts, step []int) *journal.RunState {
	st := &journal.RunState{Kind: "swap", Tails: map[string]*journal.TailState{}}
	for ci, cells := range cuts {
		for key, c := range cells {
			n := 0
			add := func(k int, status string) {
				for range k {
					id := fmt.Sprintf("c%d-%s-%s-%d", ci, key[:2], key[3:], n)
					st.Tails[id] = &journal.TailState{ID: id, Side: key[1:2], Step: step[ci], Status: status}
					st.Order = append(st.Order, id)
					n++
				}
			}
			add(c.passed, journal.StatusPassed)
			add(c.failed, journal.StatusFailed)
			add(c.none, journal.StatusNoVerdict)
		}
	}
	return st
}

func effectNamed(c SwapCut, name string) SwapEffect {
	for _, e := range c.Effects {
		if e.Name == name {
			return e
		}
	}
	return SwapEffect{}
}

// TestSwapEffectsWeighCellsEqually: agent a always passes and agent b never does, whoever's
// workspace it is: a model effect and no state effect. The no-verdicts fall unevenly (b on
// a's workspace and a on b's reach a verdict once in six tails). Pooling each workspace's
// tails then makes a's workspace look far better than b's (6/7 against 1/7), a state effect
// that is not there; the mean of the per-agent differences (1 - 1 and 0 - 0) is 0.
func TestSwapEffectsWeighCellsEqually(t *testing.T) {
	cells := map[string]swapCounts{
		"aa-h": {6, 0, 0}, "ab-h": {0, 1, 5},
		"ba-h": {1, 0, 5}, "bb-h": {0, 6, 0},
		"aa-n": {6, 0, 0}, "bb-n": {0, 6, 0},
	}
	cuts := SwapTable(swapState([]map[string]swapCounts{cells}, []int{3}))
	if len(cuts) != 1 {
		t.Fatalf("%d cuts, want 1", len(cuts))
	}
	state := effectNamed(cuts[0], "state")
	if state.Significant || math.Abs(state.Diff) > 1e-9 {
		t.Errorf("no state effect is real, yet the state effect is %+.2f (%+.2f to %+.2f), distinguishable %v", state.Diff, state.Lo, state.Hi, state.Significant)
	}
	if model := effectNamed(cuts[0], "model"); model.Diff != 1 {
		t.Errorf("the model effect is %+.2f, want +1: agent a always passes, b never", model.Diff)
	}
}

// The state effect is also given per continuing agent, and an effect one of whose cells has
// no verdict is not measured, not 0 and never a call.
func TestSwapEffectParts(t *testing.T) {
	cells := map[string]swapCounts{
		"aa-h": {0, 5, 0}, "ab-h": {0, 5, 0},
		"ba-h": {5, 0, 0}, "bb-h": {5, 0, 0},
		"aa-n": {0, 5, 0}, "bb-n": {0, 0, 3},
	}
	c := SwapTable(swapState([]map[string]swapCounts{cells}, []int{2}))[0]
	state := effectNamed(c, "state")
	if len(state.Parts) != 2 || state.Parts[0].Name != "a continues" || state.Parts[0].Diff != -1 || state.Parts[1].Diff != -1 || !state.Significant {
		t.Errorf("state effect %+v, want -1 per continuing agent and distinguishable", state)
	}
	handoff := effectNamed(c, "handoff")
	if handoff.Measured || handoff.Significant || handoff.Lo != -1 || handoff.Hi != 1 {
		t.Errorf("handoff effect with a cell of no verdicts: %+v, want not measured", handoff)
	}
	if f := SwapFamilyOf([]SwapCut{c}); f.Calls != 2 || f.Method != "bonferroni" || math.Abs(f.Level-(1-0.05/2)) > 1e-12 {
		t.Errorf("family %+v, want Bonferroni over the 2 measured effects", f)
	}
}

// TestSwapFamilyWiseError: with no effect anywhere (every cell passes at the same rate, and
// some tails reach no verdict at random), swaps of three cuts (0, 0.5, 1) at 3 and 10 tails
// a cell make any call "distinguishable from zero" in at most 5% of runs. Cut 0 is a control
// and makes none; the other cuts' six effects are Bonferroni-corrected together.
func TestSwapFamilyWiseError(t *testing.T) {
	const runs = 2000
	rng := rand.New(rand.NewPCG(11, 12))
	keys := []string{"aa-h", "ab-h", "ba-h", "bb-h", "aa-n", "bb-n"}
	for _, tails := range []int{3, 10} {
		for _, p := range []float64{0.3, 0.5, 0.8} {
			any := 0
			for range runs {
				var cuts []map[string]swapCounts
				for range 3 {
					cells := map[string]swapCounts{}
					for _, k := range keys {
						var c swapCounts
						for range tails {
							switch {
							case rng.Float64() < 0.15:
								c.none++
							case rng.Float64() < p:
								c.passed++
							default:
								c.failed++
							}
						}
						cells[k] = c
					}
					cuts = append(cuts, cells)
				}
				called := false
				for _, c := range SwapTable(swapState(cuts, []int{0, 3, 6})) {
					for _, e := range c.Effects {
						called = called || e.Significant
					}
				}
				if called {
					any++
				}
			}
			rate := float64(any) / runs
			t.Logf("%d tails a cell, every cell at %.1f: a call in %.1f%% of %d runs", tails, p, 100*rate, runs)
			if rate > 0.05 {
				t.Errorf("%d tails a cell at %.1f: a call where no effect is real in %.1f%% of runs, want at most 5%%", tails, p, 100*rate)
			}
		}
	}
}

// The report says how the calls were corrected, marks cut 0 a control that makes none and
// leaves it out of the words, and gives the cost of the recordings beside the tails'.
func TestSwapReportFamilyControlAndCost(t *testing.T) {
	control := map[string]swapCounts{"aa-h": {3, 0, 0}, "ab-h": {0, 3, 0}, "ba-h": {3, 0, 0}, "bb-h": {0, 3, 0}, "aa-n": {3, 0, 0}, "bb-n": {0, 3, 0}}
	last := map[string]swapCounts{"aa-h": {0, 6, 0}, "ab-h": {0, 6, 0}, "ba-h": {6, 0, 0}, "bb-h": {6, 0, 0}, "aa-n": {0, 6, 0}, "bb-n": {6, 0, 0}}
	table := SwapTable(swapState([]map[string]swapCounts{control, last}, []int{0, 4}))
	res := &SwapResult{A: "claude", B: "codex", Handoff: "trail", Family: SwapFamilyOf(table), CostKnown: true, RecordingCost: 0.5, TailsCost: 1.25, Cost: 1.75}
	for i, c := range table {
		c.Cut, c.StepA, c.StepB = float64(i), 4*i, 4*i
		res.Cuts = append(res.Cuts, c)
	}
	report := SwapReport(&Recipe{Project: "/p", Prompt: "task", Check: "make test"}, res)
	for _, want := range []string{
		"calls     3 (the measured effects at cuts past step 0); Bonferroni: each effect's interval at 98.33%",
		"control   both workspaces are the untouched project (step 0)",
		"model effect   +1.00 (98.33% +0.20 to +1.00) control, no call",
		"a continues -1.00 (",
		"in words  the state effect is distinguishable from zero; the others are not",
		"cost      recordings $0.5000 + tails $1.2500 = $1.7500",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if strings.Count(report, "in words") != 1 {
		t.Errorf("the control cut has an in-words line:\n%s", report)
	}
	if !table[0].Control || table[1].Control {
		t.Errorf("control %v %v, want the cut from step 0 alone", table[0].Control, table[1].Control)
	}
}
