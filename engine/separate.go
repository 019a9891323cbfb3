package engine

import (
	"fmt"
	"strings"

	"tare/engine/journal"
	"tare/engine/stats"
)

// separateAlpha is the error allowed over a whole --until-separated sequence: 95%.
const separateAlpha = 0.05

// separateMethod names the test in the report.
const separateMethod = "test by betting (Waudby-Smith & Ramdas 2024): an anytime-valid confidence sequence at 95%"

// separateSettings are a calibrate run's --until-separated settings, kept in the recipe so
// tare resume continues the same sequence.
type separateSettings struct {
	// MaxRuns is the most runs started per side.
	MaxRuns int `json:"max_runs"`
}

// Outcomes of one run in a side's sequence.
const (
	runPassed    = 1
	runFailed    = 0
	runNoVerdict = -1
)

// verdictPairs pairs the k-th verdict of side a with the k-th of side b, both sides in run
// order; no-verdict runs form no pair and are skipped, so a pair is each side's next verdict.
// Pairing by run order, not by finishing time, makes the sequence the same however many
// runs ran at once and recomputable from the journal.
func verdictPairs(a, b []int) [][2]int {
	var va, vb []int
	for _, x := range a {
		if x != runNoVerdict {
			va = append(va, x)
		}
	}
	for _, x := range b {
		if x != runNoVerdict {
			vb = append(vb, x)
		}
	}
	pairs := make([][2]int, min(len(va), len(vb)))
	for k := range pairs {
		pairs[k] = [2]int{va[k], vb[k]}
	}
	return pairs
}

// stoppingPair replays the pairs in order and returns the first k (1-based) after which the
// test separates the sides, 0 if it never does, and the sequence as it stood then (or after
// every pair). A stop decided at pair k stays decided: pairs after it (runs that were in
// flight) are reported but never change it.
func stoppingPair(pairs [][2]int) (int, *stats.Sequential) {
	s := stats.NewSequential(separateAlpha)
	for k, p := range pairs {
		s.Add(p[0], p[1])
		if s.Separated() {
			return k + 1, s
		}
	}
	return 0, s
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
	// Stopped is "separated", "max reached" or "interrupted" (runs were left to start: tare
	// resume continues the sequence).
	Stopped string `json:"stopped"`
	// Pairs is the pairs the decision was taken on: the stopping pair when separated.
	Pairs int `json:"pairs"`
	// Paired lists each pair's tails, a's then b's, in order.
	Paired [][2]string `json:"paired"`
	// Difference is a's pass rate minus b's over the pairs; Lo and Hi the confidence
	// sequence's range for it at the decision.
	Difference float64 `json:"difference"`
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	// After are runs with a verdict that are not in the decision: in flight at the stop (with
	// --jobs above 1), or a side's verdicts beyond the other's.
	After []string `json:"after_stop"`
	// LeftOut are the runs with no verdict: they form no pair.
	LeftOut []string `json:"left_out"`
	// RunsToSeparate is the normal-approximation estimate of the runs per side a fixed
	// design needs for 80% power at the observed rates, smoothed as (x+1)/(n+2) (absent
	// when they are equal).
	RunsToSeparate *int `json:"runs_to_separate_estimate,omitempty"`
	// Sides are each side's repeats of its one task: flip rate and pass^k over its verdicts.
	Sides []RepeatReport `json:"sides"`
}

