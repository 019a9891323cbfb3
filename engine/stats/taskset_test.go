package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// experiments is how many simulated datasets a cell of a task-set simulation draws: enough
// under -short to catch a broken method, thousands without.
func experiments(short, full int) int {
	if testing.Short() {
		return short
	}
	return full
}

// taskRate draws one task's true pass rate from a set of tasks like a benchmark's: half
// nearly always passed, a fifth nearly never, the rest anywhere. Its mean is 0.635.
func taskRate(rng *rand.Rand) float64 {
	switch u := rng.Float64(); {
	case u < 0.5:
		return 0.9 + 0.1*rng.Float64()
	case u < 0.7:
		return 0.1 * rng.Float64()
	}
	return rng.Float64()
}

const taskRateMean = 0.635

func binomial(rng *rand.Rand, n int, p float64) int {
	x := 0
	for range n {
		if rng.Float64() < p {
			x++
		}
	}
	return x
}

// allowed is the largest miss rate a method at 5% may show in n experiments and still be
// within two standard errors of simulation noise.
func allowed(n int) float64 { return 0.05 + 2*math.Sqrt(0.05*0.95/float64(n)) }

// TestTaskMeanCoverage: over tasks of very different rates with one to five runs each, the
// task-clustered range holds both the mean rate of the population of tasks and the mean of
// the drawn tasks' own rates at least 95% of the time (within simulation error). A Wilson
// interval on the runs pooled, which counts runs as units, is logged beside it; with a share
// of failures left out (not at random) it misses badly, and the worst and best cases hold.
func TestTaskMeanCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	n := experiments(300, 2000)
	for _, c := range []struct {
		tasks, runs int
		leftOut     float64 // share of failed runs left out
	}{{5, 1, 0}, {5, 5, 0}, {10, 1, 0}, {10, 3, 0}, {20, 2, 0}, {50, 1, 0}, {50, 5, 0}, {20, 3, 0.5}} {
		missPop, missOwn, missPooled := 0, 0, 0
		width := 0.0
		for range n {
			counts := make([]Bounds, c.tasks)
			own, passed, runs := 0.0, 0, 0
			for i := range counts {
				p := taskRate(rng)
				own += p / float64(c.tasks)
				x, f, out := 0, 0, 0
				for range c.runs {
					switch {
					case rng.Float64() < p:
						x++
					case rng.Float64() < c.leftOut:
						out++
					default:
						f++
					}
				}
				counts[i] = RateBounds(x, f, out)
				passed += x
				runs += x + f
			}
			r := TaskMean(counts, 0.05)
			width += (r.Hi - r.Lo) / float64(n)
			if taskRateMean < r.Lo || taskRateMean > r.Hi {
				missPop++
			}
			if own < r.Lo || own > r.Hi {
				missOwn++
			}
			if lo, hi := Wilson(passed, runs); taskRateMean < lo || taskRateMean > hi {
				missPooled++
			}
		}
		mp, mo, mw := float64(missPop)/float64(n), float64(missOwn)/float64(n), float64(missPooled)/float64(n)
		t.Logf("%2d tasks x %d runs, %.0f%% of failures left out: misses the population mean %.1f%%, the tasks' own mean %.1f%% (mean width %.2f); pooled-runs Wilson misses the population mean %.1f%%",
			c.tasks, c.runs, 100*c.leftOut, 100*mp, 100*mo, width, 100*mw)
		if mp > allowed(n) || mo > allowed(n) {
			t.Errorf("%d tasks x %d runs: the task-clustered range missed %.1f%% / %.1f%% of datasets, above 5%% within simulation error", c.tasks, c.runs, 100*mp, 100*mo)
		}
	}
}

// TestTaskDiffCoverage: paired by task, the range of a's mean rate minus b's holds the true
// difference at least 95% of the time, over tasks whose differences vary in size and sign.
func TestTaskDiffCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 5))
	n := experiments(300, 2000)
	for _, c := range []struct {
		tasks, runs int
		shift       float64 // b's rate is a's minus a task's shift, drawn around this
	}{{5, 1, 0}, {10, 3, 0.1}, {20, 2, 0.2}, {50, 5, 0.1}, {50, 1, 0}} {
		miss, width, called := 0, 0.0, 0
		for range n {
			a, b := make([]Bounds, c.tasks), make([]Bounds, c.tasks)
			truth := 0.0
			for i := range a {
				pa := taskRate(rng)
				pb := math.Max(0, math.Min(1, pa-c.shift+0.3*(rng.Float64()-0.5)))
				truth += (pa - pb) / float64(c.tasks)
				xa, xb := binomial(rng, c.runs, pa), binomial(rng, c.runs, pb)
				a[i], b[i] = RateBounds(xa, c.runs-xa, 0), RateBounds(xb, c.runs-xb, 0)
			}
			d := TaskDiff(a, b, 0.05)
			width += (d.Hi - d.Lo) / float64(n)
			if truth < d.Lo || truth > d.Hi {
				miss++
			}
			if d.Lo > 0 {
				called++
			}
		}
		m := float64(miss) / float64(n)
		t.Logf("%2d tasks x %d runs, shift %.1f: misses the tasks' mean difference %.1f%% (mean width %.2f); a ahead called %.1f%%", c.tasks, c.runs, c.shift, 100*m, width, 100*float64(called)/float64(n))
		if m > allowed(n) {
			t.Errorf("%d tasks x %d runs shift %.1f: missed %.1f%%, above 5%% within simulation error", c.tasks, c.runs, c.shift, 100*m)
		}
	}
}

