package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tare/engine/journal"
	"tare/engine/run"
)

// calibrateReport is the calibrate report, as the seed words it: each side's pass rate with
// its Wilson 95% interval (or, without a check, how many finished), judge scores, time, and
// tokens and cost per side.
func calibrateReport(rec *run.Recipe, st *journal.RunState) string {
	return journal.Printable(calibrateText(rec, st))
}

func calibrateText(rec *run.Recipe, st *journal.RunState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tare calibrate · %s\n", startLabel(rec))
	shared := false
	for _, s := range rec.Sides {
		shared = shared || s.Prompt == ""
	}
	if rec.Prompt != "" && shared {
		fmt.Fprintf(&b, "  task      %s\n", rec.Prompt)
	}
	for _, s := range rec.Sides {
		if s.Prompt != "" {
			fmt.Fprintf(&b, "  task %-4s %s\n", s.Key, s.Prompt)
		}
	}
	if rec.Check != "" {
		fmt.Fprintf(&b, "  check     %s\n%s", rec.Check, checkReportLines(rec, "            "))
	} else {
		b.WriteString("  check     none. A run counts as finished when its agent exits 0. Its workspace is kept for scoring elsewhere.\n")
	}
	if rec.Script != "" {
		fmt.Fprintf(&b, "  model     tare's model server replaying %s (seed %d)\n", rec.Script, rec.Seed)
	}
	width := 5
	for _, s := range rec.Sides {
		width = max(width, len(sideLabel(s))+2)
	}
	if rec.Check != "" {
		fmt.Fprintf(&b, "\n  side  %-*s pass   rate  95%% interval  time (median, range)\n", width, "agent")
	} else {
		fmt.Fprintf(&b, "\n  side  %-*s finished  time (median, range)\n", width, "agent")
	}
	tallies := st.Tally()
	word := "passed"
	if rec.Check == "" {
		word = "finished"
	}
	for i, s := range rec.Sides {
		t := tallies[i]
		times, scores := sideTimes(st, s.Key)
		timing := "-"
		if len(times) > 0 {
			timing = fmt.Sprintf("%s (%s-%s)", minutes(median(times)), minutes(times[0]), minutes(times[len(times)-1]))
		}
		if rec.Check == "" {
			fmt.Fprintf(&b, "  %-4s  %-*s %4d/%-4d  %s\n", s.Key, width, sideLabel(s), t.Passed, t.Verdicts, timing)
			continue
		}
		// With no verdict there is no rate: a 0.00 would read as every tail failing.
		rate, interval := "   -", "    -    "
		if r, ok := t.Rate(); ok {
			rate, interval = fmt.Sprintf("%.2f", r), fmt.Sprintf("%.2f-%.2f", t.Lo, t.Hi)
		}
		fmt.Fprintf(&b, "  %-4s  %-*s %2d/%-2d  %s  %s     %s", s.Key, width, sideLabel(s), t.Passed, t.Verdicts, rate, interval, timing)
		if len(scores) > 0 {
			fmt.Fprintf(&b, "   scores %s", joinInts(scores))
		}
		b.WriteString("\n")
		if bounds := t.BoundsText(); bounds != "" {
			// The rate above assumes its left-out tails were missing at random: these do not.
			fmt.Fprintf(&b, "  %-4s  %-*s rate %s\n", "", width, "", bounds)
		}
	}
	// What each rate counts and what it leaves out, side by side.
	b.WriteString("\n")
	for i, s := range rec.Sides {
		fmt.Fprintf(&b, "  %-4s  %s\n", s.Key, tallies[i].Summary(word))
	}
	b.WriteString(rateNote)
	b.WriteString("\n")
	for i, s := range rec.Sides {
		b.WriteString(usageLine(s.Key, tallies[i].Usage, rec.Script != "") + "\n")
	}
	b.WriteString(checkUsageLines(rec, tallies))
	b.WriteString(meteredLines(rec, st))
	if set, _ := separateOf(rec); set != nil {
		b.WriteString(separationText(rec, *set, st))
	}
	return b.String()
}

// rateNote is the report's word on what a rate counts and what it leaves out.
const rateNote = "  (a rate counts verdicts, and as failed a tail over budget or one the operator killed and counted as failed;\n" +
	"   a tail left out (a provider stop, a timeout before output, a kill left out as an infrastructure fault or not asked)\n" +
	"   is not assumed to be missing at random: the bounds are the rate had every left-out tail failed, or passed.\n" +
	"   A retried tail counts its first attempt that counts: a retry never replaces a failure)\n"

// ReportFile is the machine-readable report inside a run directory (tare calibrate --json).
const ReportFile = "report.json"

