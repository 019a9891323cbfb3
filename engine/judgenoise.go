package engine

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"tare/engine/journal"
	"tare/engine/stats"
)

// Spread is how far one page's scores range over its judgements. Only judgements with a
// score count; Errors says how many were left out.
type Spread struct {
	Scores   []int   `json:"scores"`
	Errors   int     `json:"errors,omitempty"`
	Min      int     `json:"min"`
	Median   float64 `json:"median"`
	Max      int     `json:"max"`
	Judgings int     `json:"judgements"`
	// Measured is false when fewer than 2 judgements gave a score: one score has no spread,
	// so the page's noise is unknown, not zero.
	Measured bool `json:"measured"`
}

// minMeasured is how many scores a page needs before its spread says anything.
const minMeasured = 2

// Spread is the page's scores, sorted, with their min, median and max.
func (p PageJudgements) Spread() Spread {
	s := Spread{Judgings: len(p.Judgements)}
	for _, j := range p.Judgements {
		if j.Score == nil {
			s.Errors++
			continue
		}
		s.Scores = append(s.Scores, *j.Score)
	}
	sort.Ints(s.Scores)
	s.Measured = len(s.Scores) >= minMeasured
	if n := len(s.Scores); n > 0 {
		s.Min, s.Max = s.Scores[0], s.Scores[n-1]
		s.Median = float64(s.Scores[n/2])
		if n%2 == 0 {
			s.Median = float64(s.Scores[n/2-1]+s.Scores[n/2]) / 2
		}
	}
	return s
}

// Straddles says whether threshold falls inside the scores' range: some judgements of the
// page pass it and some do not, so a verdict at that threshold is the judge's noise.
func (s Spread) Straddles(threshold float64) bool {
	return len(s.Scores) > 0 && float64(s.Min) < threshold && threshold <= float64(s.Max)
}

// NoisyPages are the pages whose score range holds threshold.
func (r JudgeReport) NoisyPages(threshold float64) []PageJudgements {
	var out []PageJudgements
	for _, p := range r.Pages {
		if p.Spread().Straddles(threshold) {
			out = append(out, p)
		}
	}
	return out
}

// Unmeasured are the pages fewer than 2 judgements could score: their spread is unknown,
// so no threshold can be said to stand clear of it.
func (r JudgeReport) Unmeasured() []PageJudgements {
	var out []PageJudgements
	for _, p := range r.Pages {
		if !p.Spread().Measured {
			out = append(out, p)
		}
	}
	return out
}

// UnmeasuredText names each page not measured enough, with how many of its judgements gave a
// score and how many failed ("site (1 of 6 scored, 5 failed)").
func UnmeasuredText(pages []PageJudgements) string {
	var names []string
	for _, p := range pages {
		s := p.Spread()
		names = append(names, fmt.Sprintf("%s (%d of %d scored, %d failed)", p.Dir, len(s.Scores), s.Judgings, s.Errors))
	}
	return strings.Join(names, ", ")
}

// DefaultTolerance is the flip rate judge-noise clears a threshold below: at most 1 fresh
// judgement in 20 landing on a page's other side (--tolerance).
const DefaultTolerance = 0.05

// flipLevel is the confidence of a flip rate's upper bound: one-sided 95%.
const flipLevel = 0.95

// Flip is how often a fresh judgement of one page lands on the other side of a threshold from
// the page's usual verdict, as its K scored judgements bound it: Other of Scored judgements
// were on the other side, Rate = Other/Scored, and Upper is the exact one-sided 95%
// Clopper-Pearson upper bound on the rate. The threshold is cleared at the page only when
// Upper is below the tolerance: 10 unanimous judgements bound the rate below 0.26, and it
// takes 59 to bound it below 0.05.
type Flip struct {
	Dir       string  `json:"dir"`
	Threshold float64 `json:"threshold"`
	Scored    int     `json:"scored"`
	// Passes is the page's usual verdict (most of its judgements); Other the judgements on
	// the other side. An even split passes with Other = half.
	Passes    bool    `json:"passes"`
	Other     int     `json:"other_side"`
	Rate      float64 `json:"rate"`
	Upper     float64 `json:"upper_95"`
	Tolerance float64 `json:"tolerance"`
	Cleared   bool    `json:"cleared"`
	// Unscored are the page's judgements that gave no score (a page can make its judge quote
	// a planted score line, and such an answer counts for none): the bound counts each as a
	// judgement on the other side, so no page is cleared by the judgements it spoiled.
	Unscored int `json:"unscored,omitempty"`
}

