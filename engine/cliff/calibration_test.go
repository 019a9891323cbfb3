package cliff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// world is a simulated recording: the pass rate of a tail from each step, and the steps a
// named cliff may be at to be right (none: there is no single step to name).
type world struct {
	steps int
	rate  func(step int) float64
	right []int
}

// family draws worlds of one kind.
type family struct {
	name string
	draw func(rng *rand.Rand, steps int) world
	// cliff: every world has a single sharp step (the one-step model holds), so its pins
	// are checked family by family; the others' pins (soft and two cliffs, outside the
	// model) count in the grid's, and where there is no step pins must be rare.
	cliff bool
}

func sharp(lo, hi float64) func(*rand.Rand, int) world {
	return func(rng *rand.Rand, steps int) world {
		gap := lo + (hi-lo)*rng.Float64()
		before := gap + (0.95-gap)*rng.Float64()
		c := 1 + rng.IntN(steps)
		return world{steps, func(s int) float64 { return map[bool]float64{true: before, false: before - gap}[s < c] }, []int{c}}
	}
}

var families = []family{
	{"sharp, gap 0.15-0.4", sharp(0.15, 0.4), true},
	{"sharp, gap 0.4-0.7", sharp(0.4, 0.7), true},
	{"sharp, 0.7 -> 0", func(rng *rand.Rand, steps int) world {
		c := 1 + rng.IntN(steps)
		return world{steps, func(s int) float64 { return map[bool]float64{true: 0.7, false: 0}[s < c] }, []int{c}}
	}, true},
	{"soft cliff (logistic, 1 step wide)", func(rng *rand.Rand, steps int) world {
		before, after := 0.5+0.45*rng.Float64(), 0.3*rng.Float64()
		centre := 1 + rng.IntN(steps)
		return world{steps, func(s int) float64 {
			return after + (before-after)/(1+math.Exp((float64(s)-float64(centre)+0.5)/1.0))
		}, []int{centre}}
	}, false},
	{"two cliffs 0.9 -> 0.5 -> 0.1", func(rng *rand.Rand, steps int) world {
		a := 1 + rng.IntN(steps)
		b := 1 + rng.IntN(steps)
		a, b = min(a, b), max(a, b)
		return world{steps, func(s int) float64 {
			switch {
			case s < a:
				return 0.9
			case s < b:
				return 0.5
			}
			return 0.1
		}, []int{a, b}}
	}, false},
	{"no cliff: constant 0.3-0.9", func(rng *rand.Rand, steps int) world {
		p := 0.3 + 0.6*rng.Float64()
		return world{steps, func(int) float64 { return p }, nil}
	}, false},
	{"steady decline", func(rng *rand.Rand, steps int) world {
		p0, p1 := 0.5+0.45*rng.Float64(), 0.3*rng.Float64()
		return world{steps, func(s int) float64 { return p0 + (p1-p0)*float64(s)/float64(steps) }, nil}
	}, false},
}

// search runs Decide to its end on w, as tare cliff does.
func search(rng *rand.Rand, w world, tails, budget int) Decision {
	cfg := Config{Steps: w.steps, Tails: tails, Budget: budget}
	obs := map[int]Count{}
	for {
		d := Decide(cfg, obs)
		if d.Kind != Running {
			return d
		}
		c := obs[d.Step]
		for range d.Want {
			c.Tails++
			c.Verdicts++
			if rng.Float64() < w.rate(d.Step) {
				c.Passed++
			}
		}
		obs[d.Step] = c
	}
}

// named is whether a decision names a step: pinned, or "one step" the most probable
// explanation at the budget's end.
func named(d Decision) bool { return d.Kind == Pinned || d.Kind == NotPinned }

// rightNear: a named step is right when a step the world's rate falls at is within one step.
func rightNear(w world, step int) bool {
	for _, c := range w.right {
		if abs(step-c) <= 1 {
			return true
		}
	}
	return false
}

// tally is stated probabilities against how often they were right.
type tally struct {
	n       int
	stated  float64
	correct int
}

func (t *tally) add(p float64, right bool) {
	t.n++
	t.stated += p
	if right {
		t.correct++
	}
}

// short says, against the mean stated probability, how far below it the rate of right
// answers is, in standard errors (negative: below).
func (t tally) z() float64 {
	if t.n == 0 {
		return 0
	}
	p := t.stated / float64(t.n)
	rate := float64(t.correct) / float64(t.n)
	se := math.Sqrt(max(p*(1-p), 0.0025) / float64(t.n))
	return (rate - p) / se
}

func (t tally) String() string {
	if t.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d: %.3f stated, %.3f right", t.n, t.stated/float64(t.n), float64(t.correct)/float64(t.n))
}

