package engine

import (
	"fmt"
	"strings"

	"tare/engine/journal"
	"tare/engine/stats"
)

// RepeatReport is one side's repeats of its task: FlipRate is how often two of its runs
// disagree, PassK the estimated chance that k runs all pass ("2", "3", "5"), where it has
// that many verdicts; each with its 95% interval (the exact interval of the side's rate,
// carried over), without which a pass^5 of 0.0013 from twelve runs reads as "never".
type RepeatReport struct {
	Key              string                `json:"key"`
	FlipRate         *float64              `json:"flip_rate,omitempty"`
	FlipRateInterval *[2]float64           `json:"flip_rate_interval,omitempty"`
	PassK            map[string]float64    `json:"pass_k"`
	PassKInterval    map[string][2]float64 `json:"pass_k_interval"`
	// Verdicts is how many runs the figures are from: pass^k needs k of them.
	Verdicts int `json:"verdicts"`
}

// passKs are the k of pass^k the report shows, where a side has that many verdicts.
var passKs = []int{2, 3, 5}

// repeatReport is a side's flip rate and pass^k, over what its rate counts.
func repeatReport(t journal.SideTally) RepeatReport {
	r := RepeatReport{Key: t.Side.Key, PassK: map[string]float64{}, PassKInterval: map[string][2]float64{}, Verdicts: t.Verdicts}
	if f, ok := stats.FlipRate(t.Passed, t.Verdicts); ok {
		lo, hi, _ := stats.FlipRateInterval(t.Passed, t.Verdicts)
		r.FlipRate, r.FlipRateInterval = &f, &[2]float64{lo, hi}
	}
	for _, k := range passKs {
		if p, ok := stats.PassK(t.Passed, t.Verdicts, k); ok {
			lo, hi, _ := stats.PassKInterval(t.Passed, t.Verdicts, k)
			r.PassK[fmt.Sprint(k)], r.PassKInterval[fmt.Sprint(k)] = p, [2]float64{lo, hi}
		}
	}
	return r
}

// repeatLine is a side's flip rate and pass^k, each with its interval, or what it needs:
// "flip rate 0.45 (95% 0.13-0.50) · pass^2 0.38 (95% 0.11-0.72) · pass^5 needs 5 verdicts (3)".
func repeatLine(r RepeatReport) string {
	parts := []string{"flip rate needs 2 verdicts"}
	if r.FlipRate != nil {
		parts[0] = fmt.Sprintf("flip rate %s (95%% %s-%s)", small(*r.FlipRate), small(r.FlipRateInterval[0]), small(r.FlipRateInterval[1]))
	}
	for _, k := range passKs {
		p, ok := r.PassK[fmt.Sprint(k)]
		if !ok {
			parts = append(parts, fmt.Sprintf("pass^%d needs %d verdicts (%d)", k, k, r.Verdicts))
			continue
		}
		in := r.PassKInterval[fmt.Sprint(k)]
		parts = append(parts, fmt.Sprintf("pass^%d %s (95%% %s-%s)", k, small(p), small(in[0]), small(in[1])))
	}
	return strings.Join(parts, " · ")
}

// small prints a probability with two decimals, and one below 0.005 as "<0.01": a 0.0013
// printed 0.00 reads as "never".
func small(p float64) string {
	if p > 0 && p < 0.005 {
		return "<0.01"
	}
	return fmt.Sprintf("%.2f", p)
}