// separation computes how the run stands: from the journal alone, so a resumed run and its
// report take the same decision the first process would have.
func separation(rec *Recipe, st *journal.RunState) Separation {
	sep := Separation{Method: separateMethod, Alpha: separateAlpha, MaxRuns: rec.Separate.MaxRuns, Paired: [][2]string{}, After: []string{}, LeftOut: []string{}}
	a, aIDs, aDone := sideSequence(st, rec.Sides[0].Key, rec.Separate.MaxRuns)
	b, bIDs, bDone := sideSequence(st, rec.Sides[1].Key, rec.Separate.MaxRuns)
	pairs := verdictPairs(a, b)
	stop, seq := stoppingPair(pairs)
	switch {
	case stop > 0:
		sep.Stopped, sep.Pairs = "separated", stop
	case aDone && bDone:
		sep.Stopped, sep.Pairs = "max reached", len(pairs)
	default:
		sep.Stopped, sep.Pairs = "interrupted", len(pairs)
	}
	sep.Lo, sep.Hi = seq.Interval()
	var va, vb []string
	collect := func(outcomes []int, ids []string, verdicts *[]string) {
		for i, x := range outcomes {
			if x == runNoVerdict {
				sep.LeftOut = append(sep.LeftOut, ids[i])
			} else {
				*verdicts = append(*verdicts, ids[i])
			}
		}
	}
	collect(a, aIDs, &va)
	collect(b, bIDs, &vb)
	xa, xb := 0, 0
	for k := range sep.Pairs {
		sep.Paired = append(sep.Paired, [2]string{va[k], vb[k]})
		xa += pairs[k][0]
		xb += pairs[k][1]
	}
	sep.After = append(append(sep.After, va[sep.Pairs:]...), vb[sep.Pairs:]...)
	if sep.Pairs > 0 {
		n := float64(sep.Pairs)
		sep.Difference = float64(xa-xb) / n
		// Rates of 0 or 1 have no spread, and the normal approximation would say one run
		// suffices: the estimate uses Laplace's (x+1)/(n+2) instead.
		if need, ok := stats.RunsToSeparate(float64(xa+1)/(n+2), float64(xb+1)/(n+2), separateAlpha, 0.8); ok {
			sep.RunsToSeparate = &need
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
func separationStarts(r *run, rec *Recipe, spec tailSpec) bool {
	st := r.snapshot()
	if st.Tails[spec.ID] != nil {
		return true
	}
	return separation(rec, st).Stopped != "separated"
}

// separationText is the report's lines on the sequence: method, when and why it stopped,
// the confidence sequence for the difference, and per side the estimate of runs needed,
// flip rate and pass^k.
func separationText(rec *Recipe, st *journal.RunState) string {
	sep := separation(rec, st)
	a, b := rec.Sides[0].Key, rec.Sides[1].Key
	var w strings.Builder
	fmt.Fprintf(&w, "\n  until separated  %s\n", sep.Method)
	w.WriteString("                   pairs: the next verdict of each side, in run order; a run with no verdict forms no pair\n")
	switch sep.Stopped {
	case "separated":
		fmt.Fprintf(&w, "  stopped          separated after %d pairs (at most %d runs per side)\n", sep.Pairs, sep.MaxRuns)
	case "max reached":
		fmt.Fprintf(&w, "  stopped          max reached: %d runs per side, %d pairs, not separated\n", sep.MaxRuns, sep.Pairs)
	default:
		fmt.Fprintf(&w, "  stopped          interrupted after %d pairs, not separated (tare resume continues the sequence)\n", sep.Pairs)
	}
	fmt.Fprintf(&w, "  difference %s-%s  %+.2f over %d pairs; confidence sequence %+.2f to %+.2f\n", a, b, sep.Difference, sep.Pairs, sep.Lo, sep.Hi)
	if len(sep.After) > 0 {
		fmt.Fprintf(&w, "  after the stop   %s: finished and counted in the rates above, not in the decision (taken at pair %d)\n", strings.Join(sep.After, " "), sep.Pairs)
	}
	if len(sep.LeftOut) > 0 {
		fmt.Fprintf(&w, "  left out         %s: no verdict, no pair\n", strings.Join(sep.LeftOut, " "))
	}
	if sep.RunsToSeparate != nil {
		fmt.Fprintf(&w, "  runs to separate about %d per side (estimate: normal approximation of a fixed design, 80%% power at 95%%, at the observed rates smoothed as (x+1)/(n+2))\n", *sep.RunsToSeparate)
	} else {
		w.WriteString("  runs to separate no estimate: the observed rates are equal\n")
	}
	for _, r := range sep.Sides {
		fmt.Fprintf(&w, "  repeat %-4s      %s\n", r.Key, repeatLine(r))
	}
	w.WriteString("                   (each side repeats one task: flip rate is how often two of its runs disagree; the intervals are the\n" +
		"                   exact interval of the side's rate carried over, so an unbiased estimate can fall outside its own)\n")
	return w.String()
}

// validateSeparate checks --until-separated's settings before anything is written.
func (o *CalibrateOptions) validateSeparate() error {
	if !o.UntilSeparated {
		return nil
	}
	if len(o.Sides) != 2 {
		return fmt.Errorf("--until-separated: compares two sides, %d given; fix: give exactly two --side", len(o.Sides))
	}
	if o.MaxRuns < 2 {
		return fmt.Errorf("--max-runs %d: a pair needs a run of each side; fix: give --max-runs 2 or more (the default is 100)", o.MaxRuns)
	}
	return nil
}
