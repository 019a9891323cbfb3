package engine

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSpreadStraddles(t *testing.T) {
	score := func(n int) Judgement { return Judgement{Score: &n} }
	p := PageJudgements{Judgements: []Judgement{score(8), score(3), {Error: "no score"}, score(5), score(6)}}
	s := p.Spread()
	if s.Min != 3 || s.Max != 8 || s.Median != 5.5 || s.Errors != 1 || len(s.Scores) != 4 {
		t.Fatalf("spread %+v", s)
	}
	// Inside: some judgements pass and some fail. At the minimum every one passes.
	for th, want := range map[float64]bool{3: false, 3.5: true, 8: true, 8.5: false, 1: false} {
		if got := s.Straddles(th); got != want {
			t.Errorf("threshold %g: straddles %v, want %v", th, got, want)
		}
	}
}

// TestJudgeTextIsPrintable: the judge's words, the page's file names and what it asked for
// come from agents; a terminal escape among them is shown, not sent.
func TestJudgeTextIsPrintable(t *testing.T) {
	n := 6
	rep := JudgeReport{Scale: [2]int{1, 10}, Pages: []PageJudgements{{
		Dir: "/site", Blocked: []string{"https://x.test/\x1b]52;c;aGk=\x07"}, Left: []string{"\x1b[2Jnotes-claude.md (named for an agent)"},
		Judgements: []Judgement{{Score: &n, Reason: "fine\x1b[2J"}, {Score: &n, Reason: "fine"}},
	}}}
	for name, text := range map[string]string{"judge": rep.JudgeText(5), "judge-noise": rep.NoiseText(nil)} {
		if strings.ContainsAny(text, "\x1b\x07") || !strings.Contains(text, `\x1b`) {
			t.Errorf("%s: raw escapes in %q", name, text)
		}
	}
}

// pageOf is a page whose judgements gave these scores.
func pageOf(dir string, scores ...int) PageJudgements {
	p := PageJudgements{Dir: dir}
	for _, n := range scores {
		p.Judgements = append(p.Judgements, Judgement{Score: &n})
	}
	return p
}

// TestFlipAtBoundsTheRate: 10 unanimous judgements bound a page's flip rate below 0.26 and do
// not clear it at 0.05, for which 59 are needed; 59 clear it, 58 do not. One judgement in 10
// on the other side bounds it at 0.39.
func TestFlipAtBoundsTheRate(t *testing.T) {
	ten := pageOf("/site", 7, 7, 7, 7, 7, 7, 7, 7, 7, 7)
	f := ten.Spread().FlipAt(6, DefaultTolerance)
	if f.Other != 0 || !f.Passes || f.Cleared || math.Abs(f.Upper-(1-math.Pow(0.05, 0.1))) > 1e-6 || f.Needed() != 59 {
		t.Fatalf("10 unanimous: %+v, needed %d", f, f.Needed())
	}
	if why := f.Why(); why != "10 unanimous judgements bound the flip rate below 0.26; 59 are needed for 0.05" {
		t.Errorf("why: %q", why)
	}
	for n, cleared := range map[int]bool{58: false, 59: true} {
		p := PageJudgements{}
		for range n {
			s := 3
			p.Judgements = append(p.Judgements, Judgement{Score: &s})
		}
		if f := p.Spread().FlipAt(6, DefaultTolerance); f.Cleared != cleared || f.Passes {
			t.Errorf("%d unanimous fails: %+v, want cleared %v", n, f, cleared)
		}
	}
	one := pageOf("/site", 7, 7, 7, 5, 7, 7, 7, 7, 7, 7).Spread().FlipAt(6, DefaultTolerance)
	if one.Other != 1 || one.Rate != 0.1 || one.Cleared || math.Abs(one.Upper-0.3942) > 1e-3 || one.Needed() < 59 {
		t.Errorf("1 in 10: %+v needed %d", one, one.Needed())
	}
	rep := JudgeReport{Scale: [2]int{1, 10}, Pages: []PageJudgements{ten}}
	th := 6.0
	text := rep.NoiseText(&th)
	for _, want := range []string{"10 unanimous judgements bound the flip rate below 0.26; 59 are needed for 0.05; not cleared",
		"threshold 6 not cleared: a fresh judgement of /site (0 of 10 on the other side, up to 0.26)"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "stands clear") || strings.Contains(text, "threshold 6 cleared") {
		t.Errorf("10 judgements clear threshold 6:\n%s", text)
	}
	rep.Tolerance = 0.3
	if text := rep.NoiseText(&th); !strings.Contains(text, "threshold 6 cleared: every page's flip rate at it is below 0.3") {
		t.Errorf("at tolerance 0.3:\n%s", text)
	}
}

