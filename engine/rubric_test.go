package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRubricScale(t *testing.T) {
	cases := []struct {
		text   string
		lo, hi int
		err    string
	}{
		{"Clarity.\nscale: 1-10\n", 1, 10, ""},
		{"# Rubric\n**Scale:** 0 to 5\n", 0, 5, ""},
		{"- scale = 1..7", 1, 7, ""},
		{"Score it from 1 to 10.", 0, 0, "states no scale"},
		{"scale: 5-5", 0, 0, "not a range"},
		{"scale: 10-1", 0, 0, "not a range"},
		{"", 0, 0, "the file is empty"},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), "rubric.md")
		os.WriteFile(p, []byte(c.text), 0o644)
		r, err := LoadRubric(p)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "fix:")):
			t.Errorf("%q: got %v, want an error with %q and the fix", c.text, err, c.err)
		case c.err == "" && (err != nil || r.Lo != c.lo || r.Hi != c.hi):
			t.Errorf("%q: got %d-%d, %v; want %d-%d", c.text, r.Lo, r.Hi, err, c.lo, c.hi)
		}
	}
}

func TestParseScore(t *testing.T) {
	r := Rubric{Lo: 1, Hi: 10}
	cases := []struct {
		text   string
		score  int
		reason string
		err    string
	}{
		{"score 7: clean layout", 7, "clean layout", ""},
		{"I looked at it.\n\n**Score: 4** - cramped", 4, "cramped", ""},
		{"score 8/10: good", 8, "good", ""},
		{"first score 3: x\nscore 9: on reflection, fine", 9, "on reflection, fine", ""},
		{"score 11: too good", 0, "", "off the rubric's scale 1-10"},
		{"looks fine to me", 0, "", "gave no score"},
	}
	for _, c := range cases {
		n, reason, err := parseScore(c.text, r)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: got %v, want %q", c.text, err, c.err)
		case c.err == "" && (err != nil || n == nil || *n != c.score || reason != c.reason):
			t.Errorf("%q: got %v %q %v, want %d %q", c.text, n, reason, err, c.score, c.reason)
		}
	}
}

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
