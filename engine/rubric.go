package engine

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Rubric is what a judge scores a page by: the criteria as written, and the scale they state.
type Rubric struct {
	Path   string
	Text   string
	Lo, Hi int
}

// scaleLine is the rubric's statement of its scale, e.g. "scale: 1-10" (markdown emphasis and
// list marks around it are fine).
var scaleLine = regexp.MustCompile(`(?im)^[\s#>*_-]*scale[*_]*\s*[:=][*_]*\s*(\d+)\s*(?:-|–|to|\.\.)\s*(\d+)\b`)

// LoadRubric reads a rubric and the scale it states. Every refusal is one line naming the
// file and the fix.
func LoadRubric(path string) (Rubric, error) {
	if path == "" {
		return Rubric{}, errors.New("--rubric: give the rubric file; fix: --rubric FILE, a file with the criteria and a line such as scale: 1-10")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Rubric{}, fmt.Errorf("--rubric %s: %v; fix: give the rubric file, with the criteria and a line such as scale: 1-10", path, errors.Unwrap(err))
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		return Rubric{}, fmt.Errorf("--rubric %s: the file is empty; fix: write the criteria and a line such as scale: 1-10", path)
	}
	m := scaleLine.FindStringSubmatch(text)
	if m == nil {
		return Rubric{}, fmt.Errorf("--rubric %s: states no scale; fix: add a line such as scale: 1-10", path)
	}
	lo, err1 := strconv.Atoi(m[1])
	hi, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || lo >= hi {
		return Rubric{}, fmt.Errorf("--rubric %s: scale %s-%s is not a range; fix: give the lowest score, then a higher highest, e.g. scale: 1-10", path, m[1], m[2])
	}
	return Rubric{Path: path, Text: text + "\n", Lo: lo, Hi: hi}, nil
}

// Scale is the rubric's scale as written, "1-10".
func (r Rubric) Scale() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// CheckThreshold refuses a threshold outside the rubric's scale: no score could reach it, or
// every score would.
func (r Rubric) CheckThreshold(t float64) error {
	if t < float64(r.Lo) || t > float64(r.Hi) {
		return fmt.Errorf("--threshold %g: outside the rubric's scale %s; fix: give a threshold from %d to %d", t, r.Scale(), r.Lo, r.Hi)
	}
	return nil
}
