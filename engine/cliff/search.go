// Package cliff decides where to spend tails when looking for the step after which a recorded
// run became lost. It is pure: Decide reads what the tails so far have shown and says what to
// do next, so a run that crashed resumes by replaying its journal into the same observations.
//
// The model: a tail from step s (the workspace and session as they were after the recording's
// s-th tool call; step 0 is the untouched project) passes with some rate p(s). A cliff at step
// c is a tool call after which that rate falls: tails from before it pass often, tails from c
// on rarely. The search does not scan every step. It measures the start and the last step,
// then bisects on the pass rate: the boundary between the sampled steps that look like the
// start and those that look like the end is the most likely two-level split of everything seen
// so far, so a step misjudged on a few tails is corrected as soon as more tails disagree with
// it. The search stops (pinned) when the posterior puts 0.95 of the cliff's place within one
// step of the step it names, both that step and the one before have been measured, and one
// step explains the tails at least StepOdds times better than a steady decline from the start
// to the last step would. Pinned is that posterior, not a test of the two steps' own tails:
// their 95% intervals, printed in the report, may still overlap. Where a decline explains
// the tails better, the answer is "gradual decline", not a cliff.
package cliff

import (
	"fmt"
	"math"
	"sort"

	"tare/engine/stats"
)

// Count is what the tails from one step have shown.
type Count struct {
	// Tails is every tail started from the step, with or without a verdict: they all spend
	// budget.
	Tails int
	// Verdicts counts the tails that passed or failed; a tail with no verdict (quota wall,
	// killed, never started) tells nothing of the step and is left out of its rate.
	Verdicts int
	// Passed counts the verdicts that passed.
	Passed int
}

// Rate is the step's pass rate over its verdicts, 0 when it has none.
func (c Count) Rate() float64 {
	if c.Verdicts == 0 {
		return 0
	}
	return float64(c.Passed) / float64(c.Verdicts)
}

// Interval is the step's Wilson 95% interval.
func (c Count) Interval() (lo, hi float64) { return stats.Wilson(c.Passed, c.Verdicts) }

// Config is what a search is asked to do.
type Config struct {
	// Steps is the recording's last step: tails can start from 0 (the untouched project) to
	// Steps (after its last tool call).
	Steps int
	// Tails is how many tails a round starts from one step.
	Tails int
	// Budget is how many tails the search may start in all.
	Budget int
	// GapBelow: when the start's upper 95% bound is below it, the task is beyond the model
	// and there is no cliff to find.
	GapBelow float64
}

// MinBudget is the fewest tails a search can do anything with: one round at the start and
// one at the last step.
func (c Config) MinBudget() int { return 2 * c.Tails }

// Validate says what is wrong with a config, in terms of the command's flags.
func (c Config) Validate() error {
	switch {
	case c.Steps < 1:
		return fmt.Errorf("the recording has no tool calls: there is no step to look for a cliff at")
	case c.Tails < 1:
		return fmt.Errorf("--tails %d: give at least 1 tail per round", c.Tails)
	case c.Budget < c.MinBudget():
		return fmt.Errorf("--budget %d is less than the %d tails the start and the last step need (2 x --tails %d); raise --budget or lower --tails", c.Budget, c.MinBudget(), c.Tails)
	case c.GapBelow < 0 || c.GapBelow > 1 || math.IsNaN(c.GapBelow):
		return fmt.Errorf("--gap-below %g: give a pass rate between 0 and 1", c.GapBelow)
	}
	return nil
}

// Kind is where a search stands.
type Kind int

const (
	// Running: more tails are wanted (Decision.Step, Decision.Want).
	Running Kind = iota
	// Pinned: the cliff is at Decision.Hi: posterior 0.95 within one step of it (Near),
	// Lo (= Hi-1) and Hi both measured, and one step StepOdds times likelier than a steady
	// decline.
	Pinned
	// ModelGap: even the untouched project rarely passes; there is no cliff.
	ModelGap
	// NoCliff: tails from the last step pass as often as tails from the start: the recorded
	// failure was chance, not a step that lost the run.
	NoCliff
	// NotPinned: the budget is spent; the cliff lies between Lo and Hi, most likely at Hi.
	NotPinned
	// Gradual: the pass rate falls step by step, not at one step: a steady decline from the
	// start to the last step explains the tails at least GradualOdds times better than any
	// single step does.
	Gradual
)

// String names the kind as reports and the journal do.
func (k Kind) String() string {
	return [...]string{"running", "pinned", "model gap", "no cliff", "not pinned", "gradual decline"}[k]
}