// FlipAt is the page's flip rate at threshold, cleared below tolerance.
func (s Spread) FlipAt(threshold, tolerance float64) Flip {
	f := Flip{Threshold: threshold, Scored: len(s.Scores), Tolerance: tolerance}
	pass := 0
	for _, n := range s.Scores {
		if float64(n) >= threshold {
			pass++
		}
	}
	f.Passes = 2*pass >= f.Scored
	f.Other = f.Scored - pass
	if !f.Passes {
		f.Other = pass
	}
	if f.Scored > 0 {
		f.Rate = float64(f.Other) / float64(f.Scored)
	}
	f.Unscored = s.Errors
	f.Upper = flipUpper(f.Other+f.Unscored, f.Scored+f.Unscored)
	f.Cleared = f.Upper < tolerance
	return f
}

// flipUpper is the one-sided upper bound at flipLevel: the two-sided interval's upper end at
// twice the error.
func flipUpper(x, n int) float64 {
	_, hi := stats.ClopperPearson(x, n, 2*(1-flipLevel))
	return hi
}

// Needed is how many judgements, the Other ones on the other side and every further one on
// the page's side, bound its flip rate below the tolerance; 0 if none up to a million do.
func (f Flip) Needed() int {
	other := f.Other + f.Unscored
	lo, hi := max(f.Scored+f.Unscored, 1), 1<<20
	if flipUpper(other, hi) >= f.Tolerance {
		return 0
	}
	for lo < hi {
		if m := (lo + hi) / 2; flipUpper(other, m) < f.Tolerance {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// Why says what the page's judgements show at the threshold, in a sentence.
func (f Flip) Why() string {
	if f.Unscored > 0 {
		s := fmt.Sprintf("%d of %d judgements on the other side and %d without a score, counted as on the other side: at most %.2f",
			f.Other, f.Scored, f.Unscored, f.Upper)
		if !f.Cleared {
			s += fmt.Sprintf("; %s, none more on the other side, needed for %g", neededText(f.Needed()), f.Tolerance)
		}
		return s
	}
	if f.Other == 0 {
		s := fmt.Sprintf("%d unanimous judgements bound the flip rate below %.2f", f.Scored, f.Upper)
		if !f.Cleared {
			s += fmt.Sprintf("; %s needed for %g", neededText(f.Needed()), f.Tolerance)
		}
		return s
	}
	s := fmt.Sprintf("%d of %d judgements on the other side: flip rate %.2f, at most %.2f", f.Other, f.Scored, f.Rate, f.Upper)
	if !f.Cleared {
		s += fmt.Sprintf("; %s, none more on the other side, needed for %g", neededText(f.Needed()), f.Tolerance)
	}
	return s
}

func neededText(n int) string {
	if n == 0 {
		return "more than a million are"
	}
	return fmt.Sprintf("%d are", n)
}

// tolerance is the report's, DefaultTolerance when none was given.
func (r JudgeReport) tolerance() float64 {
	if r.Tolerance > 0 {
		return r.Tolerance
	}
	return DefaultTolerance
}

// Flips are every page's flip rate at threshold, at the report's tolerance.
func (r JudgeReport) Flips(threshold float64) []Flip {
	var out []Flip
	for _, p := range r.Pages {
		f := p.Spread().FlipAt(threshold, r.tolerance())
		f.Dir = p.Dir
		out = append(out, f)
	}
	return out
}

// Uncleared are the pages where threshold is not cleared: a fresh judgement may land on the
// page's other side at the tolerance's rate or more, as far as its judgements can tell.
func (r JudgeReport) Uncleared(threshold float64) []PageJudgements {
	var out []PageJudgements
	for i, f := range r.Flips(threshold) {
		if !f.Cleared {
			out = append(out, r.Pages[i])
		}
	}
	return out
}

// Suggestion is the threshold on the rubric's scale with the fewest expected flips: the sum
// over pages of each page's observed flip rate, a fresh judging of every page's expected
// number of verdicts that change.
type Suggestion struct {
	Threshold float64 `json:"threshold"`
	Expected  float64 `json:"expected_flips"`
	// Margin is the distance from the threshold's edge (T - 0.5) to the nearest page's median.
	Margin float64 `json:"margin"`
}

// Suggest is the threshold with the fewest expected flips among those that separate the
// pages' usual verdicts (some pass, some fail: one that passes or fails every page flips
// nothing and decides nothing), then the farthest from every page's median, then the lowest.
// ok is false when no threshold on the scale separates the pages measured (2 scores or more).
func (r JudgeReport) Suggest() (sg Suggestion, ok bool) {
	var spreads []Spread
	for _, p := range r.Pages {
		if s := p.Spread(); s.Measured {
			spreads = append(spreads, s)
		}
	}
	for t := r.Scale[0] + 1; t <= r.Scale[1]; t++ {
		c := Suggestion{Threshold: float64(t), Margin: math.Inf(1)}
		var pass, fail bool
		for _, s := range spreads {
			f := s.FlipAt(c.Threshold, r.tolerance())
			c.Expected += f.Rate
			pass, fail = pass || f.Passes, fail || !f.Passes
			c.Margin = math.Min(c.Margin, math.Abs(s.Median-(c.Threshold-0.5)))
		}
		if !pass || !fail {
			continue
		}
		if !ok || c.Expected < sg.Expected-1e-9 || math.Abs(c.Expected-sg.Expected) <= 1e-9 && c.Margin > sg.Margin {
			sg, ok = c, true
		}
	}
	return sg, ok
}

// NoiseText is judge-noise's report: a row per page with its scores' min, median, max and
// spread, what was left out, the judge's usage, the suggested threshold, and with a threshold
// each page's flip rate at it and whether that clears it. Like JudgeText it is Printable: the page's file names and URLs and
// the judge's words are the agents' text.
func (r JudgeReport) NoiseText(threshold *float64) string {
	var b strings.Builder
	times := 0
	if len(r.Pages) > 0 {
		times = len(r.Pages[0].Judgements)
	}
	fmt.Fprintf(&b, "judge %s · rubric %s (scale %d-%d) · %d judgements per page, each in a fresh room\n", r.Judge, r.Rubric, r.Scale[0], r.Scale[1], times)
	if r.Seed != 0 {
		fmt.Fprintf(&b, "model script seed %d (--seed %d replays it)\n", r.Seed, r.Seed)
	}
	width := len("page")
	for _, p := range r.Pages {
		width = max(width, len(p.Dir))
	}
	fmt.Fprintf(&b, "%-*s  scored  min  median  max  spread  scores\n", width, "page")
	for _, p := range r.Pages {
		s := p.Spread()
		scored := fmt.Sprintf("%d/%d", len(s.Scores), s.Judgings)
		switch len(s.Scores) {
		case 0:
			fmt.Fprintf(&b, "%-*s  %-6s  -    -       -    -       no score: not measured\n", width, p.Dir, scored)
			continue
		case 1:
			fmt.Fprintf(&b, "%-*s  %-6s  -    -       -    -       %d: not measured (one score has no spread)\n", width, p.Dir, scored, s.Scores[0])
			continue
		}
		fmt.Fprintf(&b, "%-*s  %-6s  %-3d  %-6g  %-3d  %-6d  %s\n", width, p.Dir, scored, s.Min, s.Median, s.Max, s.Max-s.Min, joinInts(s.Scores))
	}
	for _, p := range r.Pages {
		b.WriteString(pageNotes(p))
	}
	fmt.Fprintf(&b, "the judge's room: %s\n", r.Reading)
	fmt.Fprintf(&b, "screenshots and judgements in %s\n", r.Out)
	b.WriteString(usageLine("judge", r.Usage, r.Simulated) + "\n")
	unmeasured := r.Unmeasured()
	if len(unmeasured) > 0 {
		fmt.Fprintf(&b, "not measured enough: %s; fewer than %d scores show no spread (the reasons the judgements failed are above)\n", UnmeasuredText(unmeasured), minMeasured)
	}
	if sg, ok := r.Suggest(); ok {
		fmt.Fprintf(&b, "suggested threshold %g: of those that separate the pages' usual verdicts, the fewest flips in these judgements (%.2f verdicts of %d pages, in-sample: a fresh judging is likely to flip more; clear it on fresh judgements, tare judge-noise again with --threshold), %.1f from the nearest page's median\n",
			sg.Threshold, sg.Expected, len(r.Pages), sg.Margin)
	} else if len(r.Pages) > 1 && len(unmeasured) < len(r.Pages) {
		b.WriteString("no threshold suggested: none on the scale separates the pages' usual verdicts (each passes or fails them all)\n")
	}
	if threshold != nil {
		noisy := r.NoisyPages(*threshold)
		if len(unmeasured) > 0 {
			// A page whose spread is unknown may straddle any threshold: none stands clear.
			fmt.Fprintf(&b, "threshold %g not settled: the score range of %s is unknown, so it may hold the threshold\n", *threshold, UnmeasuredText(unmeasured))
		}
		if len(noisy) > 0 {
			var names []string
			for _, p := range noisy {
				s := p.Spread()
				names = append(names, fmt.Sprintf("%s (%d-%d)", p.Dir, s.Min, s.Max))
			}
			fmt.Fprintf(&b, "threshold %g refused: it falls inside the score range of %s, where the same page both passes and fails, so a verdict there is the judge's noise, not the page\n",
				*threshold, strings.Join(names, ", "))
		}
		tol := r.tolerance()
		fmt.Fprintf(&b, "flip rate at threshold %g: how often a fresh judgement lands on the other side of it from the page's usual verdict, with its exact one-sided %g%% upper bound (Clopper-Pearson); cleared below %g (--tolerance)\n",
			*threshold, flipLevel*100, tol)
		var open []string
		for _, f := range r.Flips(*threshold) {
			word, verdict := "cleared", "passes"
			if !f.Cleared {
				word = "not cleared"
				open = append(open, fmt.Sprintf("%s (%d of %d on the other side, up to %.2f)", f.Dir, f.Other, f.Scored, f.Upper))
			}
			if !f.Passes {
				verdict = "fails"
			}
			if f.Scored == 0 {
				fmt.Fprintf(&b, "  %s  no score: not cleared\n", f.Dir)
				continue
			}
			fmt.Fprintf(&b, "  %s  usually %s: %s; %s\n", f.Dir, verdict, f.Why(), word)
		}
		if len(open) > 0 {
			fmt.Fprintf(&b, "threshold %g not cleared: a fresh judgement of %s may land on the other side %g of the time or more\n", *threshold, strings.Join(open, ", "), tol)
		} else if len(unmeasured) == 0 {
			fmt.Fprintf(&b, "threshold %g cleared: every page's flip rate at it is below %g (95%% upper bound), each page's usual verdict holds on a fresh judgement\n", *threshold, tol)
		}
	}
	return journal.Printable(b.String())
}

// JudgeText is tare judge's report of one judgement; its last line is "score N ..." so a
// calibrate's --check reads the score.
func (r JudgeReport) JudgeText(threshold float64) string {
	var b strings.Builder
	p := r.Pages[0]
	b.WriteString(pageNotes(p))
	fmt.Fprintf(&b, "the judge's room: %s\n", r.Reading)
	fmt.Fprintf(&b, "screenshot %s\n", p.Screenshot)
	b.WriteString(usageLine("judge", r.Usage, r.Simulated) + "\n")
	j := p.Judgements[0]
	if j.Score == nil {
		fmt.Fprintf(&b, "no score: %s\n", j.Error)
		return journal.Printable(b.String())
	}
	verdict := "passes"
	if float64(*j.Score) < threshold {
		verdict = "below"
	}
	fmt.Fprintf(&b, "score %d (threshold %g, scale %d-%d, %s): %s\n", *j.Score, threshold, r.Scale[0], r.Scale[1], verdict, j.Reason)
	return journal.Printable(b.String())
}

// pageNotes says what the judge of a page did not see: what the render room blocked and what
// the judge was not given, and why judgements failed.
func pageNotes(p PageJudgements) string {
	var b strings.Builder
	if len(p.Blocked) > 0 {
		fmt.Fprintf(&b, "%s: blocked (the render room has no network), so missing from the screenshot: %s\n", p.Dir, strings.Join(p.Blocked, ", "))
	}
	if len(p.Left) > 0 {
		fmt.Fprintf(&b, "%s: not given to the judge: %s\n", p.Dir, strings.Join(p.Left, ", "))
	}
	if len(p.Scrubbed) > 0 {
		fmt.Fprintf(&b, "%s: taken out of the judge's copy: %s\n", p.Dir, strings.Join(p.Scrubbed, ", "))
	}
	if len(p.Judgements) > 1 {
		for i, j := range p.Judgements {
			if j.Score == nil {
				fmt.Fprintf(&b, "%s: judgement %d left out: %s\n", p.Dir, i+1, j.Error)
			}
		}
	}
	return b.String()
}
