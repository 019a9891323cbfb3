package tui

import (
	"strings"
	"testing"
)

// S sorts the tails: by status (running first, passed last), by time (longest first), by
// cost (dearest first), then back to the start order; the title says which.
func TestTailsSort(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 120, 30)
	tm.send(openRunMsg{cal})
	keys := func() string {
		var out []string
		for _, r := range tm.run.tails.t.rows {
			out = append(out, r.key)
		}
		return strings.Join(out, " ")
	}
	start := keys()
	tm.key("S")
	if got := keys(); !strings.HasPrefix(got, "a-2 b-2 ") || !strings.HasSuffix(got, "a-0 b-0 a-3") || !strings.Contains(tm.View(), "by status") {
		t.Errorf("by status: %s", got)
	}
	tm.key("S")
	if got := keys(); !strings.HasPrefix(got, "a-2 a-1 ") {
		t.Errorf("by time: %s", got)
	}
	tm.key("S")
	if got := keys(); !strings.HasPrefix(got, "a-1 b-0 ") {
		t.Errorf("by cost: %s", got)
	}
	tm.key("S")
	if got := keys(); got != start {
		t.Errorf("back to the start order: %s, want %s", got, start)
	}
}
