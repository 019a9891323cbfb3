package cliff

import (
	"math"
	"sort"
)

// The three explanations of the tails the search weighs against each other, each with its
// prior probability. What the report calls a probability is a posterior under these priors:
// before any tail, a failed recording is as likely to have been lost at one step as to have
// declined step by step or to have failed by chance (the pass rate never changed). Within
// "one step" every step 1..Steps is equally likely to be the cliff; every rate is uniform on
// [0, 1], with the one-step and decline models' rates constrained to fall (the rate after the
// cliff, or at the last step, is below the rate before it, or at the start).
const (
	PriorNoChange = 1.0 / 3
	PriorOneStep  = 1.0 / 3
	PriorDecline  = 1.0 / 3
)

// Models is the posterior over the three explanations of the tails so far.
type Models struct {
	// NoChange, OneStep and Decline are the posterior probabilities (they sum to 1) that
	// the pass rate is the same at every step, falls at one step, or falls in a straight
	// line from the start to the last step.
	NoChange, OneStep, Decline float64
	// Where is where the step is, given that there is one.
	Where Dist
	// logOneStep and logDecline are the log probabilities of the tails under the two
	// models (for StepOdds); decline holds the decline's grid (linearLogs) for linearFit.
	logOneStep, logDecline float64
	decline                []float64
}

// Explain weighs the three explanations of the observations (step -> count) of a recording
// with steps tool calls.
func Explain(steps int, obs map[int]Count) Models {
	var totalX, totalN int
	for s, c := range obs {
		if s >= 0 && s <= steps {
			totalX += c.Passed
			totalN += c.Verdicts
		}
	}
	var m Models
	m.Where, m.logOneStep = posterior(steps, obs)
	m.decline = linearLogs(steps, obs)
	m.logDecline = logLinear(m.decline)
	logs := []float64{
		math.Log(PriorNoChange) + logMarginal(totalX, totalN),
		math.Log(PriorOneStep) + m.logOneStep,
		math.Log(PriorDecline) + m.logDecline,
	}
	peak := math.Max(logs[0], math.Max(logs[1], logs[2]))
	sum := 0.0
	for i := range logs {
		logs[i] = math.Exp(logs[i] - peak)
		sum += logs[i]
	}
	m.NoChange, m.OneStep, m.Decline = logs[0]/sum, logs[1]/sum, logs[2]/sum
	return m
}

// Best is the most probable explanation: NoCliff (no change), Pinned (one step; the caller
// decides whether it is pinned or not) or Gradual.
func (m Models) Best() Kind {
	switch {
	case m.OneStep >= m.NoChange && m.OneStep >= m.Decline:
		return Pinned
	case m.Decline >= m.NoChange:
		return Gradual
	}
	return NoCliff
}

// StepOdds is the Bayes factor of one step against a steady decline.
func (m Models) StepOdds() float64 { return math.Exp(m.logOneStep - m.logDecline) }

// At is the posterior probability that there is one step and it is within k steps of c.
func (m Models) At(c, k int) float64 { return m.OneStep * m.Where.Within(c, k) }

// logFall is the log of the probability that a rate drawn from the Beta(a1, b1) posterior is
// above one drawn from Beta(a2, b2), times 2: with both rates uniform a priori, the factor by
// which requiring the first to be the larger (a fall) changes the likelihood. The sum is
// exact for integer parameters (the Beta tail series); it is summed in logs, as its terms
// span many orders of magnitude.
func logFall(a1, b1, a2, b2 int) float64 {
	lbeta := func(a, b float64) float64 {
		x, _ := math.Lgamma(a)
		y, _ := math.Lgamma(b)
		z, _ := math.Lgamma(a + b)
		return x + y - z
	}
	terms := make([]float64, 0, a1)
	peak := math.Inf(-1)
	for i := range a1 {
		fi := float64(i)
		t := lbeta(float64(a2)+fi, float64(b1+b2)) - math.Log(float64(b1)+fi) - lbeta(1+fi, float64(b1)) - lbeta(float64(a2), float64(b2))
		terms = append(terms, t)
		peak = math.Max(peak, t)
	}
	sum := 0.0
	for _, t := range terms {
		sum += math.Exp(t - peak)
	}
	return math.Ln2 + math.Min(0, peak+math.Log(sum))
}

// linearGrid is how finely the steady decline's two rates are integrated out.
const linearGrid = 24

// linearPairs are the grid's (start, last step) rate pairs of a decline: the last below the
// start, both uniform over that triangle.
var linearPairs = func() [][2]float64 {
	var pairs [][2]float64
	for i := range linearGrid {
		for j := range i {
			pairs = append(pairs, [2]float64{(float64(i) + 0.5) / linearGrid, (float64(j) + 0.5) / linearGrid})
		}
	}
	return pairs
}()

// linearLogs is, for every pair of linearPairs, the log probability of the tails when the rate
// moves in a straight line from one to the other.
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
	logs := make([]float64, 0, len(linearPairs))
	for _, pq := range linearPairs {
		l := 0.0
		for _, m := range measured {
			p := pq[0] + (pq[1]-pq[0])*m.at
			if m.pass > 0 {
				l += m.pass * math.Log(p)
			}
			if m.fail > 0 {
				l += m.fail * math.Log1p(-p)
			}
		}
		logs = append(logs, l)
	}
	return logs
}

