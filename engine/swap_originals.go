package engine

import (
	"math"
	"sync"

	"tare/engine/stats"
)

// maxOriginals bounds --originals: each original is a whole recording, and each adds a
// swap's worth of tails.
const maxOriginals = 30

// swapCutsOverOriginals is swapCuts for a swap of several originals per agent: the k-th of
// a's and of b's are swapped as one swap (counts[cut][k] its cells), and each effect at a
// cut is the mean over the pairs of that pair's effect (the mean of two differences of its
// cells, as swapCuts has it), so it is about the agents' runs rather than two workspaces. Its
// interval is over the pairs: the betting interval for a mean of values in [-1, 1]
// (stats.MeanInterval) at the family's Bonferroni level, valid at any number of pairs and
// wide with few. An effect is measured only when every pair measures it. The cells shown
// pool the pairs' tails; their rates describe, the effects call.
func swapCutsOverOriginals(counts [][]map[string]StepRate, control []bool) []SwapCut {
	rate := func(n StepRate) float64 { return float64(n.Passed) / float64(n.Verdicts) }
	allMeasured := func(pairs []map[string]StepRate, keys ...string) bool {
		for _, c := range pairs {
			if !cellsMeasured(c, keys...) {
				return false
			}
		}
		return len(pairs) > 0
	}
	calls := 0
	for ci, pairs := range counts {
		for _, e := range swapEffects {
			if swapCalled(e.name, control[ci]) && allMeasured(pairs, e.parts[0].plus, e.parts[0].minus, e.parts[1].plus, e.parts[1].minus) {
				calls++
			}
		}
	}
	alpha := swapAlpha / float64(max(1, calls))
	var cuts []SwapCut
	for ci, pairs := range counts {
		cut := SwapCut{Control: control[ci], Level: 1 - alpha, Originals: len(pairs)}
		for _, ws := range []string{"a", "b"} {
			for _, who := range []string{"a", "b"} {
				for _, how := range []string{"native", "handoff"} {
					if how == "native" && who != ws {
						continue
					}
					var n StepRate
					for _, c := range pairs {
						x := c[ws+who+how[:1]]
						n.Tails, n.Verdicts, n.Passed = n.Tails+x.Tails, n.Verdicts+x.Verdicts, n.Passed+x.Passed
					}
					n.NoVerdict = n.Tails - n.Verdicts
					if n.Verdicts > 0 {
						n.Rate = rate(n)
					}
					n.Lo, n.Hi = stats.Wilson(n.Passed, n.Verdicts)
					cut.Cells = append(cut.Cells, SwapCell{Workspace: ws, Agent: who, How: how, StepRate: n})
				}
			}
		}
		for _, e := range swapEffects {
			eff := SwapEffect{Name: e.name, Meaning: e.meaning + "; the mean over the pairs of originals"}
			var means []float64 // per pair: the effect
			for _, p := range e.parts {
				part := SwapPart{Name: p.name, Measured: allMeasured(pairs, p.plus, p.minus), Lo: -1, Hi: 1}
				if part.Measured {
					var diffs []float64
					for _, c := range pairs {
						diffs = append(diffs, rate(c[p.plus])-rate(c[p.minus]))
					}
					part.Diff = mean(diffs)
					part.Lo, part.Hi, _ = stats.MeanInterval(diffs, alpha)
				}
				eff.Parts = append(eff.Parts, part)
			}
			eff.Lo, eff.Hi = -1, 1
			if eff.Measured = eff.Parts[0].Measured && eff.Parts[1].Measured; eff.Measured {
				for _, c := range pairs {
					means = append(means, 0.5*(rate(c[e.parts[0].plus])-rate(c[e.parts[0].minus]))+0.5*(rate(c[e.parts[1].plus])-rate(c[e.parts[1].minus])))
				}
				var refuted bool
				eff.Diff = mean(means)
				eff.Lo, eff.Hi, refuted = stats.MeanInterval(means, alpha)
				eff.Called = swapCalled(e.name, cut.Control)
				eff.OnVerdicts = eff.Called && refuted
				eff.Significant = eff.OnVerdicts
				// As swapCuts does: tails left out counted the worst and the best way.
				var worst, best []float64
				for _, c := range pairs {
					w, b := 0.0, 0.0
					for _, p := range e.parts {
						plus, minus := c[p.plus], c[p.minus]
						eff.LeftOut += plus.Tails - plus.Verdicts + minus.Tails - minus.Verdicts
						w += 0.5 * (filledRate(plus, false) - filledRate(minus, true))
						b += 0.5 * (filledRate(plus, true) - filledRate(minus, false))
					}
					worst, best = append(worst, w), append(best, b)
				}
				if eff.OnVerdicts && eff.LeftOut > 0 {
					worstLo, _, _ := stats.MeanInterval(worst, alpha)
					_, bestHi, _ := stats.MeanInterval(best, alpha)
					eff.Significant = (eff.Lo > 0 && worstLo > 0) || (eff.Hi < 0 && bestHi < 0)
				}
				if eff.Called {
					eff.Callable = smallestCallableOver(len(pairs), alpha)
				}
			}
			cut.Effects = append(cut.Effects, eff)
		}
		cuts = append(cuts, cut)
	}
	return cuts
}

// filledRate is a cell's rate with its tails left out counted as passes (pass) or failures.
func filledRate(n StepRate, pass bool) float64 {
	x := n.Passed
	if pass {
		x += n.Tails - n.Verdicts
	}
	return float64(x) / float64(n.Tails)
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

type overKey struct {
	pairs int
	alpha float64
}

var overCache sync.Map

// smallestCallableOver is the smallest effect that pairs of originals could call at the
// per-call alpha, even with every pair showing the same effect: 0 when not even every pair at
// the largest effect (1) would be called (too few originals to call anything).
func smallestCallableOver(pairs int, alpha float64) float64 {
	key := overKey{pairs, alpha}
	if v, ok := overCache.Load(key); ok {
		return v.(float64)
	}
	called := func(d float64) bool {
		xs := make([]float64, pairs)
		for i := range xs {
			xs[i] = d
		}
		_, _, ok := stats.MeanInterval(xs, alpha)
		return ok
	}
	d := 0.0
	if called(1) {
		lo, hi := 0.0, 1.0
		for hi-lo > 0.005 {
			if m := (lo + hi) / 2; called(m) {
				hi = m
			} else {
				lo = m
			}
		}
		d = math.Ceil(hi*100) / 100
	}
	overCache.Store(key, d)
	return d
}
