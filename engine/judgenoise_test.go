package engine

import (
	"strings"
	"testing"
)

func TestSpreadStraddles(t *testing.T) {
	score := func(n int) Judgement { return Judgement{Score: &n} }
	p := PageJudgements{Judgements: []Judgement{score(8), score(3), {Error: "no score"}, score(5), score(6)}}
	s := p.Spread()
	if s.Min != 3 || s.Max != 8 || s.Median != 5.5 || s.Errors != 1 || len(s.Scores) != 4 {
		t.Fatalf("spread %+v", s)
	}
	// Inside: some judgements pass and some fail. At the minimum every one passes.
	for th, want := range map[float64]bool{3: false, 3.5: true, 8: true, 8.5: false, 1: false} {
		if got := s.Straddles(th); got != want {
			t.Errorf("threshold %g: straddles %v, want %v", th, got, want)
		}
	}
}

// TestJudgeTextIsPrintable: the judge's words, the page's file names and what it asked for
// come from agents; a terminal escape among them is shown, not sent.
func TestJudgeTextIsPrintable(t *testing.T) {
	n := 6
	rep := JudgeReport{Scale: [2]int{1, 10}, Pages: []PageJudgements{{
		Dir: "/site", Blocked: []string{"https://x.test/\x1b]52;c;aGk=\x07"}, Left: []string{"\x1b[2Jnotes-claude.md (named for an agent)"},
		Judgements: []Judgement{{Score: &n, Reason: "fine\x1b[2J"}, {Score: &n, Reason: "fine"}},
	}}}
	for name, text := range map[string]string{"judge": rep.JudgeText(5), "judge-noise": rep.NoiseText(nil)} {
		if strings.ContainsAny(text, "\x1b\x07") || !strings.Contains(text, `\x1b`) {
			t.Errorf("%s: raw escapes in %q", name, text)
		}
	}
}
