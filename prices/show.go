package prices

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Agents' providers: the ones show lists without a model.
var agentProviders = []string{"anthropic", "openai", "google", litellmProvider}

// Show writes the table's models of the agents' providers (and every model of the override
// file), one line each, prices per million tokens with their long-context tiers, as of at.
func (t *Table) Show(w io.Writer, override string, at time.Time) {
	fmt.Fprintf(w, "tare's prices, USD per million tokens, as of %s\n", at.Format(time.DateOnly))
	fmt.Fprintf(w, "  from %s, tare's corrections, and %s\n\n", Snapshot, overrideNote(t, override))
	fmt.Fprintf(w, "  %-10s %-32s %-17s %-19s %-17s %-19s %s\n", "provider", "model", "input", "output", "cache read", "cache write", "source")
	seen := map[string]bool{}
	for i, layer := range t.layers {
		for _, p := range layer {
			yours := i == 0 && len(t.layers) > 2
			if !yours && !slices.Contains(agentProviders, p.id) {
				continue
			}
			for _, m := range p.models {
				if seen[p.id+"/"+m.ID] {
					continue // a later layer's model that an earlier one replaces
				}
				seen[p.id+"/"+m.ID] = true
				pr := m.PriceAt(at)
				fmt.Fprintf(w, "  %-10s %-32s %-17s %-19s %-17s %-19s %s\n", p.id, m.ID,
					rate(pr.Input, true), rate(pr.Output, true), rate(pr.CacheRead, false), rate(pr.CacheWrite, false), m.Source)
			}
		}
	}
	fmt.Fprintf(w, "\n  Other providers' models are priced too: tare prices show MODEL finds any model by its id.\n")
}

func overrideNote(t *Table, override string) string {
	if len(t.layers) > 2 {
		return "your table " + override
	}
	return "no table of yours (" + override + "; tare prices update writes it)"
}

// Describe is what show MODEL prints: which rule matched and the model's prices as of at.
func Describe(model string, m *Model, at time.Time) string {
	var b strings.Builder
	name := m.Name
	if name == "" {
		name = m.ID
	}
	fmt.Fprintf(&b, "%s: %s (%s %s, %s)\n", model, name, m.Provider, m.ID, m.Source)
	p := m.PriceAt(at)
	fmt.Fprintf(&b, "  input        %s per million tokens\n", rate(p.Input, true))
	fmt.Fprintf(&b, "  output       %s\n", rate(p.Output, true))
	fmt.Fprintf(&b, "  cache read   %s\n", orInput(p.CacheRead))
	fmt.Fprintf(&b, "  cache write  %s\n", orInput(p.CacheWrite))
	for _, d := range m.Changes() {
		fmt.Fprintf(&b, "  price change on %s (priced by the day of each run)\n", d.Format(time.DateOnly))
	}
	if hasTiers(p) {
		b.WriteString("  a request whose prompt (input and cache) is above a tier's size pays the tier for all its tokens\n")
	}
	return b.String()
}

func orInput(r Rate) string {
	if !r.set {
		return "as input"
	}
	return rate(r, true)
}

func hasTiers(p Price) bool {
	return len(p.Input.Tiers)+len(p.Output.Tiers)+len(p.CacheRead.Tiers)+len(p.CacheWrite.Tiers) > 0
}

// rate is "$3", or "$3 ($6 >200k)" with a tier; an unset rate is "-" (or $0 when required).
func rate(r Rate, required bool) string {
	if !r.set && !required {
		return "-"
	}
	s := dollars(r.Base)
	for _, t := range r.Tiers {
		s += fmt.Sprintf(" (%s >%s)", dollars(t.Price), kilo(t.Start))
	}
	return s
}

func dollars(v float64) string { return "$" + strconv.FormatFloat(v, 'f', -1, 64) }

func kilo(n int64) string {
	if n%1000 == 0 {
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}
