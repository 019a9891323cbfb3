package engine

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tare/engine/journal"
	"tare/engine/run"
)

// swapCounts is one cell's tails: passed, failed and no verdict.
type swapCounts struct{ passed, failed, none int }

// swapState is a swap's journal state with the given cells per cut (keys workspace, agent,
// n(ative) or h(andoff), as the tail ids have them), each cut's tails from step[ci]: one pair
// of originals.
func swapState(cuts []map[string]swapCounts, step []int) *journal.RunState {
	return swapStateOver([][]map[string]swapCounts{cuts}, step)
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
// whose state effect is never called; its model and handoff effects and the other cuts' six
// effects are Bonferroni-corrected together (eight calls).
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

// The report says how the calls were corrected, marks cut 0 a control whose state effect is
// not called while its model effect is (agent a passes from the untouched project, b does
// not), says what the effects are about (these two originals) and what a non-call cannot rule
// out, and gives the cost of the recordings beside the tails'.
func TestSwapReportFamilyControlAndCost(t *testing.T) {
	control := map[string]swapCounts{"aa-h": {3, 0, 0}, "ab-h": {0, 3, 0}, "ba-h": {3, 0, 0}, "bb-h": {0, 3, 0}, "aa-n": {3, 0, 0}, "bb-n": {0, 3, 0}}
	last := map[string]swapCounts{"aa-h": {0, 6, 0}, "ab-h": {0, 6, 0}, "ba-h": {6, 0, 0}, "bb-h": {6, 0, 0}, "aa-n": {0, 6, 0}, "bb-n": {6, 0, 0}}
	table := SwapTable(swapState([]map[string]swapCounts{control, last}, []int{0, 4}))
	res := &SwapResult{A: "claude", B: "codex", Handoff: "trail", Family: SwapFamilyOf(table), CostKnown: true, RecordingCost: 0.5, TailsCost: 1.25, Cost: 1.75}
	for i, c := range table {
		c.Cut, c.StepA, c.StepB = float64(i), 4*i, 4*i
		res.Cuts = append(res.Cuts, c)
	}
	report := SwapReport(&run.Recipe{Project: "/p", Prompt: "task", Check: "make test"}, res)
	for _, want := range []string{
		"calls     5 (the measured effects; at a cut at step 0 the model and handoff effects); Bonferroni: each effect's interval at 99%",
		"estimand  one original run per agent: every effect is about these two runs' workspaces",
		"control   both workspaces are the untouched project (step 0): the state effect here can only be noise",
		"state effect   +0.00 (99% -0.",
		"control, no call",
		"model effect   +1.00 (99% +0.",
		"in words  the model effect is distinguishable from zero; the others are not",
		"a continues -1.00 (",
		"in words  the state effect is distinguishable from zero; the others are not",
		"cost      recordings $0.5000 + tails $1.2500 = $1.7500",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if !table[0].Control || table[1].Control {
		t.Errorf("control %v %v, want the cut from step 0 alone", table[0].Control, table[1].Control)
	}
	if state := effectNamed(table[0], "state"); state.Called || state.Significant {
		t.Errorf("the control cut's state effect is a call: %+v", state)
	}
	if model := effectNamed(table[0], "model"); !model.Called || !model.Significant {
		t.Errorf("the control cut's model effect (a passes 3/3 on both, b 0/3) is not called: %+v", model)
	}
}

// TestSwapSmallestCallableEffect: beside a non-call the report gives the smallest observed
// effect the cells could have called, the figures the statistics review found by simulation
// at the default six calls (0.83 at 3 tails a cell, 0.60 at 5, 0.40 at 10); no effect smaller
// than its cells' figure is ever called (random tables through SwapTable, the code the report
// uses), and a non-call says so in words.
func TestSwapSmallestCallableEffect(t *testing.T) {
	for _, tc := range []struct {
		calls, tails int
		want, power  float64
	}{
		{6, 3, 0.83, 0.27}, {6, 5, 0.60, 0.47}, {6, 10, 0.40, 0.91}, // the review's figures
		{8, 3, 0.83, 0.27}, {8, 5, 0.70, 0.41}, {8, 10, 0.40, 0.87}, // the default cuts now
	} {
		d, ok := smallestCallable([4]int{tc.tails, tc.tails, tc.tails, tc.tails}, 0.05/float64(tc.calls))
		if !ok || math.Abs(d-tc.want) > 0.005 {
			t.Errorf("%d tails a cell, %d calls: smallest callable effect %.3f (%v), want %.2f", tc.tails, tc.calls, d, ok, tc.want)
		}
		if p := swapEffectPower(0.6, tc.tails, tc.calls); math.Abs(p-tc.power) > 0.01 {
			t.Errorf("%d tails a cell, %d calls: power at 0.6 %.3f, want %.2f", tc.tails, tc.calls, p, tc.power)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	keys := []string{"aa-h", "ab-h", "ba-h", "bb-h", "aa-n", "bb-n"}
	for range 300 {
		cells := map[string]swapCounts{}
		for _, k := range keys {
			n := 1 + rng.IntN(8)
			p := rng.IntN(n + 1)
			cells[k] = swapCounts{p, n - p, 0}
		}
		for _, c := range SwapTable(swapState([]map[string]swapCounts{cells}, []int{3})) {
			for _, e := range c.Effects {
				if e.Significant && math.Abs(e.Diff) < e.Callable-1e-9 {
					t.Fatalf("%s effect %+.3f called below its smallest callable %.3f: %+v", e.Name, e.Diff, e.Callable, cells)
				}
			}
		}
	}
	weak := map[string]swapCounts{"aa-h": {2, 1, 0}, "ab-h": {2, 1, 0}, "ba-h": {1, 2, 0}, "bb-h": {1, 2, 0}, "aa-n": {2, 1, 0}, "bb-n": {1, 2, 0}}
	table := SwapTable(swapState([]map[string]swapCounts{weak}, []int{3}))
	res := &SwapResult{A: "claude", B: "codex", Handoff: "trail", Family: SwapFamilyOf(table), CostKnown: true, Cuts: table}
	report := SwapReport(&run.Recipe{Project: "/p", Prompt: "task", Check: "make test"}, res)
	for _, want := range []string{
		"not distinguishable from 0 (these cells call only an effect of 0.83 or more)",
		"with these tails only an observed effect of 0.83 or more could be called, so a non-call rules out nothing smaller",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// TestSwapDetectSizesTheCells: --detect D gives the fewest tails a cell at which a real
// effect of D is called with 80% power; simulated swaps (cells drawn at 0.5 +- D/2, through
// SwapTable) at that size call it at least that often, within the simulation's error, and
// with no effect anywhere still call nothing in at least 95%.
func TestSwapDetectSizesTheCells(t *testing.T) {
	cuts := []float64{0, 0.5, 1}
	rng := rand.New(rand.NewPCG(7, 8))
	for d, want := range map[float64]int{0.5: 14, 0.7: 6} { // docs/swap.md's figures
		tails, err := SwapTailsFor(d, cuts)
		if err != nil {
			t.Fatal(err)
		}
		if tails != want {
			t.Errorf("--detect %g: %d tails a cell, docs/swap.md says %d", d, tails, want)
		}
		if tails > 1 && swapEffectPower(d, tails-1, swapCalls(cuts)) >= swapPower {
			t.Errorf("--detect %g: %d tails a cell, but %d already reach 80%%", d, tails, tails-1)
		}
		const runs = 1500
		hits, false_ := 0, 0
		for range runs {
			draw := func(p float64) swapCounts {
				var c swapCounts
				for range tails {
					if rng.Float64() < p {
						c.passed++
					} else {
						c.failed++
					}
				}
				return c
			}
			hi, lo := 0.5+d/2, 0.5-d/2
			// a's workspace better by d for whoever continues, at every cut past 0.
			world := func(state bool) []map[string]swapCounts {
				var out []map[string]swapCounts
				for ci := range cuts {
					pa, pb := 0.5, 0.5
					if state && ci == len(cuts)-1 {
						pa, pb = hi, lo
					}
					out = append(out, map[string]swapCounts{"aa-h": draw(pa), "ab-h": draw(pa), "ba-h": draw(pb), "bb-h": draw(pb), "aa-n": draw(0.5), "bb-n": draw(0.5)})
				}
				return out
			}
			table := SwapTable(swapState(world(true), []int{0, 3, 6}))
			if s := effectNamed(table[2], "state"); s.Significant && s.Diff > 0 {
				hits++
			}
			for _, c := range SwapTable(swapState(world(false), []int{0, 3, 6})) {
				called := false
				for _, e := range c.Effects {
					called = called || e.Significant
				}
				if called {
					false_++
					break
				}
			}
		}
		power, fwer := float64(hits)/runs, float64(false_)/runs
		t.Logf("--detect %g: %d tails a cell; simulated power %.3f, calls with no effect %.3f", d, tails, power, fwer)
		if se := math.Sqrt(0.8 * 0.2 / runs); power < swapPower-3*se {
			t.Errorf("--detect %g at %d tails a cell: power %.3f, want at least 0.8", d, tails, power)
		}
		if fwer > 0.05+3*math.Sqrt(0.05*0.95/runs) {
			t.Errorf("--detect %g at %d tails a cell: a call with no effect in %.3f of swaps, want at most 0.05", d, tails, fwer)
		}
	}
	if _, err := SwapTailsFor(0.05, cuts); err == nil || !strings.Contains(err.Error(), "more than 40 tails") {
		t.Errorf("--detect 0.05: %v, want a refusal naming the 40-tail bound", err)
	}
	for _, bad := range []float64{0, -0.2, 1.5, math.NaN()} {
		if _, err := SwapTailsFor(bad, cuts); err == nil || !strings.Contains(err.Error(), "in (0, 1]") {
			t.Errorf("--detect %g: %v, want the range named", bad, err)
		}
	}
}

// A bound that rounds to zero at two decimals keeps its sign and size: "-0.00" beside
// "distinguishable from 0" would read as a contradiction.
func TestSwapBoundNearZero(t *testing.T) {
	for x, want := range map[float64]string{-0.0021: "-0.002", 0.0021: "+0.002", -0.0001: "-0.0001", 0: "+0.00", -0.4: "-0.40", 0.005: "+0.01"} {
		if got := bound(x); got != want {
			t.Errorf("bound(%g) = %q, want %q", x, got, want)
		}
	}
}

// swapStateOver is swapState for several pairs of originals: pairs[k][ci] the k-th pair's
// cells at cut ci, its tails named as runSwap names them (swapTailName).
func swapStateOver(pairs [][]map[string]swapCounts, step []int) *journal.RunState {
	st := &journal.RunState{Kind: "swap", Tails: map[string]*journal.TailState{}}
	for k, cuts := range pairs {
		for ci, cells := range cuts {
			for key, c := range cells {
				how := map[string]journal.How{"n": journal.HowNative, "h": journal.HowHandoff}[key[3:]]
				n := 0
				add := func(count int, status journal.Status) {
					for range count {
						id := swapTailName(k, ci, key[:1], key[1:2], how, n)
						st.Tails[id] = &journal.TailState{ID: id, Side: key[1:2], Step: step[ci], Attempt: journal.Attempt{Status: status}}
						st.Order = append(st.Order, id)
						n++
					}
				}
				add(c.passed, journal.StatusPassed)
				add(c.failed, journal.StatusFailed)
				add(c.none, journal.StatusNoVerdict)
			}
		}
	}
	return st
}

// TestSwapOriginalsSpeakOfTheAgents: two identical agents, each of whose originals breaks its
// workspace for whoever continues with probability 0.3 (the statistics review's
// TestLabSwapOneOriginal world). One original per agent calls a "state effect" in about a
// fifth of swaps: true of those two workspaces, false of the agents. Over 16 pairs of
// originals (--originals 16) no effect, each now the mean over the pairs, is called in more
// than 5%; where agent a's originals break far more often than b's (0.9 against 0.05), the
// state effect is called in at least 80%.
func TestSwapOriginalsSpeakOfTheAgents(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const tails, runs, pairsN = 3, 400, 16
	draw := func(p float64) swapCounts {
		var c swapCounts
		for range tails {
			if rng.Float64() < p {
				c.passed++
			} else {
				c.failed++
			}
		}
		return c
	}
	// pair draws one pair of originals: each breaks (every continuation fails) with its
	// agent's probability, else continuations pass at 0.8; the control cut is untouched.
	pair := func(breakA, breakB float64) []map[string]swapCounts {
		pa, pb := 0.8, 0.8
		if rng.Float64() < breakA {
			pa = 0
		}
		if rng.Float64() < breakB {
			pb = 0
		}
		control := map[string]swapCounts{"aa-h": draw(0.8), "ab-h": draw(0.8), "ba-h": draw(0.8), "bb-h": draw(0.8), "aa-n": draw(0.8), "bb-n": draw(0.8)}
		last := map[string]swapCounts{"aa-h": draw(pa), "ab-h": draw(pa), "ba-h": draw(pb), "bb-h": draw(pb), "aa-n": draw(pa), "bb-n": draw(pb)}
		return []map[string]swapCounts{control, last}
	}
	stateCalled := func(pairs [][]map[string]swapCounts) bool {
		cuts := SwapTable(swapStateOver(pairs, []int{0, 4}))
		return effectNamed(cuts[1], "state").Significant
	}
	anyCalled := func(pairs [][]map[string]swapCounts) bool {
		for _, c := range SwapTable(swapStateOver(pairs, []int{0, 4})) {
			for _, e := range c.Effects {
				if e.Significant {
					return true
				}
			}
		}
		return false
	}
	one, over, power := 0, 0, 0
	for range runs {
		if stateCalled([][]map[string]swapCounts{pair(0.3, 0.3)}) {
			one++
		}
		var null, real [][]map[string]swapCounts
		for range pairsN {
			null = append(null, pair(0.3, 0.3))
			real = append(real, pair(0.9, 0.05))
		}
		if anyCalled(null) {
			over++
		}
		if stateCalled(real) {
			power++
		}
	}
	oneRate, overRate, powerRate := float64(one)/runs, float64(over)/runs, float64(power)/runs
	t.Logf("identical agents: a state effect called in %.3f of one-original swaps, any effect in %.3f over %d pairs; a breaks 0.9 against 0.05: called in %.3f", oneRate, overRate, pairsN, powerRate)
	if oneRate < 0.1 {
		t.Errorf("one original per agent called a state effect in only %.3f of swaps of identical agents: the world does not show the problem --originals is for", oneRate)
	}
	if overRate > 0.05+3*math.Sqrt(0.05*0.95/runs) {
		t.Errorf("%d pairs of originals of identical agents: an effect called in %.3f of swaps, want at most 0.05", pairsN, overRate)
	}
	if powerRate < 0.8 {
		t.Errorf("%d pairs where a's originals break far more often: the state effect called in %.3f, want at least 0.8", pairsN, powerRate)
	}
	// The report says what the effects are about and what a pair count can call.
	var pairs [][]map[string]swapCounts
	for range 3 {
		pairs = append(pairs, pair(0.3, 0.3))
	}
	table := SwapTable(swapStateOver(pairs, []int{0, 4}))
	res := &SwapResult{A: "claude", B: "codex", Handoff: "trail", Family: SwapFamilyOf(table), CostKnown: true, Originals: 3}
	for i, c := range table {
		c.Cut, c.StepsA, c.StepsB = float64(i), []int{4 * i, 4 * i, 4 * i}, []int{4 * i, 3 * i, 4 * i}
		res.Cuts = append(res.Cuts, c)
	}
	report := SwapReport(&run.Recipe{Project: "/p", Prompt: "task", Check: "make test"}, res)
	for _, want := range []string{
		"estimand  3 original runs per agent",
		"so it is about the agents' runs",
		"a's originals at steps 4,4,4, b's at 4,3,4",
		"3 pairs of originals are too few to call any effect at this level",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// TestSwapLeftOutTailsAreCountedBothWays: with no effect anywhere (every cell at 0.5, 20
// tails a cell), four in five of the failures of tails on a's workspace end with no verdict (an operator killing the ones
// that go wrong, a timeout after output): on verdicts alone a's workspace looks better and a
// state effect is called far more often than 5%. Counted the worst and the best way, no
// effect is called in more than 5% of swaps, and the report says why a verdict-only call is
// not made.
func TestSwapLeftOutTailsAreCountedBothWays(t *testing.T) {
	const tails, runs = 20, 600
	rng := rand.New(rand.NewPCG(31, 32))
	draw := func(hide bool) swapCounts {
		var c swapCounts
		for range tails {
			switch {
			case rng.Float64() < 0.5:
				c.passed++
			case hide && rng.Float64() < 0.8:
				c.none++
			default:
				c.failed++
			}
		}
		return c
	}
	onVerdicts, called := 0, 0
	var example []SwapCut
	for range runs {
		var cuts []map[string]swapCounts
		for ci := range 3 {
			hide := ci > 0 // past step 0 the workspaces differ, and a's tails hide failures
			cuts = append(cuts, map[string]swapCounts{"aa-h": draw(hide), "ab-h": draw(hide), "ba-h": draw(false), "bb-h": draw(false), "aa-n": draw(hide), "bb-n": draw(false)})
		}
		table := SwapTable(swapState(cuts, []int{0, 3, 6}))
		v, c := false, false
		for _, cut := range table {
			for _, e := range cut.Effects {
				v, c = v || e.OnVerdicts, c || e.Significant
			}
		}
		if v {
			onVerdicts++
			if !c && example == nil {
				example = table
			}
		}
		if c {
			called++
		}
	}
	vr, cr := float64(onVerdicts)/runs, float64(called)/runs
	t.Logf("no effect, 80%% of a's failures left out: a call on verdicts alone in %.3f of swaps, with them counted both ways in %.3f", vr, cr)
	if vr < 0.2 {
		t.Errorf("on verdicts alone a call in only %.3f of swaps: the world does not show what the rule is for", vr)
	}
	if cr > 0.05+3*math.Sqrt(0.05*0.95/runs) {
		t.Errorf("with left-out tails counted both ways a call in %.3f of swaps where no effect is real, want at most 0.05", cr)
	}
	if example == nil {
		t.Fatal("no swap called an effect on verdicts alone that the rule did not")
	}
	res := &SwapResult{A: "claude", B: "codex", Handoff: "trail", Family: SwapFamilyOf(example), CostKnown: true, Cuts: example}
	if report := SwapReport(&run.Recipe{Project: "/p", Prompt: "task", Check: "make test"}, res); !strings.Contains(report, "left out counted the worst and the best way (on verdicts alone it would be)") {
		t.Errorf("the report does not say why the verdict-only call is not made:\n%s", report)
	}
}
