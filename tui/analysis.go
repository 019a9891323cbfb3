package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"tare/engine"
)

// cliffPane is a cliff's curve: for every step it has tried, the pass rate of the tails
// from there (a dot) with its Wilson interval as a vertical range, drawn along the
// recording's steps, the cliff marked once the report names it.
type cliffPane struct {
	env  *env
	dir  string
	w, h int
}

func (p *cliffPane) title() string                     { return "Pass rate by step" }
func (p *cliffPane) setSize(w, h int)                  { p.w, p.h = w, h }
func (p *cliffPane) refresh()                          {}
func (p *cliffPane) capturing() bool                   { return false }
func (p *cliffPane) help() []key.Binding               { return nil }
func (p *cliffPane) rowHelp() []key.Binding            { return nil }
func (p *cliffPane) update(tea.KeyMsg) (bool, tea.Cmd) { return false, nil }
func (p *cliffPane) rows() int                         { return 9 }

func (p *cliffPane) view(bool) string {
	st := p.env.store.run(p.dir).state
	curve, _ := engine.CliffCurveOf(st)
	return cliffChart(p.env.st, curve, p.w, p.h)
}

// cliffChart draws curve in w x h cells: a rate axis on the left, one column per step (or
// per group of steps when they do not fit), the step numbers under it and one line saying
// where the search stands.
func cliffChart(s styles, c engine.CliffCurve, w, h int) string {
	const axis = 5      // "1.0 │"
	plot := max(h-3, 2) // the axis, the step numbers and the caption below it
	cols := w - axis
	if cols < 3 || h < 4 {
		return s.tone(dim, fit("too small for the curve", w))
	}
	steps := c.Steps + 1
	per := (steps + cols - 1) / cols // steps per column
	colw := max(1, min(3, cols/((steps+per-1)/per)))
	ncol := (steps + per - 1) / per
	grid := make([][]rune, plot)
	tones := make([][]tone, plot)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", ncol*colw))
		tones[r] = make([]tone, ncol*colw)
	}
	row := func(y float64) int { return int(math.Round((1 - y) * float64(plot-1))) }
	for col := range ncol {
		// The step of the group with the most verdicts stands for it.
		best, bestN := col*per, -1
		for st := col * per; st < min((col+1)*per, steps); st++ {
			if n := c.Counts[st].Verdicts; n > bestN {
				best, bestN = st, n
			}
		}
		x := col*colw + colw/2
		cnt := c.Counts[best]
		if cnt.Verdicts == 0 {
			grid[plot-1][x], tones[plot-1][x] = '·', dim
			continue
		}
		lo, hi := cnt.Interval()
		rate := cnt.Rate()
		t := warn
		switch {
		case lo >= 0.5:
			t = good
		case hi < 0.5:
			t = bad
		}
		for r := row(hi); r <= row(lo); r++ {
			grid[r][x], tones[r][x] = '│', t
		}
		grid[row(rate)][x], tones[row(rate)][x] = '●', t
	}
	var b strings.Builder
	for r := range plot {
		label := "    "
		switch r {
		case 0:
			label = "1.0 "
		case row(0.5):
			label = "0.5 "
		case plot - 1:
			label = "0.0 "
		}
		b.WriteString(s.tone(dim, label+"│"))
		for x, ch := range grid[r] {
			b.WriteString(s.tone(tones[r][x], string(ch)))
		}
		b.WriteString("\n")
	}
	// The step axis: numbers where they fit, the cliff marked.
	ax := []rune(strings.Repeat("─", ncol*colw))
	nums := []rune(strings.Repeat(" ", ncol*colw+4))
	for col := range ncol {
		x := col*colw + colw/2
		st := col * per
		if c.Cliff > 0 && c.Cliff >= st && c.Cliff < st+per {
			ax[x] = '▲'
		}
		label := []rune(fmt.Sprint(st))
		if col%max(1, (len(label)+1+colw-1)/colw) == 0 && x+len(label) <= len(nums) {
			copy(nums[x:], label)
		}
	}
	b.WriteString(s.tone(dim, "    └") + markCliff(s, string(ax)) + "\n")
	b.WriteString(s.tone(dim, "step "+strings.TrimRight(string(nums), " ")))
	lines := strings.Split(b.String(), "\n")
	caption := cliffCaption(c)
	if len(lines) < h {
		lines = append(lines, fit(caption, w))
	}
	return strings.Join(lines, "\n")
}