// TestCliffCalibration: over a grid of simulated recordings (sharp cliffs with gaps 0.15 to
// 0.7, soft cliffs, two cliffs, no cliff, steady declines; 8 and 20 steps; the default budget
// of 30 tails), what the report states is right as often as it says:
//
//   - a pinned cliff ("p=X within one step") is within one step of a step the rate falls at
//     at least as often as X on average, for every family and over the grid;
//   - the unpinned report's "most likely at step N (p=Y)" is exactly right at least as often
//     as Y, over the grid;
//   - where there is no cliff a step is named rarely, and a cliff is pinned almost never.
//
// "Right as often as it says" allows two standard errors of the simulation.
func TestCliffCalibration(t *testing.T) {
	reps := simReps(200)
	const budget = 30
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-36s %5s | %-38s | %-38s | %s\n", "family", "steps", "pinned: n, stated, right within one", "not pinned: n, stated, right at the step", "named a step / pinned")
	var allPins, allUnpinned tally
	for fi, f := range families {
		for _, steps := range []int{8, 20} {
			rng := rand.New(rand.NewPCG(uint64(fi), uint64(steps)))
			var pins, unpinned tally
			namedN := 0
			for range reps {
				w := f.draw(rng, steps)
				d := search(rng, w, 3, budget)
				switch d.Kind {
				case Pinned:
					pins.add(d.Near, rightNear(w, d.Hi))
					allPins.add(d.Near, rightNear(w, d.Hi))
				case NotPinned:
					exact := false
					for _, c := range w.right {
						exact = exact || c == d.Hi
					}
					unpinned.add(d.Probability, exact)
					allUnpinned.add(d.Probability, exact)
				}
				if named(d) {
					namedN++
				}
			}
			fmt.Fprintf(&b, "%-36s %5d | %-38s | %-38s | %.0f%% / %.1f%%\n", f.name, steps, pins, unpinned, 100*float64(namedN)/float64(reps), 100*float64(pins.n)/float64(reps))
			switch {
			case f.cliff:
				if z := pins.z(); z < -2 {
					t.Errorf("%s, %d steps: pinned cliffs are right less often than stated (%s; z=%.1f)", f.name, steps, pins, z)
				}
			case len(f.name) > 8 && f.name[:8] == "no cliff":
				// Every step named here is wrong, so naming one must be rare.
				if float64(namedN) > 0.2*float64(reps) || float64(pins.n) > 0.02*float64(reps) {
					t.Errorf("no cliff, %d steps: a step named in %d of %d searches, pinned in %d", steps, namedN, reps, pins.n)
				}
			case f.name == "steady decline":
				if float64(pins.n) > 0.03*float64(reps) {
					t.Errorf("steady decline, %d steps: a cliff pinned in %d of %d searches", steps, pins.n, reps)
				}
			}
		}
	}
	fmt.Fprintf(&b, "all pins: %s; all unpinned: %s\n", allPins, allUnpinned)
	t.Log(b.String())
	if z := allPins.z(); z < -2 {
		t.Errorf("over the grid, pinned cliffs are right less often than stated: %s (z=%.1f)", allPins, z)
	}
	if z := allUnpinned.z(); z < -2 {
		t.Errorf("over the grid, the unpinned report's most likely step is right less often than stated: %s (z=%.1f)", allUnpinned, z)
	}
}

// TestEightStepsStepFiveDecides is the statistics review's real experiment, simulated: eight
// steps, tails from steps 0-4 pass at 0.7, from step 5 on never. Over many seeds, how often
// the default budget of 30 (and 60) pins the cliff within one step, how often the report
// names a step within one step (pinned, or the unpinned report's most likely step), and the
// tails spent. Beside it, the most any search could pin at 30 with the same bar: an oracle
// that knows the cliff is at 5 and spends every tail after the two ends at steps 4 and 5,
// stopping as soon as the posterior allows. (TestEightStepsBound, with -bound, gives the most
// a search told the true rates could pin.)
func TestEightStepsStepFiveDecides(t *testing.T) {
	reps := simReps(1000)
	w := world{8, func(s int) float64 { return map[bool]float64{true: 0.7, false: 0}[s < 5] }, []int{5}}
	rate := map[int]float64{}
	for _, budget := range []int{30, 60} {
		rng := rand.New(rand.NewPCG(8, uint64(budget)))
		pinned, namedNear, spent := 0, 0, 0
		for range reps {
			d := search(rng, w, 3, budget)
			spent += d.Spent
			if d.Kind == Pinned && rightNear(w, d.Hi) {
				pinned++
			}
			if named(d) && rightNear(w, d.Hi) {
				namedNear++
			}
		}
		rate[budget] = float64(pinned) / float64(reps)
		t.Logf("budget %d: pinned within one step %.1f%%, named within one step %.1f%%, mean tails %.1f", budget, 100*rate[budget], 100*float64(namedNear)/float64(reps), float64(spent)/float64(reps))
	}
	rng := rand.New(rand.NewPCG(8, 0))
	oracle := 0
	for range reps {
		obs := map[int]Count{}
		for n := 0; n < 30; n++ {
			s := []int{0, 8, 4, 5, 5}[min(n, 2+(n-2)%3)]
			if n >= 2 {
				s = []int{4, 5, 5}[(n-2)%3]
			}
			c := obs[s]
			c.Tails++
			c.Verdicts++
			if rng.Float64() < w.rate(s) {
				c.Passed++
			}
			obs[s] = c
			if m := Explain(8, obs); m.At(4, 1) >= PinnedMass || m.At(5, 1) >= PinnedMass || m.At(6, 1) >= PinnedMass {
				oracle++
				break
			}
		}
	}
	t.Logf("an oracle spending tails 3-30 at steps 4, 5, 5 pins within 30 tails in %.1f%%", 100*float64(oracle)/float64(reps))
	if rate[30] < 0.5 || rate[60] < 0.9 {
		t.Errorf("pinned within one step in %.1f%% at 30 tails and %.1f%% at 60, want at least 50%% and 90%%", 100*rate[30], 100*rate[60])
	}
}
