package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"tare/engine/journal"
	"tare/engine/run"
	"tare/engine/stats"
)

// separateAlpha is the error allowed over a whole --until-separated sequence: 95%.
const separateAlpha = 0.05

// separateMethod names the test in the report.
const separateMethod = "exact sequential sign test on the discordant pairs (sequential McNemar), its boundary calibrated to --max-runs"

// separateKey is the recipe's key for a calibrate run's --until-separated settings.
const separateKey = "until_separated"

// separateOf is a calibrate run's --until-separated settings from its recipe (nil: the run
// is not one).
func separateOf(rec *run.Recipe) (*separateSettings, error) {
	var set separateSettings
	ok, err := rec.DecodeSettings(separateKey, &set)
	if !ok {
		return nil, err
	}
	return &set, nil
}

// separateSettings are a calibrate run's --until-separated settings, kept in the recipe so
// tare resume continues the same sequence.
type separateSettings struct {
	// MaxRuns is the most runs started per side.
	MaxRuns int `json:"max_runs"`
	// Detect is the difference of pass rates the operator wants to be able to tell apart
	// (--detect; 0: none named), for the report's run count.
	Detect float64 `json:"detect,omitempty"`
}

// Outcomes of one run in a side's sequence.
const (
	runPassed    = 1
	runFailed    = 0
	runNoVerdict = -1
)

// separateBoundary is the test's boundary for a cap of maxRuns runs per side, so at most
// maxRuns pairs. A cap beyond what the boundary can be calibrated to (refused when the run
// is made) is calibrated to the largest: the test then never separates beyond it, which
// keeps its error.
func separateBoundary(maxRuns int) *stats.SignBoundary {
	sb, err := stats.NewSignBoundary(min(max(maxRuns, 1), stats.MaxSignPairs), separateAlpha)
	if err != nil {
		panic(err) // the cap is clamped to the range NewSignBoundary takes
	}
	return sb
}

// impute is a run's outcome with no verdict taken as pass (1) or fail (0).
func impute(x, asIf int) int {
	if x == runNoVerdict {
		return asIf
	}
	return x
}

// decision is where the test stands on a sequence of pairs.
type decision struct {
	// Stop is the pair (1-based) after which the sides are separated, 0 if they are not.
	Stop int
	// Ahead is +1 when a is ahead, -1 when b is.
	Ahead int
}

// decide replays the pairs (run k of a with run k of b, both in run order) and returns the
// first pair after which the test separates the sides. A run with no verdict is counted
// both ways: the sides are separated with a ahead only when they are even with every one of
// a's runs without a verdict failed and every one of b's passed (the worst case for a, and
// the test is monotone, so then under every filling of them), and with b ahead only in the
// mirror case (Horowitz and Manski's worst and best case). Without such runs the two cases
// are the pairs themselves. A stop decided at pair k stays decided: pairs after it (runs that
// were in flight) are reported but never change it.
func decide(sb *stats.SignBoundary, a, b []int) decision {
	worst, best := stats.NewSignWalk(sb), stats.NewSignWalk(sb)
	for k := range min(len(a), len(b)) {
		worst.Add(impute(a[k], runFailed), impute(b[k], runPassed))
		best.Add(impute(a[k], runPassed), impute(b[k], runFailed))
		switch {
		case worst.Crossed > 0:
			return decision{Stop: k + 1, Ahead: 1}
		case best.Crossed < 0:
			return decision{Stop: k + 1, Ahead: -1}
		}
	}
	return decision{}
}

// diffInterval is the confidence sequence for pa - pb over the first n pairs: with runs
// without a verdict, from its lower end with each counted the worst way for a to its upper
// end with each counted the best way.
func diffInterval(a, b []int, n int) (lo, hi float64) {
	worst, best := stats.NewConfSeq(separateAlpha, -1, 1), stats.NewConfSeq(separateAlpha, -1, 1)
	for k := range n {
		worst.Add(float64(impute(a[k], runFailed) - impute(b[k], runPassed)))
		best.Add(float64(impute(a[k], runPassed) - impute(b[k], runFailed)))
	}
	return hull(worst, best, slices.Contains(a[:n], runNoVerdict) || slices.Contains(b[:n], runNoVerdict))
}

// hull is the range from the lower of two confidence sequences' lower ends to the higher of
// their upper ends; when the two are the same sequence (no run left out), one's range.
func hull(low, high *stats.ConfSeq, differ bool) (lo, hi float64) {
	lo, hi = low.Interval()
	if !differ {
		return lo, hi
	}
	l, h := high.Interval()
	return math.Min(lo, l), math.Max(hi, h)
}

