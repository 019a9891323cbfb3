// Package cliff decides where to spend tails when looking for the step after which a recorded
// run became lost. It is pure: Decide reads what the tails so far have shown and says what to
// do next, so a run that crashed resumes by replaying its journal into the same observations.
//
// The model: a tail from step s (the workspace and session as they were after the recording's
// s-th tool call; step 0 is the untouched project) passes with some rate p(s). Three
// explanations of the tails compete (Explain, with the priors PriorNoChange, PriorOneStep and
// PriorDecline): the rate never changed (the recorded failure was chance), it falls at one
// step c (a cliff: tails from before it pass often, from c on rarely), or it falls in a
// straight line from the start to the last step. The search measures the start and the last
// step, then sends each round of tails to the step expected to shrink the uncertainty over
// all three (and over where the step is) the most: bisecting while the place is uncertain,
// then where the explanations predict different rates. It stops (pinned) when the posterior
// probability that the rate falls at one step within one step of the step it names is at
// least 0.95 and that step and the one before have been measured; when a steady decline is
// that probable; or when the budget is spent, answering with the most probable explanation
// and naming a step only when it is "one step". Pinned is that posterior, not a test of the
// two steps' own tails: their 95% intervals, printed in the report, may still overlap.
package cliff

import (
	"fmt"
	"math"

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

// MinBudget is the fewest tails a search is allowed: a round's worth at the start and at the
// last step.
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
	// Pinned: the cliff is at Decision.Hi: posterior 0.95 that the rate falls at one step
	// within one step of it (Near), Lo (= Hi-1) and Hi both measured.
	Pinned
	// ModelGap: even the untouched project rarely passes; there is no cliff.
	ModelGap
	// NoCliff: the budget is spent and "no change" is the most probable explanation: no
	// difference between the steps was detected (which is not a finding that there is none).
	NoCliff
	// NotPinned: the budget is spent and "one step" is the most probable explanation, but
	// not sure enough of the step to pin it; the most likely step is Hi.
	NotPinned
	// Gradual: a steady decline from the start to the last step is the most probable
	// explanation when the budget is spent, or has probability PinnedMass before.
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
	// Hi is the most likely step if the rate falls at one (for Pinned, the cliff) and Lo the
	// step before it, whose tails the report gives beside Hi's.
	Lo, Hi int
	// Probability is how likely it is, given every tail so far and the priors (Models),
	// that the rate falls at one step and that step is Hi; Near that it falls at one step
	// within one step of Hi. Both count "no change" and "steady decline" against the step.
	Probability, Near float64
	// Models is the posterior over the three explanations (no change, one step, steady
	// decline), and where the step is if there is one.
	Models Models
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
	start, end := obs[0], obs[cfg.Steps]
	if start.Verdicts > 0 {
		if _, hi := start.Interval(); hi < cfg.GapBelow {
			d.Kind = ModelGap
			d.Why = fmt.Sprintf("the start passes %d/%d (upper 95%% bound %.2f < --gap-below %.2f): the task is beyond the model", start.Passed, start.Verdicts, hi, cfg.GapBelow)
			return d
		}
	}
	m := Explain(cfg.Steps, obs)
	d.Models = m
	d.Hi = m.Where.MostLikely()
	d.Lo = d.Hi - 1
	d.Probability, d.Near = m.At(d.Hi, 0), m.At(d.Hi, 1)
	if cfg.Steps > 1 {
		d.StepOdds = m.StepOdds()
	}
	wantN := func(n, step int, why string) Decision {
		if left <= 0 {
			return conclude(cfg, d, obs)
		}
		d.Kind, d.Step, d.Want, d.Why = Running, step, min(n, left), why
		return d
	}
	want := func(step int, why string) Decision { return wantN(cfg.Tails, step, why) }
	// The ends first, one verdict each: enough to start bisecting, and more of either is
	// sent only when it is where the tails tell the most (a whole round at each end first
	// cost 7 points of pins at 30 tails on TestEightStepsStepFiveDecides).
	switch {
	case start.Verdicts == 0:
		return wantN(1, 0, "measuring the start")
	case end.Verdicts == 0:
		return wantN(1, cfg.Steps, "measuring the last step")
	}

	if m.Decline >= PinnedMass {
		d.Kind = Gradual
		d.Why = fmt.Sprintf("a steady decline from the start to the last step has probability %s", Prob(m.Decline))
		return d
	}
	// The report gives the pass rate just before and just after the cliff, so both steps
	// must have been measured before it is named: the posterior alone can be sure of a
	// stretch no tail has come from.
	if d.Near >= PinnedMass {
		for _, s := range []int{d.Lo, d.Hi} {
			if obs[s].Verdicts == 0 {
				return want(s, fmt.Sprintf("one step within one step of %d has probability %s; measuring step %d beside it", d.Hi, Prob(d.Near), s))
			}
		}
		d.Kind = Pinned
		d.Why = fmt.Sprintf("the rate falls at step %d with probability %s, within one step of it %s (%s wanted)", d.Hi, Prob(d.Probability), Prob(d.Near), Prob(PinnedMass))
		return d
	}
	why := fmt.Sprintf("one step %s (most likely at %d, %s within one step), steady decline %s, no change %s", Prob(m.OneStep), d.Hi, Prob(d.Near), Prob(m.Decline), Prob(m.NoChange))
	return want(nextStep(cfg, obs, m, cfg.Tails), why)
}

