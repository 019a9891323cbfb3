package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tare/capsule"
)

// calibrateReport is the calibrate report, as the seed words it: each side's pass rate with
// its Wilson 95% interval (or, without a check, how many finished), judge scores, time, and
// tokens and cost per side.
func calibrateReport(rec *Recipe, st *RunState) string {
	return Printable(calibrateText(rec, st))
}

func calibrateText(rec *Recipe, st *RunState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tare calibrate · %s\n", rec.Project)
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
		fmt.Fprintf(&b, "  check     %s\n%s", rec.Check, rec.CheckRoom.reportLines("            "))
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
	for i, s := range rec.Sides {
		t := tallies[i]
		times, scores := sideTimes(st, s.Key)
		timing := "-"
		if len(times) > 0 {
			timing = fmt.Sprintf("%s (%s-%s)", minutes(median(times)), minutes(times[0]), minutes(times[len(times)-1]))
		}
		if rec.Check == "" {
			fmt.Fprintf(&b, "  %-4s  %-*s %4d/%-4d  %s\n", s.Key, width, sideLabel(s), t.Passed, t.Done, timing)
			continue
		}
		rate := 0.0
		if t.Done > 0 {
			rate = float64(t.Passed) / float64(t.Done)
		}
		fmt.Fprintf(&b, "  %-4s  %-*s %2d/%-2d  %.2f  %.2f-%.2f     %s", s.Key, width, sideLabel(s), t.Passed, t.Done, rate, t.Lo, t.Hi, timing)
		if len(scores) > 0 {
			fmt.Fprintf(&b, "   scores %s", joinInts(scores))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for i, s := range rec.Sides {
		b.WriteString(usageLine(s.Key, tallies[i].Usage, rec.Script != "") + "\n")
	}
	return b.String()
}

// usageLine is a side's tokens and cost: tare's figure from its price table and, beside it,
// what the CLI itself said, where it says. On tare's model server (simulated) the tokens are
// the server's estimate and nothing was paid: the dollars say so.
func usageLine(key string, u Usage, simulated bool) string {
	line := fmt.Sprintf("  usage %-4s %s in, %s out, %s cache read, %s cache write", key,
		tokens(u.Input), tokens(u.Output), tokens(u.CacheRead), tokens(u.CacheWrite))
	switch {
	case len(u.Unpriced) > 0:
		line += fmt.Sprintf(" · cost unknown: no price for %s", strings.Join(u.Unpriced, ", "))
	case u.Input+u.Output > 0:
		line += fmt.Sprintf(" · $%.4f (tare's prices)", u.Cost)
	}
	if simulated && u.Input+u.Output > 0 {
		line += " · simulated: tare's model server, no money spent"
	}
	if u.Reported != nil {
		line += fmt.Sprintf(" · the CLI said $%.4f", *u.Reported)
	} else {
		line += " · the CLI reported no cost"
	}
	return line
}

func sideLabel(s Side) string { return strings.TrimSpace(s.Agent + " " + strings.Join(s.Args, " ")) }

// sideTimes returns a side's finished tails' durations, sorted, and its judge scores, sorted.
func sideTimes(st *RunState, key string) ([]time.Duration, []int) {
	var times []time.Duration
	var scores []int
	for _, id := range st.Order {
		t := st.Tails[id]
		if t.Side != key || t.Ended.IsZero() {
			continue
		}
		times = append(times, t.Ended.Sub(t.Started))
		if t.Score != nil {
			scores = append(scores, *t.Score)
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

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, " ")
}

// usageFile is usage.json: tokens and cost per tail, per side and in total.
type usageFile struct {
	Tails map[string]Usage `json:"tails"`
	Sides map[string]Usage `json:"sides"`
	Total Usage            `json:"total"`
}

func writeUsage(dir string, st *RunState) error {
	u := usageFile{Tails: map[string]Usage{}, Sides: map[string]Usage{}}
	for _, id := range st.Order {
		t := st.Tails[id]
		u.Tails[id] = t.Usage
		u.Sides[t.Side] = u.Sides[t.Side].Add(t.Usage)
		u.Total = u.Total.Add(t.Usage)
	}
	data, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return err
	}
	return capsule.WriteFileAtomic(filepath.Join(dir, "usage.json"), append(data, '\n'), 0o644)
}