func markCliff(s styles, ax string) string {
	before, after, found := strings.Cut(ax, "▲")
	if !found {
		return s.tone(dim, ax)
	}
	return s.tone(dim, before) + s.tone(bad, "▲") + s.tone(dim, after)
}

// cliffCaption is the line under the curve: the cliff and its call once known, else how
// many tails have spoken.
func cliffCaption(c engine.CliffCurve) string {
	tails, verdicts := 0, 0
	for _, n := range c.Counts {
		tails += n.Tails
		verdicts += n.Verdicts
	}
	if c.Cliff > 0 {
		call := ""
		if c.Cliff-1 < len(c.Calls) {
			tc := c.Calls[c.Cliff-1]
			call = ": " + tc.Tool + " " + tc.Summary
		}
		return fmt.Sprintf("▲ cliff at step %d%s", c.Cliff, call)
	}
	if c.Verdict != "" {
		// A search that named no cliff says what it found instead.
		return fmt.Sprintf("%s · %d tails, %d with a verdict", c.Verdict, tails, verdicts)
	}
	return fmt.Sprintf("%d tails, %d with a verdict, from %d steps", tails, verdicts, len(c.Counts))
}

// swapPane is a swap's table per cut: whose workspace, who continues, natively or by
// handoff, and the three effects, the ones distinguishable from zero marked.
type swapPane struct {
	env  *env
	dir  string
	w, h int
}

func (p *swapPane) title() string                     { return "Workspace or agent" }
func (p *swapPane) setSize(w, h int)                  { p.w, p.h = w, h }
func (p *swapPane) refresh()                          {}
func (p *swapPane) capturing() bool                   { return false }
func (p *swapPane) help() []key.Binding               { return nil }
func (p *swapPane) rowHelp() []key.Binding            { return nil }
func (p *swapPane) update(tea.KeyMsg) (bool, tea.Cmd) { return false, nil }
func (p *swapPane) rows() int                         { return 6 }

func (p *swapPane) view(bool) string {
	st := p.env.store.run(p.dir).state
	cuts := engine.SwapTable(st)
	return swapTable(p.env.st, cuts, engine.SwapFamilyOf(cuts), p.w, p.h)
}

// swapTable draws each cut in two lines: the cells, then the effects at the family's level
// (a control cut's effects dim: they make no calls).
func swapTable(s styles, cuts []engine.SwapCut, family engine.SwapFamily, w, h int) string {
	if len(cuts) == 0 {
		return s.tone(dim, fit("the originals first; the tails come after them", w))
	}
	cell := func(c engine.SwapCut, ws, who, how string) string {
		if x, ok := c.Cell(ws, who, how); ok && x.Verdicts > 0 {
			return fmt.Sprintf("%d/%d", x.Passed, x.Verdicts)
		}
		return "–"
	}
	var lines []string
	for i, c := range cuts {
		name := fmt.Sprintf("cut %d", i+1)
		if c.Control {
			name = fmt.Sprintf("cut %d (control: step 0)", i+1)
		}
		if c.Originals > 1 {
			name += fmt.Sprintf(" · %d pairs", c.Originals)
		}
		lines = append(lines, fit(fmt.Sprintf("%s  a's: a %s b %s · b's: a %s b %s · own native: a %s b %s", name,
			cell(c, "a", "a", "handoff"), cell(c, "a", "b", "handoff"), cell(c, "b", "a", "handoff"), cell(c, "b", "b", "handoff"),
			cell(c, "a", "a", "native"), cell(c, "b", "b", "native")), w))
		var parts []string
		for _, e := range c.Effects {
			text := fmt.Sprintf("%s %+.2f (%+.2f…%+.2f)", e.Name, e.Diff, e.Lo, e.Hi)
			switch {
			case !e.Measured:
				parts = append(parts, s.tone(dim, e.Name+" –"))
			case e.Significant:
				parts = append(parts, s.tone(accent, text+" ≠0"))
			default:
				parts = append(parts, s.tone(dim, text))
			}
		}
		lines = append(lines, "       "+strings.Join(parts, "  "))
	}
	if len(lines) > h {
		// The latest cuts matter most once they come in.
		lines = lines[len(lines)-h:]
	}
	if family.Calls > 0 && len(lines) < h {
		lines = append(lines, s.tone(dim, fmt.Sprintf("effects at %.4g%% each: Bonferroni over %d calls", 100*family.Level, family.Calls)))
	}
	for i := range lines {
		lines[i] = fit(lines[i], w)
	}
	return strings.Join(lines, "\n")
}
