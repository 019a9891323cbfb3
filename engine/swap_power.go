package engine

import (
	"fmt"
	"math"
	"sync"

	"tare/engine/stats"
)

// What a swap of a given size can tell. Each effect is the mean of two differences of four
// cells, called when its interval (MOVER on exact per-cell limits at the family's level)
// excludes zero; with few tails a cell only a large observed effect can be called at all, and
// a non-call then says nothing about smaller ones. Both figures below are exact (every count
// the cells could hold is gone through), not simulated.

// swapPower is the chance of calling a real effect that --detect sizes a swap for.
const swapPower = 0.8

// maxDetectTails bounds the tails a cell --detect may ask for: past it the swap would run
// thousands of tails, and the user is better told so.
const maxDetectTails = 40

// effectCombination is an effect over cells with the given verdicts (plus, minus, plus,
// minus: the two parts' terms), at a per-call alpha.
func effectCombination(ns [4]int, alpha float64) stats.Combination {
	return stats.Combination{Coefs: []float64{0.5, -0.5, 0.5, -0.5}, Ns: ns[:], Alpha: alpha}
}

type callableKey struct {
	ns    [4]int
	alpha float64
}

// callableCache keeps SmallestCall's answers: the app draws a swap's table again and again
// with the same counts.
var callableCache sync.Map

// smallestCallable is the smallest observed effect cells of these verdict counts could call
// at the per-call alpha; ok is false when no count would be called.
func smallestCallable(ns [4]int, alpha float64) (float64, bool) {
	key := callableKey{ns, alpha}
	if v, ok := callableCache.Load(key); ok {
		return v.(float64), v.(float64) > 0
	}
	d, ok := effectCombination(ns, alpha).SmallestCall()
	if !ok {
		d = 0
	}
	callableCache.Store(key, d)
	return d, ok
}

// swapCalls is how many calls a swap with these cuts makes when every effect is measured:
// three at a cut past step 0, two at a cut at 0 (the control: its state effect can only be
// noise and is never called). A cut above 0 that rounds to step 0 of a short run makes two,
// not three, so this is an upper bound, and the intervals it sizes for are at most as wide.
func swapCalls(cuts []float64) int {
	n := 0
	for _, c := range cuts {
		if c == 0 {
			n += 2
		} else {
			n += len(swapEffects)
		}
	}
	return n
}

// swapEffectPower is the exact chance that a swap with this many tails a cell calls an
// effect of size d with the sign of the truth, where its cells sit at 0.5 + d/2 and 0.5 - d/2
// (rates near one half vary most, so this is the hardest place for an effect of that size).
func swapEffectPower(d float64, tails, calls int) float64 {
	hi, lo := 0.5+d/2, 0.5-d/2
	return effectCombination([4]int{tails, tails, tails, tails}, swapAlpha/float64(max(1, calls))).Power([]float64{hi, lo, hi, lo})
}

// SwapTailsFor is the fewest tails a cell with which a swap over these cuts calls a real
// effect of size detect (a difference of pass rates, in (0, 1]) with probability at least
// 0.8, every tail reaching a verdict, at the family-wise level the swap keeps. It refuses an
// effect that would need more than 40 tails a cell.
func SwapTailsFor(detect float64, cuts []float64) (int, error) {
	if math.IsNaN(detect) || detect <= 0 || detect > 1 {
		return 0, fmt.Errorf("--detect %g: give the effect to detect as a difference of pass rates in (0, 1], like 0.5", detect)
	}
	calls := swapCalls(cuts)
	// Power grows with the tails, though not always at every step (exact intervals on
	// discrete counts): the first size that reaches it is taken.
	for n := 1; n <= maxDetectTails; n++ {
		if swapEffectPower(detect, n, calls) >= swapPower {
			return n, nil
		}
	}
	return 0, fmt.Errorf("--detect %g: a swap over %d cuts would need more than %d tails a cell to call an effect of %g with 80%% power (%d calls to correct for); give a larger effect, fewer cuts, or --tails",
		detect, len(cuts), maxDetectTails, detect, calls)
}