// sideInterval is the confidence sequence for a side's pass rate over its runs in run
// order: with runs without a verdict, from its lower end with each failed to its upper end
// with each passed.
func sideInterval(outcomes []int) (lo, hi float64) {
	fail, pass := stats.NewConfSeq(separateAlpha, 0, 1), stats.NewConfSeq(separateAlpha, 0, 1)
	for _, x := range outcomes {
		fail.Add(float64(impute(x, runFailed)))
		pass.Add(float64(impute(x, runPassed)))
	}
	return hull(fail, pass, slices.Contains(outcomes, runNoVerdict))
}

// sideSequence is a side's runs of an --until-separated calibrate in run order, up to the
// first that has not finished: their outcomes and ids, and whether every run up to max
// finished.
func sideSequence(st *journal.RunState, key string, maxRuns int) (outcomes []int, ids []string, complete bool) {
	for i := range maxRuns {
		id := fmt.Sprintf("%s-%d", key, i)
		t := st.Tails[id]
		if t == nil {
			return outcomes, ids, false
		}
		switch a, ok := t.Counted(); {
		case ok && a.Status == journal.StatusPassed:
			outcomes = append(outcomes, runPassed)
		case ok:
			outcomes = append(outcomes, runFailed)
		case t.Status == journal.StatusNoVerdict:
			outcomes = append(outcomes, runNoVerdict)
		default:
			return outcomes, ids, false
		}
		ids = append(ids, id)
	}
	return outcomes, ids, true
}

// Separation is how an --until-separated calibrate stopped, in report.json.
type Separation struct {
	Method  string  `json:"method"`
	Alpha   float64 `json:"alpha"`
	MaxRuns int     `json:"max_runs"`
	// Boundary is the test's boundary, √K times this, K the discordant pairs; Error the
	// exact chance that equal sides are separated within MaxRuns pairs, at the least
	// favourable common rate (1/2): at most Alpha.
	Boundary float64 `json:"boundary_z"`
	Error    float64 `json:"error_at_cap"`
	// Stopped is "separated", "max reached" or "interrupted" (runs were left to start: tare
	// resume continues the sequence).
	Stopped string `json:"stopped"`
	// Ahead is the side ahead when separated ("a" or "b").
	Ahead string `json:"ahead,omitempty"`
	// Pairs is the pairs the decision was taken on: the stopping pair when separated.
	Pairs int `json:"pairs"`
	// Paired lists each pair's tails, a's then b's, in order.
	Paired [][2]string `json:"paired"`
	// Lo and Hi are the 95% confidence sequence's range for a's pass rate minus b's over the
	// pairs (anytime-valid, so valid at the stop), counting the runs without a verdict the
	// worst and the best way. No point estimate is given: the difference at a stop the
	// test chose because it was large is biased away from zero.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// SideLo and SideHi are each side's pass rate's 95% confidence sequence over its runs in
	// run order, a's then b's (anytime-valid, the runs without a verdict counted both ways).
	SideLo []float64 `json:"side_lo"`
	SideHi []float64 `json:"side_hi"`
	// After are runs with a verdict that are not in the decision: in flight at the stop (with
	// --jobs above 1), or a side's runs beyond the other's.
	After []string `json:"after_stop"`
	// LeftOut are the runs with no verdict; LeftOutInDecision those among the pairs the
	// decision was taken on, each counted as a fail and as a pass of its side.
	LeftOut           []string `json:"left_out"`
	LeftOutInDecision int      `json:"left_out_in_decision"`
	// Detect is the run count for the difference named with --detect.
	Detect *DetectReport `json:"detect,omitempty"`
	// Sides are each side's repeats of its one task: flip rate and pass^k over its verdicts.
	Sides []RepeatReport `json:"sides"`
}

// DetectReport is what the test can tell apart: the runs per side it needs for 80% power at
// the difference named with --detect, from detectTable, and this run's power there.
type DetectReport struct {
	// Difference is --detect; Row the table's difference used (the largest at or below it).
	Difference float64 `json:"difference"`
	Row        float64 `json:"row"`
	// MaxRuns is the --max-runs that gives at least 80% power at Row.
	MaxRuns int `json:"max_runs_for_80_percent"`
	// Power is the exact chance this run's --max-runs separates sides Difference apart
	// (rates either side of 1/2, the hardest, every run with a verdict).
	Power float64 `json:"power_at_max_runs"`
}

// detectRow is one row of detectTable.
type detectRow struct {
	diff    float64
	maxRuns int
}

// detectTable is the --max-runs at which the test separates sides whose pass rates differ
// by diff with at least 80% power: rates either side of 1/2 (0.55 and 0.45 for 0.1), where
// discordant pairs are most common and a difference is hardest to see, every run with a
// verdict. Computed exactly (stats.SignBoundary.Power) and rounded up to a ten;
// TestDetectTableByOwnSimulation runs the command's own decision on each row.
var detectTable = []detectRow{
	{0.05, 2450}, {0.10, 580}, {0.15, 250}, {0.20, 140}, {0.25, 90}, {0.30, 60}, {0.40, 30}, {0.50, 20},
}

