package journal

import (
	"fmt"
	"testing"
)

// TestAlignCallsMarksTheFirstStepThatDiffers: calls are matched by tool and input with case
// and spacing folded; an extra call in one tail shifts nothing after it, a changed call is
// one row, and the first row that is not a match is the divergence.
func TestAlignCallsMarksTheFirstStepThatDiffers(t *testing.T) {
	c := func(tool, in string) CallDetail { return CallDetail{Tool: tool, Input: in} }
	rows := func(steps []SideStep) string {
		s := ""
		for _, st := range steps {
			s += fmt.Sprintf("%d/%d/%v ", st.A, st.B, st.Same)
		}
		return s
	}
	cases := []struct {
		name    string
		a, b    []CallDetail
		want    string
		diverge int
	}{
		{"same", []CallDetail{c("Bash", "ls"), c("Read", "a.go")}, []CallDetail{c("bash", "ls "), c("Read", "a.go")}, "0/0/true 1/1/true ", -1},
		{"changed second", []CallDetail{c("Write", "a"), c("Bash", "cat a"), c("Bash", "done")}, []CallDetail{c("Write", "a"), c("Bash", "wc a"), c("Bash", "done")},
			"0/0/true 1/1/false 2/2/true ", 1},
		{"extra call in b", []CallDetail{c("Write", "a"), c("Bash", "go test")}, []CallDetail{c("Write", "a"), c("Read", "a"), c("Bash", "go test")},
			"0/0/true -1/1/false 1/2/true ", 1},
		{"b empty", []CallDetail{c("Bash", "ls")}, nil, "0/-1/false ", 0},
	}
	for _, tc := range cases {
		steps, d := AlignCalls(tc.a, tc.b)
		if got := rows(steps); got != tc.want || d != tc.diverge {
			t.Errorf("%s: rows %q diverge %d, want %q diverge %d", tc.name, got, d, tc.want, tc.diverge)
		}
	}
}