// SideReport is one side in report.json: its verdicts and rate, and what the rate leaves out.
type SideReport struct {
	Key    string   `json:"key"`
	Agent  string   `json:"agent"`
	Args   []string `json:"args,omitempty"`
	Passed int      `json:"passed"`
	Failed int      `json:"failed"`
	// Verdicts is passed + failed, the rate's denominator.
	Verdicts int `json:"verdicts"`
	// Rate is passed / verdicts, absent with no verdict; Lo and Hi its Wilson 95% interval.
	Rate *float64 `json:"rate,omitempty"`
	Lo   float64  `json:"lo"`
	Hi   float64  `json:"hi"`
	// FailedNoVerdict counts the failures with no check's verdict (over budget, killed and
	// counted as failed), by reason: in Failed.
	FailedNoVerdict map[string]int `json:"failed_no_verdict"`
	// NoVerdict counts the tails left out, by reason in NoVerdictReasons.
	NoVerdict        int            `json:"no_verdict"`
	NoVerdictReasons map[string]int `json:"no_verdict_reasons"`
	// Bounds is the rate had every left-out tail failed (worst) or passed (best), over
	// verdicts and left-out tails together; absent when none is left out.
	Bounds *RateBounds `json:"bounds,omitempty"`
	// Retried counts tails run more than once, by the outcome that was retried.
	Retried     int            `json:"retried"`
	RetriedFrom map[string]int `json:"retried_from"`
	Usage       journal.Usage  `json:"usage"`
	// CheckUsage is what the side's checks spent (tare's judge's agent), apart from Usage.
	CheckUsage journal.Usage `json:"check_usage,omitzero"`
	// Metered is what tare's relay counted over every attempt of the side's tails (a killed
	// attempt's spend too), beside the agents' own Usage; nil when nothing was metered.
	Metered *journal.Usage `json:"metered,omitempty"`
}