// Decision is what Decide concluded.
type Decision struct {
	Kind Kind
	// Step and Want: while running, the step to start tails from and how many.
	Step, Want int
	// Lo and Hi: the boundary as it stands: the last step that looks like the start and the
	// first that looks like the end. For Pinned, the cliff is Hi.
	Lo, Hi int
	// Probability is how likely the cliff is at Hi, given every tail so far and that there
	// is one step where the rate falls; Near is how likely it is within one step of Hi.
	Probability, Near float64
	// StepOdds is how many times better one step explains the tails than a steady decline
	// from the start to the last step (a Bayes factor; 1 before anything tells them apart).
	StepOdds float64
	// Spent is how many tails the observations hold.
	Spent int
	// Why is one line for the report: why the search stopped, or what it is doing.
	Why string
}

// Decide reads the observations (step -> count) and says what to do next. It is a function of
// the observations alone, so the same journal always leads to the same decision.
func Decide(cfg Config, obs map[int]Count) Decision {
	spent := 0
	for _, c := range obs {
		spent += c.Tails
	}
	left := cfg.Budget - spent
	d := Decision{Lo: 0, Hi: cfg.Steps, Spent: spent, StepOdds: 1}
	// The decline's evidence is costly to integrate, so it is weighed only where a decision
	// turns on it: at a would-be pin and when the budget is spent.
	weigh := func() {}
	want := func(step int, why string) Decision {
		if left <= 0 {
			weigh()
			if d.StepOdds <= 1/GradualOdds {
				d.Kind, d.Why = Gradual, fmt.Sprintf("budget spent: a steady decline explains the tails %.0f times better than one step", 1/d.StepOdds)
				return d
			}
			d.Kind, d.Why = NotPinned, "budget spent: "+why
			return d
		}
		d.Kind, d.Step, d.Want, d.Why = Running, step, min(cfg.Tails, left), why
		return d
	}
	start, end := obs[0], obs[cfg.Steps]
	if start.Verdicts < cfg.Tails {
		return want(0, "measuring the start")
	}
	if _, hi := start.Interval(); hi < cfg.GapBelow {
		d.Kind = ModelGap
		d.Why = fmt.Sprintf("the start passes %d/%d (upper 95%% bound %.2f < --gap-below %.2f): the task is beyond the model", start.Passed, start.Verdicts, hi, cfg.GapBelow)
		return d
	}
	if end.Verdicts < cfg.Tails {
		return want(cfg.Steps, "measuring the last step")
	}
	if end.Rate() >= start.Rate() {
		// Not yet a fall: measure both ends again, alternately, until the last step falls
		// below the start or the budget is spent, which is the only way to say "no cliff"
		// without calling noise an answer.
		next := 0
		if end.Verdicts < start.Verdicts && start.Passed > 0 {
			next = cfg.Steps
		}
		// A start that has not passed once may be a model gap: only more of the start can
		// say so, so the end waits.
		if left <= 0 {
			d.Kind = NoCliff
			d.Why = fmt.Sprintf("tails from the last step pass %d/%d, from the start %d/%d: the recorded failure looks like chance", end.Passed, end.Verdicts, start.Passed, start.Verdicts)
			return d
		}
		return want(next, "the last step passes as often as the start; measuring both again")
	}
	post, logStep := posterior(cfg.Steps, obs)
	d.Hi = post.MostLikely()
	d.Lo = d.Hi - 1
	d.Probability = post.Within(d.Hi, 0)
	near := post.Within(d.Hi, 1)
	d.Near = near
	weighed := false
	var lin []float64 // linearLogs, once weighed
	weigh = func() {
		// With one step there is nothing between a step and a decline to tell apart.
		if !weighed && cfg.Steps > 1 {
			lin = linearLogs(cfg.Steps, obs)
			d.StepOdds = math.Exp(logStep - logLinear(lin))
		}
		weighed = true
	}
	// The report gives the pass rate just before and just after the cliff, so both steps
	// must have been measured before it is named: the posterior alone can be sure of a
	// stretch no tail has come from.
	for _, s := range []int{d.Lo, d.Hi} {
		if near >= PinnedMass && obs[s].Verdicts < cfg.Tails {
			lo, hi := post.Range(0.05)
			return want(s, fmt.Sprintf("the cliff lies between step %d and %d (90%%); measuring step %d beside the most likely %d", lo, hi, s, d.Hi))
		}
	}
	if near >= PinnedMass {
		weigh()
	}
	if d.StepOdds <= 1/GradualStopOdds {
		d.Kind = Gradual
		d.Why = fmt.Sprintf("a steady decline from the start to the last step explains the tails %.0f times better than any single step", 1/d.StepOdds)
		return d
	}
	if near >= PinnedMass && (cfg.Steps == 1 || d.StepOdds >= StepOdds) {
		d.Kind = Pinned
		d.Why = fmt.Sprintf("step %d is the cliff with probability %.2f, within one step %.2f", d.Hi, d.Probability, near)
		if cfg.Steps > 1 {
			d.Why += fmt.Sprintf("; odds %s for one step over a steady decline", odds(d.StepOdds))
		}
		return d
	}
	if near >= PinnedMass {
		// Sure of the step only if there is a step: a steady decline also puts the boundary
		// of "looks like the start" and "looks like the end" somewhere. Tails go where the
		// two explanations disagree most.
		s := checkStep(cfg, obs, d.Hi, linearFit(cfg.Steps, lin))
		return want(s, fmt.Sprintf("step %d would be the cliff (%.2f within one step), but a steady decline explains the tails about as well (odds %s for one step, %g:1 wanted); measuring step %d", d.Hi, near, odds(d.StepOdds), StepOdds, s))
	}
	lo, hi := post.Range(0.05)
	return want(bestStep(cfg, obs, post), fmt.Sprintf("the cliff lies between step %d and %d (90%%); most likely %d (%.2f)", lo, hi, d.Hi, d.Probability))
}

