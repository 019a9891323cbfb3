package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"tare/engine"
	"tare/engine/journal"
)

// statusCell is a tail's status as the tails table shows it: a judge's score against the
// threshold where the judge scored ("8≥5 passed", "3<5 failed", "score 6" with no
// threshold), the status word otherwise.
func statusCell(t *journal.TailState) cell {
	if c, ok := stalledCell(t); ok {
		return c
	}
	word := tailWord(t)
	j := t.Judge
	switch {
	case j == nil || j.Score == nil || t.Status == journal.StatusRunning:
		return cell{word, statusTone(word)}
	case j.Threshold == nil:
		return cell{fmt.Sprintf("score %d", *j.Score), accent}
	}
	op := "≥"
	if float64(*j.Score) < *j.Threshold {
		op = "<"
	}
	return cell{fmt.Sprintf("%d%s%g %s", *j.Score, op, *j.Threshold, word), statusTone(word)}
}

// judgeLine is the tail view's verdict line for a tail the judge scored: the score on the
// rubric's scale, the threshold, the verdict and the judge's reason.
func judgeLine(s styles, t *journal.TailState) string {
	j := t.Judge
	hint := s.tone(dim, " · s: screenshot path")
	if j.Score == nil {
		return s.tone(dim, "judge: no score ("+statusWord(t.Status)+")") + " — " + orDash(j.Error) + hint
	}
	line := fmt.Sprintf("judge: score %d on %d-%d", *j.Score, j.Scale[0], j.Scale[1])
	if j.Threshold != nil {
		line += fmt.Sprintf(" · threshold %g: ", *j.Threshold) + s.tone(statusTone(string(t.Status)), string(t.Status))
	}
	return line + " — " + orDash(j.Reason) + hint
}

// showShot is the footer note with the tail's screenshot path, or nil when the judge did not
// score that tail.
func showShot(t *journal.TailState) tea.Cmd {
	if t == nil || t.Judge == nil {
		return nil
	}
	if t.Judge.Screenshot == "" {
		return emit(noteMsg(fmt.Sprintf("tail %s: the judge took no screenshot (%s)", t.ID, orDash(t.Judge.Error))))
	}
	return emit(noteMsg(fmt.Sprintf("screenshot of %s: %s", t.ID, t.Judge.Screenshot)))
}

// noisePane is a judge-noise run's scores per page: each page's strip on the rubric's scale,
// from its lowest score to its highest with the median marked, and the threshold, with the
// verdict on it the command line gives (engine.Spread decides both).
type noisePane struct {
	env  *env
	dir  string
	w, h int
}

func (p *noisePane) title() string                     { return "Judge's scores per page (min–median–max)" }
func (p *noisePane) setSize(w, h int)                  { p.w, p.h = w, h }
func (p *noisePane) refresh()                          {}
func (p *noisePane) capturing() bool                   { return false }
func (p *noisePane) help() []key.Binding               { return nil }
func (p *noisePane) rowHelp() []key.Binding            { return nil }
func (p *noisePane) update(tea.KeyMsg) (bool, tea.Cmd) { return false, nil }

// rows is a line per page and one for the threshold's verdict.
func (p *noisePane) rows() int { return len(p.env.store.run(p.dir).state.Sides) + 1 }

// noisePage is one page of a judge-noise run as its journal has it so far.
type noisePage struct {
	side      journal.Side
	page      engine.PageJudgements
	scale     [2]int
	threshold *float64
	tolerance float64
}

// noisePages gathers each page's finished judgements from the run's tails.
func noisePages(st *journal.RunState) []noisePage {
	pages := make([]noisePage, len(st.Sides))
	index := map[string]int{}
	for i, s := range st.Sides {
		pages[i] = noisePage{side: s, page: engine.PageJudgements{Dir: s.Prompt}}
		index[s.Key] = i
	}
	for _, id := range st.Order {
		t := st.Tails[id]
		i, ok := index[t.Side]
		if !ok || t.Judge == nil {
			continue
		}
		np := &pages[i]
		np.scale, np.threshold, np.tolerance = t.Judge.Scale, t.Judge.Threshold, t.Judge.Tolerance
		np.page.Judgements = append(np.page.Judgements, engine.Judgement{Score: t.Judge.Score, Error: t.Judge.Error})
	}
	return pages
}