// conclude is the decision once the budget is spent: the most probable explanation is the
// answer, and a step is named only when it is "one step".
func conclude(cfg Config, d Decision, obs map[int]Count) Decision {
	m := d.Models
	models := fmt.Sprintf("one step %s, steady decline %s, no change %s", Prob(m.OneStep), Prob(m.Decline), Prob(m.NoChange))
	switch m.Best() {
	case Pinned:
		d.Kind = NotPinned
		d.Why = fmt.Sprintf("budget spent: %s; the step is %d with probability %s, within one step %s (%s wanted)", models, d.Hi, Prob(d.Probability), Prob(d.Near), Prob(PinnedMass))
	case Gradual:
		d.Kind = Gradual
		d.Why = "budget spent: " + models
	default:
		d.Kind = NoCliff
		start, end := obs[0], obs[cfg.Steps]
		_, lo, hi := stats.Diff(start.Passed, start.Verdicts, end.Passed, end.Verdicts)
		d.Why = fmt.Sprintf("budget spent: %s; the start passes %d/%d, the last step %d/%d (difference %+.2f to %+.2f)", models, start.Passed, start.Verdicts, end.Passed, end.Verdicts, lo, hi)
	}
	return d
}

// Prob writes a probability for a report: two decimals rounded down, so that what reads as
// 0.95 is at least 0.95, and "> 0.99" or "< 0.01" at the ends, never 1.00 or 0.00.
func Prob(p float64) string {
	switch {
	case p > 0.99:
		return "> 0.99"
	case p < 0.01:
		return "< 0.01"
	}
	return fmt.Sprintf("%.2f", math.Floor(p*100)/100)
}

// PinnedMass is how sure the search must be that the rate falls at one step within one step
// of the step it names (Decision.Near, against every explanation) before it stops there; a
// steady decline this probable ends the search too.
const PinnedMass = 0.95

// Dist is a distribution over the cliff's step, 1..Steps (index 0 unused).
type Dist []float64

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
		if c == 1 || prev.Verdicts > 0 {
			// The likelihood changes only where c passes a measured step.
			bx += prev.Passed
			bn += prev.Verdicts
			ax, an := totalX-bx, totalN-bn
			logp[c] = logMarginal(bx, bn) + logMarginal(ax, an) + logFall(bx+1, bn-bx+1, ax+1, an-ax+1)
		} else {
			logp[c] = logp[c-1]
		}
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