// TestSuggestFewestFlips: the suggested threshold separates the pages' verdicts with the
// fewest expected flips, the farthest from their medians on a tie; with nothing to separate
// none is suggested.
func TestSuggestFewestFlips(t *testing.T) {
	rep := JudgeReport{Scale: [2]int{1, 10}, Pages: []PageJudgements{
		pageOf("a", 3, 3, 4, 3), pageOf("b", 6, 7, 7, 8), pageOf("c", 8, 8, 9, 8)}}
	sg, ok := rep.Suggest()
	// 5 and 6 flip nothing and separate a from b and c, each 1.5 from the nearest median:
	// the lower is suggested. 8 would flip one of b's 4 judgements.
	if !ok || sg.Threshold != 5 || sg.Expected != 0 || sg.Margin != 1.5 {
		t.Fatalf("suggestion %+v", sg)
	}
	one := JudgeReport{Scale: [2]int{1, 10}, Pages: []PageJudgements{pageOf("a", 5, 6, 6, 7)}}
	// One page: every threshold passes or fails it whole, so none is suggested.
	if sg, ok := one.Suggest(); ok {
		t.Errorf("one page: suggested %+v", sg)
	}
}

// TestJudgeNoiseClearingRuleError: the clearing rule's error, by simulation. A page whose
// fresh judgements land on the other side of the threshold at a rate at or above the
// tolerance is cleared at most 5% of the time, over 20,000 simulated pages per rate and
// number of judgements (and exactly, summing the binomial); a page that never flips is
// cleared once there are enough judgements, so the rule is not one that refuses everything.
func TestJudgeNoiseClearingRuleError(t *testing.T) {
	const pages = 20000
	rng := rand.New(rand.NewPCG(1, 2))
	tol := DefaultTolerance
	cleared := func(q float64, k int) (sim, exact float64) {
		// The rule's decision for a page with x of k judgements on the other side, through the
		// report's own code: x scores of 5 and k-x of 7 at threshold 6.
		decide := make([]bool, k+1)
		for x := range decide {
			scores := make([]int, k)
			for i := range scores {
				scores[i] = 7
				if i < x {
					scores[i] = 5
				}
			}
			decide[x] = pageOf("p", scores...).Spread().FlipAt(6, tol).Cleared
			if decide[x] {
				exact += math.Exp(lchoose(k, x) + float64(x)*math.Log(q) + float64(k-x)*math.Log1p(-q))
			}
		}
		n := 0
		for range pages {
			x := 0
			for range k {
				if rng.Float64() < q {
					x++
				}
			}
			if decide[x] {
				n++
			}
		}
		return float64(n) / pages, exact
	}
	se := math.Sqrt(0.05 * 0.95 / pages)
	for _, q := range []float64{0.05, 0.07, 0.1, 0.2, 0.3, 0.45} {
		for _, k := range []int{3, 5, 10, 20, 59, 60, 100, 150} {
			sim, exact := cleared(q, k)
			old := math.Pow(1-q, float64(k)) + math.Pow(q, float64(k)) // the range rule: cleared when unanimous
			t.Logf("flip rate %.2f, %3d judgements: cleared %.4f (exact %.4f; the range rule %.4f)", q, k, sim, exact, old)
			if exact > 0.05 || sim > 0.05+3*se || math.Abs(sim-exact) > 4*math.Sqrt(exact*(1-exact)/pages)+1e-3 {
				t.Errorf("flip rate %.2f at %d judgements: cleared %.4f of %d pages (exact %.4f), want at most 0.05", q, k, sim, pages, exact)
			}
		}
	}
	if sim, _ := cleared(0, 59); sim != 1 {
		t.Errorf("a page that never flips, 59 judgements: cleared %.3f, want always", sim)
	}
	if sim, _ := cleared(0.002, 300); sim < 0.2 {
		t.Errorf("a page flipping 1 in 500, 300 judgements: cleared %.3f, want often", sim)
	}
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// A judgement that gave no score (the judge quoted a score line the page planted, or its
// answer had none) is no evidence that the page's verdict is stable: the flip bound counts it
// as a judgement on the other side, so 59 unanimous scores clear 0.05 and the same with one
// unscored judgement do not.
func TestFlipCountsUnscoredJudgementsAgainstClearing(t *testing.T) {
	scores := make([]int, 59)
	for i := range scores {
		scores[i] = 7
	}
	if f := (Spread{Scores: scores}).FlipAt(6, 0.05); !f.Cleared {
		t.Fatalf("59 unanimous judgements: %+v, want cleared", f)
	}
	f := (Spread{Scores: scores, Errors: 1}).FlipAt(6, 0.05)
	if f.Cleared || f.Unscored != 1 || !strings.Contains(f.Why(), "1 without a score, counted as on the other side") {
		t.Errorf("59 unanimous judgements and one unscored: %+v (%s), want not cleared and the unscored one named", f, f.Why())
	}
}