// bestStep picks where the next round tells the most about the cliff: of a few candidates
// (the step that halves the mass, its neighbours, the most likely cliff and the step before
// it, the start and the end), the one whose round of tails is expected to shrink the
// uncertainty (entropy) of the cliff's place the most. Halving is the usual answer; the
// anchors win when the two pass rates themselves are still too uncertain to tell a step's
// side, which plain bisection would not see.
func bestStep(cfg Config, obs map[int]Count, post Dist) int {
	split, likely := post.Split(), post.MostLikely()
	seen := map[int]bool{}
	best, bestGain := split, math.Inf(-1)
	for _, s := range []int{split, split - 1, split + 1, likely, likely - 1, 0, cfg.Steps} {
		if s < 0 || s > cfg.Steps || seen[s] {
			continue
		}
		seen[s] = true
		if g := expectedGain(cfg, obs, post, s); g > bestGain+1e-12 {
			best, bestGain = s, g
		}
	}
	return best
}

// expectedGain is the expected drop in the entropy of the cliff's place from one round of
// cfg.Tails tails at step s.
func expectedGain(cfg Config, obs map[int]Count, post Dist, s int) float64 {
	k := cfg.Tails
	var totalX, totalN int
	for step, c := range obs {
		if step >= 0 && step <= cfg.Steps {
			totalX += c.Passed
			totalN += c.Verdicts
		}
	}
	// For each candidate cliff c, the tails at s share the rate of the group s falls in:
	// before (s < c) or after; the predictive of x passes in k is Beta-binomial on that
	// group's counts.
	var bx, bn int // counts of steps < c, built up as c grows
	expected := 0.0
	joint := make([][]float64, k+1) // joint[x][c] = P(c) P(x | c)
	// The groups' counts change only where c passes a measured step, so the predictive is
	// computed once per distinct group.
	predictive := map[[2]int][]float64{}
	for x := range joint {
		joint[x] = make([]float64, len(post))
	}
	for c := 1; c <= cfg.Steps; c++ {
		prev := obs[c-1]
		bx += prev.Passed
		bn += prev.Verdicts
		gx, gn := totalX-bx, totalN-bn
		if s < c {
			gx, gn = bx, bn
		}
		key := [2]int{gx, gn}
		pred, ok := predictive[key]
		if !ok {
			pred = make([]float64, k+1)
			for x := range pred {
				pred[x] = math.Exp(logMarginal(gx+x, gn+k) - logMarginal(gx, gn))
			}
			predictive[key] = pred
		}
		for x := 0; x <= k; x++ {
			joint[x][c] = post[c] * pred[x]
		}
	}
	// The binomial coefficient is the same under every c, so it cancels within each x but
	// weighs the outcomes against each other.
	for x := 0; x <= k; x++ {
		lc, _ := math.Lgamma(float64(k + 1))
		la, _ := math.Lgamma(float64(x + 1))
		lb, _ := math.Lgamma(float64(k - x + 1))
		choose := math.Exp(lc - la - lb)
		px := 0.0
		for c := 1; c <= cfg.Steps; c++ {
			px += joint[x][c]
		}
		if px <= 0 {
			continue
		}
		h := 0.0
		for c := 1; c <= cfg.Steps; c++ {
			if q := joint[x][c] / px; q > 0 {
				h -= q * math.Log(q)
			}
		}
		expected += choose * px * h
	}
	return post.entropy() - expected
}

