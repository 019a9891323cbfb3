package engine

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"tare/engine/journal"
	"tare/engine/run"
	"tare/modelserver"
)

// sideAgents are the sides' agents.
func sideAgents(sides []journal.Side) []string {
	var out []string
	for _, s := range sides {
		out = append(out, s.Agent)
	}
	return out
}

// meterTolerance is how far (relative) an agent's own token count may stray from the relay's
// before the report flags it.
const meterTolerance = 0.05

// HostsFile is the per-tail log, beside result.json, of every host the agent tried to reach
// through the room's relays, allowed or refused.
const HostsFile = "hosts.jsonl"

// runBudget is the budget every tail of env's run charges.
func (env *tailEnv) runBudget() *modelserver.Budget {
	c := env.recipe.Caps
	if c == nil || (c.RunTokens == 0 && c.RunCost == 0) {
		return nil
	}
	env.budgetOnce.Do(func() { env.budget = newRunBudget(env.run, *c) })
	return env.budget
}

// newRunBudget is a run's budget with what its journal says its tails spent already (before
// a resume, or in an earlier tare tail of a recording), and what its recording spent,
// counted against the cap.
func newRunBudget(r *run.Run, c run.Caps) *modelserver.Budget {
	fresh := &modelserver.Budget{Name: "run", MaxTokens: c.RunTokens, MaxCost: c.RunCost}
	spend := func(m *journal.Metered) {
		if m == nil {
			return
		}
		fresh.Spend(m.Input+m.Output+m.CacheRead+m.CacheWrite, m.Cost)
		for _, model := range m.Unpriced {
			fresh.SpendUnpriced(model)
		}
	}
	if rec, err := journal.ReadRecording(r.Dir()); err == nil {
		spend(rec.Metered)
	}
	for _, t := range r.Snapshot().Tails {
		for _, a := range t.Attempts() {
			spend(a.Metered)
		}
	}
	return fresh
}

// meterFor puts a meter between a room and tare's model server at upstream, charging, when
// capped, the tail's caps and the run's. It returns the address the room's relay should dial.
func (env *tailEnv) meterFor(upstream string, capped bool) (string, *modelserver.Meter, error) {
	if upstream == "" {
		return "", nil, nil
	}
	m, err := modelserver.NewMeter(upstream, CostOf, env.budgets(capped)...)
	if err != nil {
		return "", nil, err
	}
	return m.Addr(), m, nil
}

// budgets are what a meter charges: when capped, the tail's own caps and the run's.
func (env *tailEnv) budgets(capped bool) []*modelserver.Budget {
	if !capped {
		return nil
	}
	var tail *modelserver.Budget
	if c := env.recipe.Caps; c != nil && (c.TailTokens > 0 || c.TailCost > 0) {
		tail = &modelserver.Budget{Name: "tail", MaxTokens: c.TailTokens, MaxCost: c.TailCost}
	}
	return []*modelserver.Budget{tail, env.runBudget()}
}

// metered is what the meter counted, with the agent's own count beside it.
func metered(m *modelserver.Meter, own journal.Usage) *journal.Metered {
	if m == nil {
		return nil
	}
	out := &journal.Metered{OverBudget: m.OverBudget(), Simulated: m.Simulated()}
	unpriced := map[string]bool{}
	for _, c := range m.Calls() {
		if c.OverBudget {
			out.Refused++
			continue
		}
		out.Calls++
		if c.Incomplete {
			out.Incomplete++
		}
		out.Input += c.Input
		out.Output += c.Output
		out.CacheRead += c.CacheRead
		out.CacheWrite += c.CacheWrite
		out.Cost += c.Cost
		if out.Model == "" {
			out.Model = c.Model
		}
		if !c.Priced && !unpriced[c.Model] {
			unpriced[c.Model] = true
			out.Unpriced = append(out.Unpriced, unpricedName(c.Model))
		}
	}
	mine := out.Input + out.Output + out.CacheRead + out.CacheWrite
	theirs := own.Input + own.Output + own.CacheRead + own.CacheWrite
	if d := math.Abs(float64(theirs - mine)); d > meterTolerance*float64(max(mine, 1)) {
		out.Differs = fmt.Sprintf("the agent counted %d tokens, the relay %d (%+.0f%%)", theirs, mine, 100*float64(theirs-mine)/float64(max(mine, 1)))
	}
	return out
}

// addMetered counts one attempt's relay count into usage.json's metered figures, beside the
// agents' own: per tail (its attempts summed), per side and in total.
func (u *usageFile) addMetered(id, side string, m *journal.Metered) {
	if m == nil {
		return
	}
	if u.MeteredTails == nil {
		u.MeteredTails, u.MeteredSides, u.MeteredTotal = map[string]journal.Usage{}, map[string]journal.Usage{}, &journal.Usage{}
	}
	u.MeteredTails[id] = u.MeteredTails[id].Add(m.Usage)
	u.MeteredSides[side] = u.MeteredSides[side].Add(m.Usage)
	*u.MeteredTotal = u.MeteredTotal.Add(m.Usage)
}

// hostLog is the path of a tail's host log.
func hostLog(dir string) string { return filepath.Join(dir, HostsFile) }