func (p *noisePane) view(bool) string {
	st := p.env.store.run(p.dir).state
	s := p.env.st
	pages := noisePages(st)
	lw := min(max(p.w/3, 8), 40)
	var lines []string
	var noisy, unmeasured, open []string
	var threshold *float64
	for _, np := range pages {
		sp := np.page.Spread()
		if np.threshold != nil {
			threshold = np.threshold
		}
		nums := fmt.Sprintf(" %d/%d scored", len(sp.Scores), len(np.page.Judgements))
		switch {
		case sp.Measured:
			nums += fmt.Sprintf("  %d–%g–%d", sp.Min, sp.Median, sp.Max)
		case !np.running(st):
			nums += "  not measured"
			unmeasured = append(unmeasured, np.side.Key)
		}
		if threshold != nil && sp.Straddles(*threshold) {
			noisy = append(noisy, np.side.Key)
		}
		if threshold != nil {
			tol := np.tolerance
			if tol == 0 {
				tol = engine.DefaultTolerance
			}
			if f := sp.FlipAt(*threshold, tol); !f.Cleared {
				open = append(open, fmt.Sprintf("%s (%d of %d on the other side, up to %.2f; cleared below %g)", np.side.Key, f.Other, f.Scored, f.Upper, tol))
			}
		}
		label := np.side.Key + " " + np.side.Prompt
		scale := fmt.Sprintf("%d ", np.scale[0])
		end := fmt.Sprintf(" %d", np.scale[1])
		bw := p.w - lw - 1 - len(scale) - len(end) - ansi.StringWidth(nums)
		lines = append(lines, fit(label, lw)+" "+scale+noiseStrip(s, sp, np.scale, np.threshold, bw)+end+nums)
	}
	if len(lines) == 0 {
		return s.tone(dim, "no pages yet")
	}
	lines = append(lines, noiseVerdict(s, st, threshold, noisy, unmeasured, open))
	return strings.Join(lines, "\n")
}

// running reports whether any judgement of the page has not finished.
func (np noisePage) running(st *journal.RunState) bool {
	for _, id := range st.Order {
		if t := st.Tails[id]; t.Side == np.side.Key && t.Status == journal.StatusRunning {
			return true
		}
	}
	return len(np.page.Judgements) == 0
}

// noiseVerdict is the pane's last line: what the scores so far say of the threshold. It is
// cleared only where every page's flip rate is bounded below the tolerance (open are the
// pages where it is not), as the report says.
func noiseVerdict(s styles, st *journal.RunState, threshold *float64, noisy, unmeasured, open []string) string {
	_, running, _ := st.Counts()
	switch {
	case threshold == nil:
		return s.tone(dim, "no threshold given: the strips show how far the judge's scores vary")
	case len(noisy) > 0:
		return s.tone(bad, fmt.Sprintf("threshold %g refused: inside the range of %s, where the verdict is the judge's noise", *threshold, strings.Join(noisy, ", ")))
	case len(unmeasured) > 0:
		return s.tone(warn, fmt.Sprintf("threshold %g not settled: %s not measured (fewer than 2 scores)", *threshold, strings.Join(unmeasured, ", ")))
	case running > 0 || !st.Finished:
		return s.tone(dim, fmt.Sprintf("threshold %g: judging…", *threshold))
	case len(open) > 0:
		return s.tone(warn, fmt.Sprintf("threshold %g not cleared: the flip rate of %s", *threshold, strings.Join(open, ", ")))
	}
	return s.tone(good, fmt.Sprintf("threshold %g cleared: every page's flip rate is bounded below the tolerance", *threshold))
}

// noiseStrip draws a page's scores on the rubric's scale in w cells: the range from the
// lowest to the highest score as a thick line over a thin track, the median as a dot, the
// threshold as a bar. Red when the threshold falls inside the range.
func noiseStrip(s styles, sp engine.Spread, scale [2]int, threshold *float64, w int) string {
	if w < 3 || scale[1] <= scale[0] {
		return strings.Repeat(" ", max(w, 0))
	}
	at := func(v float64) int {
		i := int((v-float64(scale[0]))/float64(scale[1]-scale[0])*float64(w-1) + 0.5)
		return min(max(i, 0), w-1)
	}
	cells := []rune(strings.Repeat("·", w))
	if len(sp.Scores) > 0 {
		for i := at(float64(sp.Min)); i <= at(float64(sp.Max)); i++ {
			cells[i] = '━'
		}
	}
	if threshold != nil {
		cells[at(*threshold)] = '│'
	}
	if len(sp.Scores) == 0 {
		return s.tone(dim, string(cells))
	}
	cells[at(sp.Median)] = '●'
	tone := accent
	switch {
	case !sp.Measured:
		tone = dim
	case threshold != nil && sp.Straddles(*threshold):
		tone = bad
	case threshold != nil:
		tone = good
	}
	return s.tone(tone, string(cells))
}

// judgeKeys is the screenshot key for a run the judge scores (a judge-noise run, or a run
// whose check is tare's judge), and nothing for any other.
func judgeKeys(k KeyMap, st *journal.RunState) []key.Binding {
	if st.Kind == "judge-noise" || strings.Contains(st.Check, " judge ") {
		return []key.Binding{k.Shot}
	}
	return nil
}