func (d Dist) entropy() float64 {
	h := 0.0
	for c := 1; c < len(d); c++ {
		if d[c] > 0 {
			h -= d[c] * math.Log(d[c])
		}
	}
	return h
}

// StepOdds is how many times better one step must explain the tails than a steady decline
// before a cliff is named. The Bayes factor of a step against the decline is, when the decline
// is the truth, a nonnegative martingale of mean 1, so by Ville's inequality it ever reaches
// 10, however often it is looked at, with probability at most 1/10: a decline is named a
// cliff rarely whatever the budget (TestSimulatedGradualDeclines measures it). GradualOdds is
// how many times better the decline must explain the tails before the budget's end reports a
// gradual decline instead of "not pinned".
// GradualStopOdds: a decline that explains them this many times better ends the search
// before the budget does.
const (
	StepOdds        = 10.0
	GradualOdds     = 3.0
	GradualStopOdds = 20.0
)

// odds writes a Bayes factor for reports: "12:1", or "1:4" when it favours the other side.
func odds(bf float64) string {
	if bf >= 1 {
		return fmt.Sprintf("%.3g:1", bf)
	}
	return fmt.Sprintf("1:%.3g", 1/bf)
}

// checkStep is where tails tell a cliff at c from a steady decline best: of c-1, c and the
// middles of the stretches on either side, the step whose pass rate the two explanations,
// each fitted to the tails so far, predict most differently.
func checkStep(cfg Config, obs map[int]Count, c int, lin func(int) float64) int {
	var bx, bn, ax, an int
	for s, n := range obs {
		if s < c {
			bx, bn = bx+n.Passed, bn+n.Verdicts
		} else {
			ax, an = ax+n.Passed, an+n.Verdicts
		}
	}
	before, after := float64(bx+1)/float64(bn+2), float64(ax+1)/float64(an+2)
	best, bestGap := c, -1.0
	for _, s := range []int{c - 1, c, (c - 1) / 2, (c + cfg.Steps + 1) / 2} {
		if s < 0 || s > cfg.Steps {
			continue
		}
		step := after
		if s < c {
			step = before
		}
		if gap := math.Abs(step - lin(s)); gap > bestGap+1e-9 {
			best, bestGap = s, gap
		}
	}
	return best
}

// linearGrid is how finely the steady decline's two rates are integrated out.
const linearGrid = 24

// linearLogs is, for every pair of grid rates (the rate at the start, at the last step), the
// log probability of the tails when the rate moves in a straight line from one to the other.
func linearLogs(steps int, obs map[int]Count) []float64 {
	type seen struct{ at, pass, fail float64 }
	var measured []seen
	for s, c := range obs {
		if s >= 0 && s <= steps && c.Verdicts > 0 {
			measured = append(measured, seen{float64(s) / float64(steps), float64(c.Passed), float64(c.Verdicts - c.Passed)})
		}
	}
	// In step order, so the sums (and so the decisions) do not depend on the map's order.
	sort.Slice(measured, func(i, j int) bool { return measured[i].at < measured[j].at })
	logs := make([]float64, 0, linearGrid*linearGrid)
	for i := range linearGrid {
		p0 := (float64(i) + 0.5) / linearGrid
		for j := range linearGrid {
			p1 := (float64(j) + 0.5) / linearGrid
			l := 0.0
			for _, m := range measured {
				p := p0 + (p1-p0)*m.at
				if m.pass > 0 {
					l += m.pass * math.Log(p)
				}
				if m.fail > 0 {
					l += m.fail * math.Log1p(-p)
				}
			}
			logs = append(logs, l)
		}
	}
	return logs
}

// logLinear is, from linearLogs, the log probability of the tails (one particular sequence, as logMarginal)
// when the pass rate falls (or rises) in a straight line from the start to the last step,
// both ends' rates uniform a priori and integrated out.
func logLinear(logs []float64) float64 {
	peak := math.Inf(-1)
	for _, l := range logs {
		peak = math.Max(peak, l)
	}
	sum := 0.0
	for _, l := range logs {
		sum += math.Exp(l - peak)
	}
	return peak + math.Log(sum/float64(len(logs)))
}