// stratRun is one simulated `--until-separated` over tasks: rounds of one pair on every
// task, in a fresh random order each round, looked at after every pair, stopped at the first
// separation or after rounds rounds. a's and b's rates per task come from rates; a share of
// a's and of b's failures end left out. With drop, a pair with a left-out run is dropped
// (as if left-out runs were missing at random) instead of counted both ways.
func stratRun(rng *rand.Rand, tasks, rounds int, rates func(i int) (pa, pb float64), outA, outB float64, drop bool) *StratTest {
	pa, pb := make([]float64, tasks), make([]float64, tasks)
	for i := range pa {
		pa[i], pb[i] = rates(i)
	}
	verdict := func(p, out float64) Verdict {
		switch {
		case rng.Float64() < p:
			return Passed
		case rng.Float64() < out:
			return LeftOut
		}
		return Failed
	}
	st := NewStratTest(0.05)
	order := make([]int, tasks)
	for i := range order {
		order[i] = i
	}
	for range rounds {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			a, b := verdict(pa[i], outA), verdict(pb[i], outB)
			if drop && (a == LeftOut || b == LeftOut) {
				continue
			}
			if st.Add(i, a, b); st.Separated != 0 {
				return st
			}
		}
	}
	return st
}

// TestStratTestTypeIError: with equal sides on every task (task rates anywhere from 0 to 1)
// and a look after every pair, the test separates in at most 5% of null datasets, also when
// one side's failures are left out because of how they went; dropping such pairs instead
// (missing at random) separates equal sides far more often.
func TestStratTestTypeIError(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 7))
	n := experiments(400, 4000)
	for _, c := range []struct {
		tasks, rounds int
		outA          float64
	}{{5, 40, 0}, {20, 10, 0}, {50, 5, 0}, {50, 20, 0}, {20, 10, 0.5}} {
		equal := func(int) (float64, float64) { p := taskRate(rng); return p, p }
		errs, dropErrs := 0, 0
		for range n {
			if stratRun(rng, c.tasks, c.rounds, equal, c.outA, 0, false).Separated != 0 {
				errs++
			}
			if c.outA > 0 && stratRun(rng, c.tasks, c.rounds, equal, c.outA, 0, true).Separated != 0 {
				dropErrs++
			}
		}
		e := float64(errs) / float64(n)
		if c.outA == 0 {
			t.Logf("%2d tasks x up to %2d pairs, equal sides, look after every pair: separated %.2f%% of %d datasets", c.tasks, c.rounds, 100*e, n)
		} else {
			d := float64(dropErrs) / float64(n)
			t.Logf("%2d tasks x up to %2d pairs, equal sides, %.0f%% of a's failures left out: separated %.2f%% counted both ways, %.1f%% if those pairs were dropped", c.tasks, c.rounds, 100*c.outA, 100*e, 100*d)
			if d < 0.1 {
				t.Errorf("dropping left-out pairs separated equal sides only %.1f%%: the experiment does not show the bias", 100*d)
			}
		}
		if e > 0.05 {
			t.Errorf("%d tasks x %d pairs: separated equal sides in %.2f%% of datasets, above 5%%", c.tasks, c.rounds, 100*e)
		}
	}
}

