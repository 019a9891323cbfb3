package engine

import (
	"fmt"
	"sort"
	"strings"

	"tare/engine/journal"
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

// NoiseText is judge-noise's report: a row per page with its scores' min, median, max and
// spread, what was left out, the judge's usage, and with a threshold whether it stands clear
// of every page's range. Like JudgeText it is Printable: the page's file names and URLs and
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
		} else if len(unmeasured) == 0 {
			fmt.Fprintf(&b, "threshold %g stands clear of every page's score range: each page's verdict is the same on every judgement\n", *threshold)
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
	if len(p.Judgements) > 1 {
		for i, j := range p.Judgements {
			if j.Score == nil {
				fmt.Fprintf(&b, "%s: judgement %d left out: %s\n", p.Dir, i+1, j.Error)
			}
		}
	}
	return b.String()
}