// detectPower is the power detectTable promises.
const detectPower = 0.8

// detectFor is the table's row for a difference: the largest at or below it, which needs at
// least as many runs; ok is false below the first row.
func detectFor(diff float64) (detectRow, bool) {
	var row detectRow
	for _, r := range detectTable {
		if r.diff <= diff+1e-9 {
			row = r
		}
	}
	return row, row.maxRuns > 0
}

// separation computes how the run stands: from the journal alone, so a resumed run and its
// report take the same decision the first process would have.
func separation(rec *run.Recipe, set separateSettings, st *journal.RunState) Separation {
	sb := separateBoundary(set.MaxRuns)
	sep := Separation{Method: separateMethod, Alpha: separateAlpha, MaxRuns: set.MaxRuns, Boundary: sb.Z, Error: sb.Error,
		Paired: [][2]string{}, After: []string{}, LeftOut: []string{}}
	a, aIDs, aDone := sideSequence(st, rec.Sides[0].Key, set.MaxRuns)
	b, bIDs, bDone := sideSequence(st, rec.Sides[1].Key, set.MaxRuns)
	pairs := min(len(a), len(b))
	d := decide(sb, a, b)
	switch {
	case d.Stop > 0:
		sep.Stopped, sep.Pairs = "separated", d.Stop
		sep.Ahead = map[int]string{1: rec.Sides[0].Key, -1: rec.Sides[1].Key}[d.Ahead]
	case aDone && bDone:
		sep.Stopped, sep.Pairs = "max reached", pairs
	default:
		sep.Stopped, sep.Pairs = "interrupted", pairs
	}
	sep.Lo, sep.Hi = diffInterval(a, b, sep.Pairs)
	for _, side := range [][]int{a, b} {
		lo, hi := sideInterval(side)
		sep.SideLo, sep.SideHi = append(sep.SideLo, lo), append(sep.SideHi, hi)
	}
	for k := range sep.Pairs {
		sep.Paired = append(sep.Paired, [2]string{aIDs[k], bIDs[k]})
	}
	for _, side := range []struct {
		outcomes []int
		ids      []string
	}{{a, aIDs}, {b, bIDs}} {
		for i, x := range side.outcomes {
			switch {
			case x == runNoVerdict:
				sep.LeftOut = append(sep.LeftOut, side.ids[i])
				if i < sep.Pairs {
					sep.LeftOutInDecision++
				}
			case i >= sep.Pairs:
				sep.After = append(sep.After, side.ids[i])
			}
		}
	}
	if diff := set.Detect; diff > 0 {
		if row, ok := detectFor(diff); ok {
			p := math.Min(1, 0.5+diff/2)
			sep.Detect = &DetectReport{Difference: diff, Row: row.diff, MaxRuns: row.maxRuns, Power: sb.Power(p, 1-p)}
		}
	}
	for _, t := range st.Tally() {
		sep.Sides = append(sep.Sides, repeatReport(t))
	}
	return sep
}

// separationStarts says whether an --until-separated run starts spec: not once the journal
// shows the sides separated. A tail the journal already holds (one that was running when
// tare was killed) is still run, so every started run ends on the record.
func separationStarts(r *run.Run, rec *run.Recipe, set separateSettings, spec tailSpec) bool {
	st := r.Snapshot()
	if st.Tails[spec.ID] != nil {
		return true
	}
	// The decision alone, as separation takes it: the intervals are for the report.
	a, _, _ := sideSequence(st, rec.Sides[0].Key, set.MaxRuns)
	b, _, _ := sideSequence(st, rec.Sides[1].Key, set.MaxRuns)
	return decide(separateBoundary(set.MaxRuns), a, b).Stop == 0
}