// linearFit is, from linearLogs, the steady decline's predicted pass rate at each step, averaged over its rates
// as the tails weigh them.
func linearFit(steps int, logs []float64) func(s int) float64 {
	peak := math.Inf(-1)
	for _, l := range logs {
		peak = math.Max(peak, l)
	}
	var w, m0, m1 float64
	for k, l := range logs {
		q := math.Exp(l - peak)
		w += q
		m0 += q * (float64(k/linearGrid) + 0.5) / linearGrid
		m1 += q * (float64(k%linearGrid) + 0.5) / linearGrid
	}
	m0, m1 = m0/w, m1/w
	return func(s int) float64 { return m0 + (m1-m0)*float64(s)/float64(steps) }
}

// PinnedMass is how sure the search must be that the cliff lies within one step of the step
// it names before it stops.
const PinnedMass = 0.95

// Dist is a distribution over the cliff's step, 1..Steps (index 0 unused).
type Dist []float64

// Posterior is where the cliff may be given the observations: for each candidate step c, the
// likelihood of every tail so far when steps before c share one unknown pass rate and steps
// from c on another (each rate uniform a priori and integrated out), with every c equally
// likely beforehand. A step with no tails adds nothing, so the mass spreads evenly over the
// stretches not yet measured, which is what sends the next tails into them.
func Posterior(steps int, obs map[int]Count) Dist {
	d, _ := posterior(steps, obs)
	return d
}

// posterior is Posterior and the log probability of the tails under the one-step model (every
// step equally likely to be the cliff), which the steady decline is weighed against.
func posterior(steps int, obs map[int]Count) (Dist, float64) {
	var totalX, totalN int
	for s, c := range obs {
		if s >= 0 && s <= steps {
			totalX += c.Passed
			totalN += c.Verdicts
		}
	}
	logp := make([]float64, steps+1)
	peak := math.Inf(-1)
	var bx, bn int
	for c := 1; c <= steps; c++ {
		prev := obs[c-1]
		bx += prev.Passed
		bn += prev.Verdicts
		logp[c] = logMarginal(bx, bn) + logMarginal(totalX-bx, totalN-bn)
		peak = math.Max(peak, logp[c])
	}
	d := make(Dist, steps+1)
	sum := 0.0
	for c := 1; c <= steps; c++ {
		d[c] = math.Exp(logp[c] - peak)
		sum += d[c]
	}
	for c := 1; c <= steps; c++ {
		d[c] /= sum
	}
	return d, peak + math.Log(sum/float64(steps))
}

// logMarginal is the log probability of one particular sequence of x passes in n tails at a
// pass rate uniform on [0, 1] (the Beta-binomial with a flat prior).
func logMarginal(x, n int) float64 {
	a, _ := math.Lgamma(float64(x + 1))
	b, _ := math.Lgamma(float64(n - x + 1))
	c, _ := math.Lgamma(float64(n + 2))
	return a + b - c
}

// MostLikely is the step with the most mass (the lowest on a tie).
func (d Dist) MostLikely() int {
	best := 1
	for c := 2; c < len(d); c++ {
		if d[c] > d[best] {
			best = c
		}
	}
	return best
}

// Within is the mass within k steps of c.
func (d Dist) Within(c, k int) float64 {
	m := 0.0
	for i := max(1, c-k); i <= min(len(d)-1, c+k); i++ {
		m += d[i]
	}
	return m
}

// Split is the step s that best halves the mass: P(cliff <= s) closest to one half. A tail
// from s fails like the end when the cliff is at or before s and passes like the start when
// it is after, so its verdict is worth the most there.
func (d Dist) Split() int {
	best, bestGap, acc := 0, 2.0, 0.0
	for s := 0; s < len(d); s++ {
		acc += d[s]
		if gap := math.Abs(acc - 0.5); gap < bestGap {
			best, bestGap = s, gap
		}
	}
	return best
}

// Range is the central interval that leaves out at most tail of the mass on each side.
func (d Dist) Range(tail float64) (lo, hi int) {
	lo, hi = 1, len(d)-1
	acc := 0.0
	for c := 1; c < len(d); c++ {
		if acc += d[c]; acc > tail {
			lo = c
			break
		}
	}
	acc = 0
	for c := len(d) - 1; c >= 1; c-- {
		if acc += d[c]; acc > tail {
			hi = c
			break
		}
	}
	return lo, hi
}