// logLinear is, from linearLogs, the log probability of the tails (one particular sequence, as
// logMarginal) under the steady decline, its two rates integrated out.
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

// nextStep is where the next round of tails tells the most: of the candidate steps, the one
// whose round is expected to shrink the uncertainty (entropy) of the whole posterior the
// most, over "no change", "steady decline" and "one step at c" for every c together. So tails
// go to bisect the step's place while that is what is uncertain, and to where the
// explanations predict different pass rates once the place is known but the step itself is
// not: beside the cliff, or back to the start when its rate is what a decline would bend.
func nextStep(cfg Config, obs map[int]Count, m Models, k int) int {
	var candidates []int
	if cfg.Steps <= 16 {
		for s := 0; s <= cfg.Steps; s++ {
			candidates = append(candidates, s)
		}
	} else {
		// The step that halves the place's mass and its neighbours, the most likely step
		// and two on each side, the ends, and a few steps evenly spread, where a decline
		// and a step disagree.
		split, likely := m.Where.Split(), m.Where.MostLikely()
		candidates = []int{split, split - 1, split + 1, likely, likely - 1, likely + 1, likely - 2, likely + 2, 0, cfg.Steps}
		for i := 1; i < 8; i++ {
			candidates = append(candidates, i*cfg.Steps/8)
		}
	}
	// The decline's grid weighed by the tails, once for every candidate.
	weights := make([]float64, len(m.decline))
	peak, sum := math.Inf(-1), 0.0
	for _, l := range m.decline {
		peak = math.Max(peak, l)
	}
	for j, l := range m.decline {
		weights[j] = math.Exp(l - peak)
		sum += weights[j]
	}
	for j := range weights {
		weights[j] /= sum
	}
	cache := map[[2]int][]float64{} // Beta-binomial predictives by (passes, verdicts)
	best, bestGain := candidates[0], math.Inf(-1)
	seen := map[int]bool{}
	for _, s := range candidates {
		if s < 0 || s > cfg.Steps || seen[s] {
			continue
		}
		seen[s] = true
		if g := jointGain(cfg, obs, m, weights, cache, s, k); g > bestGain+1e-12 {
			best, bestGain = s, g
		}
	}
	return best
}

// jointGain is the expected drop in the entropy of the posterior over every explanation from
// k tails at step s.
func jointGain(cfg Config, obs map[int]Count, m Models, weights []float64, cache map[[2]int][]float64, s, k int) float64 {
	var totalX, totalN int
	for step, c := range obs {
		if step >= 0 && step <= cfg.Steps {
			totalX += c.Passed
			totalN += c.Verdicts
		}
	}
	// prior[h] and pred[h][x]: h = 0 no change, 1 decline, 1+c one step at c.
	n := cfg.Steps + 2
	prior := make([]float64, n)
	pred := make([][]float64, n)
	beta := func(x, n int) []float64 {
		key := [2]int{x, n}
		if p, ok := cache[key]; ok {
			return p
		}
		p := make([]float64, k+1)
		for i := range p {
			p[i] = math.Exp(logMarginal(x+i, n+k) - logMarginal(x, n))
		}
		cache[key] = p
		return p
	}
	prior[0], pred[0] = m.NoChange, beta(totalX, totalN)
	prior[1], pred[1] = m.Decline, make([]float64, k+1)
	for j, q := range weights {
		if q < 1e-12 {
			continue
		}
		pq := linearPairs[j]
		p := pq[0] + (pq[1]-pq[0])*float64(s)/float64(cfg.Steps)
		for x := 0; x <= k; x++ {
			pred[1][x] += q * pow(p, x) * pow(1-p, k-x)
		}
	}
	var bx, bn int
	for c := 1; c <= cfg.Steps; c++ {
		prev := obs[c-1]
		bx += prev.Passed
		bn += prev.Verdicts
		gx, gn := totalX-bx, totalN-bn
		if s < c {
			gx, gn = bx, bn
		}
		prior[1+c], pred[1+c] = m.OneStep*m.Where[c], beta(gx, gn)
	}
	entropy := func(p []float64, norm float64) float64 {
		h := 0.0
		for _, q := range p {
			if q > 0 {
				q /= norm
				h -= q * math.Log(q)
			}
		}
		return h
	}
	expected := 0.0
	joint := make([]float64, n)
	for x := 0; x <= k; x++ {
		lc, _ := math.Lgamma(float64(k + 1))
		la, _ := math.Lgamma(float64(x + 1))
		lb, _ := math.Lgamma(float64(k - x + 1))
		choose := math.Exp(lc - la - lb)
		px := 0.0
		for h := range joint {
			joint[h] = prior[h] * pred[h][x]
			px += joint[h]
		}
		if px > 0 {
			expected += choose * px * entropy(joint, px)
		}
	}
	return entropy(prior, 1) - expected
}

// pow is p to the small power n.
func pow(p float64, n int) float64 {
	r := 1.0
	for range n {
		r *= p
	}
	return r
}