// meteredLines are the report's lines on what the relay counted: per side, its tokens and
// cost over every attempt of every tail (a killed or retried attempt spent too, though its
// agent may have counted nothing), beside the agents' own figures above; each attempt whose
// agent's count strays from the relay's, or that the relay stopped over budget; and where
// the host logs are.
func meteredLines(rec *run.Recipe, st *journal.RunState) string {
	var b strings.Builder
	var flagged []string
	for _, s := range rec.Sides {
		var sum journal.Metered
		n := 0
		for _, id := range st.Order {
			t := st.Tails[id]
			if t.Side != s.Key {
				continue
			}
			attempts := t.Attempts()
			for _, a := range attempts {
				m := a.Metered
				if m == nil {
					continue
				}
				n++
				sum.Usage = sum.Usage.Add(m.Usage)
				sum.Calls += m.Calls
				sum.Simulated = sum.Simulated || m.Simulated
				name := id
				if len(attempts) > 1 {
					name = fmt.Sprintf("%s attempt %d", id, a.N)
				}
				if m.Differs != "" {
					flagged = append(flagged, fmt.Sprintf("  ! %s: %s", name, m.Differs))
				}
				if m.Incomplete > 0 {
					flagged = append(flagged, fmt.Sprintf("  ! %s: incomplete: %d answers over 32 MiB were not read whole, so its count is a floor", name, m.Incomplete))
				}
				if m.OverBudget != "" {
					flagged = append(flagged, fmt.Sprintf("  %s over budget: %s", name, m.OverBudget))
				}
			}
		}
		if n == 0 {
			continue
		}
		line := fmt.Sprintf("  relay %-4s %s in, %s out, %s cache read, %s cache write in %d calls", s.Key,
			journal.Tokens(sum.Input), journal.Tokens(sum.Output), journal.Tokens(sum.CacheRead), journal.Tokens(sum.CacheWrite), sum.Calls)
		if sum.Calls == 1 {
			line = strings.TrimSuffix(line, "calls") + "call"
		}
		if len(sum.Unpriced) > 0 {
			line += " · cost unknown: no price for " + strings.Join(sum.Unpriced, ", ")
		} else {
			line += fmt.Sprintf(" · $%.4f (tare's prices)", sum.Cost)
		}
		if sum.Simulated {
			line += " · " + journal.SimulatedNote
		}
		b.WriteString(line + " · metered at tare's relay, every attempt\n")
	}
	if b.Len() == 0 {
		return ""
	}
	for _, f := range flagged {
		b.WriteString(f + "\n")
	}
	if rec.Caps != nil && rec.Caps.Set() {
		fmt.Fprintf(&b, "  caps      %s\n", rec.Caps)
	}
	b.WriteString("  hosts     each tail's reach, allowed or refused: tails/<id>/" + HostsFile + "\n")
	return b.String()
}

// sideMetered is what the relay counted over every attempt of a side's tails, nil when it
// metered none.
func sideMetered(st *journal.RunState, side string) *journal.Usage {
	var sum *journal.Usage
	for _, id := range st.Order {
		t := st.Tails[id]
		if t.Side != side {
			continue
		}
		for _, a := range t.Attempts() {
			if a.Metered != nil {
				if sum == nil {
					sum = &journal.Usage{}
				}
				*sum = sum.Add(a.Metered.Usage)
			}
		}
	}
	return sum
}

// attemptSpend is what one attempt (or a recording) cost: the relay's count where it metered
// it, else the agent's own (a real provider whose calls the relay does not read). known is
// false when a model had no price; metered says which count it is.
func attemptSpend(own journal.Usage, m *journal.Metered) (cost float64, known, metered bool) {
	if m != nil {
		return m.Cost, len(m.Unpriced) == 0, true
	}
	return own.Cost, len(own.Unpriced) == 0, false
}

// tailSpend is what every attempt of a tail cost (attemptSpend of each): a killed attempt's
// agent may have counted nothing, the relay counted what it spent. unmetered counts the
// attempts priced on the agent's own count.
func tailSpend(t *journal.TailState) (cost float64, known bool, unmetered int) {
	known = true
	for _, a := range t.Attempts() {
		c, ok, m := attemptSpend(a.Usage, a.Metered)
		cost += c
		known = known && ok
		if !m {
			unmetered++
		}
	}
	return cost, known, unmetered
}

// recordingSpend is what a recording cost: the relay's count where it metered it, else the
// agent's own from its stream (known false when that is unreadable or a model had no price);
// unmetered is 1 for the agent's own count.
func recordingSpend(dir string, rec *journal.Recording) (cost float64, known bool, unmetered int) {
	if rec.Metered != nil {
		return rec.Metered.Cost, len(rec.Metered.Unpriced) == 0, 0
	}
	u, ok := recordingUsage(dir, rec)
	return u.Cost, ok && len(u.Unpriced) == 0, 1
}

// costSource says whose count a cost line's dollars are: the relay's, or the agents' own for
// the attempts it did not meter.
func costSource(unmetered int) string {
	if unmetered == 0 {
		return "tare's prices on the relay's count"
	}
	return fmt.Sprintf("tare's prices on the relay's count; %d attempts or recordings on the agent's own count, unmetered", unmetered)
}