// TestStratTestPower: how often, and after how many pairs, the test separates sides that
// really differ: a steady difference on every task, and a large difference on a few tasks
// only (where the product over tasks carries the evidence).
func TestStratTestPower(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 9))
	n := experiments(200, 2000)
	for _, c := range []struct {
		name          string
		tasks, rounds int
		rates         func(i int) (float64, float64)
		want          float64
	}{
		{"a +0.2 on every task", 20, 10, func(int) (float64, float64) {
			p := 0.2 + 0.6*rng.Float64()
			return p + 0.1, p - 0.1
		}, 0.8},
		{"a +0.1 on every task", 20, 10, func(int) (float64, float64) {
			p := 0.2 + 0.6*rng.Float64()
			return p + 0.05, p - 0.05
		}, 0.1},
		{"a 0.9 vs 0.1 on 3 tasks, equal on 17", 20, 10, func(i int) (float64, float64) {
			if i < 3 {
				return 0.9, 0.1
			}
			p := taskRate(rng)
			return p, p
		}, 0.8},
		{"a +0.3 on 5 tasks, b +0.3 on 5 (mean difference 0)", 10, 20, func(i int) (float64, float64) {
			if i < 5 {
				return 0.65, 0.35
			}
			return 0.35, 0.65
		}, 0.1},
	} {
		sep, pairs := 0, 0
		for range n {
			if st := stratRun(rng, c.tasks, c.rounds, c.rates, 0, 0, false); st.Separated != 0 {
				sep++
				pairs += st.At
			}
		}
		power := float64(sep) / float64(n)
		mean := 0.0
		if sep > 0 {
			mean = float64(pairs) / float64(sep)
		}
		t.Logf("%s, %d tasks x up to %d pairs: separated %.1f%%, after %.0f pairs on average", c.name, c.tasks, c.rounds, 100*power, mean)
		if power < c.want {
			t.Errorf("%s: power %.1f%%, want at least %.0f%%", c.name, 100*power, 100*c.want)
		}
	}
}

// TestTaskEvidence: the tasks on which the sides really differ rank first, and a task with
// no difference shows an e-value of 20 at most 5% of the time (the per-task figures are not
// corrected for the number of tasks).
func TestTaskEvidence(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 11))
	n := experiments(200, 2000)
	const tasks, differ, rounds = 20, 3, 10
	topRight, nullHigh, nullTasks := 0, 0, 0
	for range n {
		st := NewStratTest(0.05)
		rates := make([]float64, tasks)
		for i := range rates {
			rates[i] = taskRate(rng)
		}
		for range rounds {
			for i := range tasks {
				pa, pb := rates[i], rates[i]
				if i < differ {
					pa, pb = 0.9, 0.1
				}
				v := func(p float64) Verdict {
					if rng.Float64() < p {
						return Passed
					}
					return Failed
				}
				st.Add(i, v(pa), v(pb))
			}
		}
		ev := st.Tasks()
		right := len(ev) == tasks
		for k, e := range ev {
			if k < differ && (e.Task >= differ || e.Favours != 1) {
				right = false
			}
			if e.Task >= differ {
				nullTasks++
				if e.EValue >= 20 {
					nullHigh++
				}
			}
		}
		if right {
			topRight++
		}
	}
	top, high := float64(topRight)/float64(n), float64(nullHigh)/float64(nullTasks)
	t.Logf("%d tasks, %d differing 0.9 vs 0.1, %d pairs each: the differing tasks ranked first %.1f%%; an equal task reached e-value 20 in %.2f%%", tasks, differ, rounds, 100*top, 100*high)
	if top < 0.8 || high > 0.05 {
		t.Errorf("ranked first %.1f%% (want at least 80%%), equal tasks at 20 %.2f%% (want at most 5%%)", 100*top, 100*high)
	}
}

// TestStratTestLeftOut: a left-out run counts against the side each bettor backs, so runs
// left out on a's side never make a look better: a's passes with b's runs all left out
// separate nothing, while the same passes against b's failures do.
func TestStratTestLeftOut(t *testing.T) {
	honest, plain := NewStratTest(0.05), NewStratTest(0.05)
	for i := range 30 {
		honest.Add(i%5, Passed, LeftOut)
		plain.Add(i%5, Passed, Failed)
	}
	if honest.Separated != 0 || honest.EValue() > 1 {
		t.Errorf("30 of a's passes against b's left-out runs: separated %d, e-value %.2f; want nothing", honest.Separated, honest.EValue())
	}
	if plain.Separated != 1 {
		t.Errorf("30 of a's passes against b's failures: separated %d, e-value %.2f; want a ahead", plain.Separated, plain.EValue())
	}
}

// TestTaskMeanEdges: no tasks, or a task with no verdict, says nothing rather than 0; left
// out runs widen the worst and best cases.
func TestTaskMeanEdges(t *testing.T) {
	if r := TaskMean(nil, 0.05); r.Lo != 0 || r.Hi != 1 || r.Worst != 0 || r.Best != 1 {
		t.Errorf("no tasks: %+v, want 0-1", r)
	}
	r := TaskMean([]Bounds{RateBounds(3, 0, 0), RateBounds(0, 0, 0)}, 0.05)
	if r.Worst != 0.5 || r.Best != 1 {
		t.Errorf("one task 3/3 and one with no runs: worst %.2f best %.2f, want 0.50 and 1", r.Worst, r.Best)
	}
	d := TaskDiff([]Bounds{RateBounds(2, 0, 1)}, []Bounds{RateBounds(1, 2, 0)}, 0.05)
	if !near(d.Worst, 2.0/3-1.0/3) || !near(d.Best, 1-1.0/3) || d.Lo > d.Worst || d.Hi < d.Best {
		t.Errorf("2/3 with one left out vs 1/3: %+v, want worst 0.33, best 0.67 inside the range", d)
	}
}