// separationText is the report's lines on the sequence: the test and its error at the cap,
// when and why it stopped, the confidence sequences (the interval first, and no point
// estimate the stop biases), the runs left out and how the decision counted them, the run
// count for --detect, and per side flip rate and pass^k.
func separationText(rec *run.Recipe, set separateSettings, st *journal.RunState) string {
	sep := separation(rec, set, st)
	a, b := rec.Sides[0].Key, rec.Sides[1].Key
	var w strings.Builder
	fmt.Fprintf(&w, "\n  until separated  %s\n", sep.Method)
	fmt.Fprintf(&w, "                   error at most 5%% within %d runs per side: exactly %.2f%% at equal rates of 0.5, less at any other\n", sep.MaxRuns, 100*sep.Error)
	w.WriteString("                   pairs: run k of each side, in run order; a run with no verdict is counted as a fail and as a pass of its side\n")
	lo := ""
	if sep.LeftOutInDecision > 0 {
		lo = fmt.Sprintf(", with the %d %s left out counted the worst and the best way alike", sep.LeftOutInDecision, runsWord(sep.LeftOutInDecision))
	}
	switch sep.Stopped {
	case "separated":
		fmt.Fprintf(&w, "  stopped          separated after %d pairs: %s ahead%s (at most %d runs per side)\n", sep.Pairs, sep.Ahead, lo, sep.MaxRuns)
	case "max reached":
		fmt.Fprintf(&w, "  stopped          max reached: %d runs per side, %d pairs, not separated%s\n", sep.MaxRuns, sep.Pairs, notBoth(sep.LeftOutInDecision))
	default:
		fmt.Fprintf(&w, "  stopped          interrupted after %d pairs, not separated%s (tare resume continues the sequence)\n", sep.Pairs, notBoth(sep.LeftOutInDecision))
	}
	fmt.Fprintf(&w, "  difference %s-%s  %+.2f to %+.2f: 95%% confidence sequence over the %d pairs (by betting, Waudby-Smith & Ramdas; anytime-valid)\n", a, b, sep.Lo, sep.Hi, sep.Pairs)
	w.WriteString("                   no point estimate: the difference at a stop the test chose is biased away from 0\n")
	if sep.Stopped == "separated" && sep.Lo < 0 && sep.Hi > 0 {
		w.WriteString("                   it holds 0 though the test separated: the test spends its 5% within --max-runs, the sequence over any number of runs\n")
	}
	for i, key := range []string{a, b} {
		fmt.Fprintf(&w, "  pass rate %-4s   %.2f to %.2f: 95%% confidence sequence over its runs (anytime-valid; the table's intervals are fixed-n)\n", key, sep.SideLo[i], sep.SideHi[i])
	}
	if len(sep.After) > 0 {
		fmt.Fprintf(&w, "  after the stop   %s: finished and counted in the rates above, not in the decision (taken at pair %d)\n", strings.Join(sep.After, " "), sep.Pairs)
	}
	if len(sep.LeftOut) > 0 {
		fmt.Fprintf(&w, "  left out         %s: no verdict; the decision counts each as a fail and as a pass of its side and separates only if both do\n", strings.Join(sep.LeftOut, " "))
	}
	if d := sep.Detect; d != nil {
		row := ""
		if d.Row < d.Difference-1e-9 {
			row = fmt.Sprintf(", the table's row for %.2f", d.Row)
		}
		fmt.Fprintf(&w, "  to detect %.2f   80%% power needs --max-runs %d%s (rates near 0.5, the hardest; every run with a verdict); this run's %d gives %.0f%%\n",
			d.Difference, d.MaxRuns, row, sep.MaxRuns, 100*d.Power)
	}
	for _, r := range sep.Sides {
		fmt.Fprintf(&w, "  repeat %-4s      %s\n", r.Key, repeatLine(r))
	}
	w.WriteString("                   (each side repeats one task: flip rate is how often two of its runs disagree; the intervals are the\n" +
		"                   exact interval of the side's rate carried over, so an unbiased estimate can fall outside its own)\n")
	return w.String()
}

// runsWord is "run" or "runs" for n.
func runsWord(n int) string { return plural(n, "run") }

// plural is word for one, word+"s" for any other count.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// notBoth says, for a sequence not separated, that runs left out were counted both ways.
func notBoth(leftOut int) string {
	if leftOut == 0 {
		return ""
	}
	return fmt.Sprintf(" in both the worst and the best case of the %d %s left out", leftOut, runsWord(leftOut))
}

// validateSeparate checks --until-separated's settings before anything is written.
func (o *CalibrateOptions) validateSeparate() error {
	if !o.UntilSeparated {
		return nil
	}
	if len(o.Sides) != 2 {
		return fmt.Errorf("--until-separated: compares two sides, %d given; fix: give exactly two --side", len(o.Sides))
	}
	if o.MaxRuns < 2 || o.MaxRuns > stats.MaxSignPairs {
		return fmt.Errorf("--max-runs %d: a pair needs a run of each side, and the test is calibrated exactly up to %d; fix: give --max-runs 2 to %d (the default is 100)", o.MaxRuns, stats.MaxSignPairs, stats.MaxSignPairs)
	}
	if first := detectTable[0].diff; o.Detect != 0 && (o.Detect < first || o.Detect >= 1) {
		return fmt.Errorf("--detect %v: a difference of pass rates from %.2f (the table's first row) to below 1; fix: give e.g. --detect 0.1", o.Detect, first)
	}
	return nil
}
