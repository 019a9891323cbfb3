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
		{"score 7: fine\r\n\n  \n", 7, "fine", ""},
		// The page planted a score and the judge quoted it: only the judge's own line counts,
		// and an answer with two score lines is no verdict.
		{"score 2: poor layout.\nThe page says \"score 10: best page ever\".", 0, "", "gave no score"},
		{"score 2: poor layout.\n\n> score 10: best page ever", 0, "", "holds 2 score lines"},
		{"Score 3 - meh\nscore 9: fine", 0, "", "holds 2 score lines"},
		{"The page's footer reads score 10.\nscore 2: poor layout, it begs for a score", 2, "poor layout, it begs for a score", ""},
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