// RateBounds is a rate's worst and best cases in report.json (see stats.Bounds).
type RateBounds struct {
	LeftOut int     `json:"left_out"`
	Of      int     `json:"of"`
	Worst   float64 `json:"worst"`
	Best    float64 `json:"best"`
	// Lo and Hi widen [Worst, Best] by each end's Wilson 95% interval.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// RunReport is report.json.
type RunReport struct {
	Kind    string       `json:"kind"`
	Project string       `json:"project"`
	Check   string       `json:"check,omitempty"`
	Sides   []SideReport `json:"sides"`
	// Separation is how an --until-separated calibrate stopped and why.
	Separation *Separation `json:"separation,omitempty"`
	// Tails are the run's tails, each as its result.json last had it: how the agent and the
	// check ended, and the check's last lines (check.log beside it has the rest).
	Tails []TailReport `json:"tails"`
	// Simulated is true when the run talked to tare's model server: every token and dollar in
	// the report is simulated, and nothing was paid.
	Simulated bool `json:"simulated"`
}

// TailReport is one tail in report.json.
type TailReport struct {
	ID        string         `json:"id"`
	Side      string         `json:"side"`
	Status    journal.Status `json:"status"`
	Reason    journal.Reason `json:"reason,omitempty"`
	AgentExit string         `json:"agent_exit"`
	Check     string         `json:"check"`
	CheckLog  []string       `json:"check_log,omitempty"`
}

// runReport is the run's report as data; dir is the run's folder, whose tails' results it
// reads.
func runReport(dir string, rec *run.Recipe, st *journal.RunState) RunReport {
	out := RunReport{Kind: rec.Kind, Project: rec.Project, Check: rec.Check, Sides: []SideReport{}, Simulated: rec.Script != ""}
	for _, t := range st.Tally() {
		sr := SideReport{Key: t.Side.Key, Agent: t.Side.Agent, Args: t.Side.Args, Passed: t.Passed, Failed: t.Failed,
			Verdicts: t.Verdicts, Lo: t.Lo, Hi: t.Hi, FailedNoVerdict: t.FailedFrom, NoVerdict: t.NoVerdict, NoVerdictReasons: t.Reasons,
			Retried: t.Retried, RetriedFrom: t.RetriedFrom, Usage: t.Usage, CheckUsage: t.CheckUsage}
		if r, ok := t.Rate(); ok {
			sr.Rate = &r
		}
		if t.NoVerdict > 0 {
			b := t.Bounds()
			sr.Bounds = &RateBounds{LeftOut: b.LeftOut, Of: b.N(), Worst: b.Worst, Best: b.Best, Lo: b.Lo, Hi: b.Hi}
		}
		sr.Metered = sideMetered(st, t.Side.Key)
		out.Sides = append(out.Sides, sr)
	}
	if set, _ := separateOf(rec); set != nil {
		sep := separation(rec, *set, st)
		out.Separation = &sep
	}
	out.Tails = []TailReport{}
	for _, id := range st.Order {
		if res, ok := readResult(filepath.Join(dir, "tails", id)); ok {
			out.Tails = append(out.Tails, TailReport{ID: id, Side: res.Side, Status: res.Status, Reason: res.Reason,
				AgentExit: journal.Printable(res.AgentExit), Check: journal.Printable(res.Check), CheckLog: res.CheckLog})
		}
	}
	return out
}

// writeReport writes report.txt and report.json.
func writeReport(dir, text string, rec *run.Recipe, st *journal.RunState) error {
	if err := run.WriteFile(filepath.Join(dir, "report.txt"), []byte(text)); err != nil {
		return err
	}
	data, err := json.MarshalIndent(runReport(dir, rec, st), "", "  ")
	if err != nil {
		return err
	}
	return run.WriteFile(filepath.Join(dir, ReportFile), append(data, '\n'))
}

// usageLine is a side's tokens and cost: tare's figure from its price table and, beside it,
// what the CLI itself said, where it says. On tare's model server (simulated) the tokens are
// the server's estimate and nothing was paid: the dollars say so.
func usageLine(key string, u journal.Usage, simulated bool) string {
	line := fmt.Sprintf("  usage %-4s %s in, %s out, %s cache read, %s cache write", key,
		journal.Tokens(u.Input), journal.Tokens(u.Output), journal.Tokens(u.CacheRead), journal.Tokens(u.CacheWrite))
	switch {
	case len(u.Unpriced) > 0:
		line += fmt.Sprintf(" · cost unknown: no price for %s", strings.Join(u.Unpriced, ", "))
	case u.Input+u.Output > 0:
		line += fmt.Sprintf(" · $%.4f (tare's prices)", u.Cost)
	}
	if simulated && u.Input+u.Output > 0 {
		line += " · " + journal.SimulatedNote
	}
	if u.Reported != nil && simulated {
		line += fmt.Sprintf(" · the CLI said $%.4f (its own price for the model it was told it ran, simulated)", *u.Reported)
	} else if u.Reported != nil {
		line += fmt.Sprintf(" · the CLI said $%.4f", *u.Reported)
	} else {
		line += " · the CLI reported no cost"
	}
	return line
}

func sideLabel(s journal.Side) string {
	return strings.TrimSpace(s.Agent + " " + strings.Join(s.Args, " "))
}

// sideTimes returns the durations of a side's tails' counted attempts (those with a
// verdict), sorted, and their judge scores, sorted.
func sideTimes(st *journal.RunState, key string) ([]time.Duration, []int) {
	var times []time.Duration
	var scores []int
	for _, id := range st.Order {
		t := st.Tails[id]
		if t.Side != key {
			continue
		}
		a, ok := t.Counted()
		if !ok || a.Ended.IsZero() {
			continue
		}
		times = append(times, a.Ended.Sub(a.Started)-a.Queued) // run time: a cluster's queue wait is not the agent's
		if a.Score != nil {
			scores = append(scores, *a.Score)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	sort.Ints(scores)
	return times, scores
}

func median(d []time.Duration) time.Duration {
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return (d[n/2-1] + d[n/2]) / 2
}

func minutes(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, " ")
}

// usageFile is usage.json: tokens and cost per tail (every attempt's, summed), per attempt,
// per side and in total. A retried tail's earlier attempts cost what they cost: nothing
// drops out.
type usageFile struct {
	Tails    map[string]journal.Usage  `json:"tails"`
	Attempts map[string][]attemptUsage `json:"attempts"`
	Sides    map[string]journal.Usage  `json:"sides"`
	Total    journal.Usage             `json:"total"`
	// CheckTotal is what the checks spent (tare's judge's agent), apart from the agents'.
	CheckTotal journal.Usage `json:"check_total,omitzero"`
	// MeteredTails, MeteredSides and MeteredTotal are the same as tare's relay counted them,
	// beside the agents' own figures above (see addMetered).
	MeteredTails map[string]journal.Usage `json:"metered_tails,omitempty"`
	MeteredSides map[string]journal.Usage `json:"metered_sides,omitempty"`
	MeteredTotal *journal.Usage           `json:"metered_total,omitempty"`
}

// attemptUsage is one attempt of a tail in usage.json.
type attemptUsage struct {
	Attempt int            `json:"attempt"`
	Status  journal.Status `json:"status"`
	Reason  journal.Reason `json:"reason,omitempty"`
	Usage   journal.Usage  `json:"usage"`
	// CheckUsage is what the attempt's check spent (tare's judge), never in Usage.
	CheckUsage journal.Usage `json:"check_usage,omitzero"`
	// Metered is the attempt's usage as tare's relay counted it (absent: not metered).
	Metered *journal.Metered `json:"metered,omitempty"`
}

func writeUsage(dir string, st *journal.RunState) error {
	u := usageFile{Tails: map[string]journal.Usage{}, Attempts: map[string][]attemptUsage{}, Sides: map[string]journal.Usage{}}
	for _, id := range st.Order {
		t := st.Tails[id]
		for _, a := range t.Attempts() {
			u.Attempts[id] = append(u.Attempts[id], attemptUsage{Attempt: a.N, Status: a.Status, Reason: a.Reason, Usage: a.Usage, CheckUsage: a.CheckUsage, Metered: a.Metered})
			u.addMetered(id, t.Side, a.Metered)
			u.CheckTotal = u.CheckTotal.Add(a.CheckUsage)
		}
		total := t.TotalUsage()
		u.Tails[id] = total
		u.Sides[t.Side] = u.Sides[t.Side].Add(total)
		u.Total = u.Total.Add(total)
	}
	data, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return err
	}
	return run.WriteFile(filepath.Join(dir, "usage.json"), append(data, '\n'))
}
