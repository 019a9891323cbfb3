package tui

import (
	"strings"
	"testing"
)

// D deletes a finished run after a confirmation (n keeps it); a live run is refused.
func TestDeleteAFinishedRun(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	stub := newStub()
	tm := newTestModel(t, stateDir, stub, 120, 30)
	tm.key("tab") // the Runs pane (after Probes)
	if tm.ring().current() != tm.home.runs {
		tm.key("tab")
	}
	selectRow(t, tm.home.runs.t, cal)
	tm.key("D")
	if tm.confirm != nil || !strings.Contains(tm.status, "is live") {
		t.Fatalf("D on a live run: confirm %v, status %q", tm.confirm != nil, tm.status)
	}
	var old string
	for _, r := range tm.home.runs.t.rows {
		if strings.HasSuffix(r.key, "cliff-old") {
			old = r.key
		}
	}
	selectRow(t, tm.home.runs.t, old)
	tm.key("D")
	if tm.confirm == nil || !strings.Contains(tm.View(), "Delete run cliff-old?") {
		t.Fatalf("no confirmation:\n%s", tm.View())
	}
	tm.key("n")
	if len(stub.Calls()) != 0 {
		t.Fatalf("n deleted: %v", stub.Calls())
	}
	tm.key("D")
	tm.key("y")
	if c := stub.Calls(); len(c) != 1 || c[0].method != "Delete" || c[0].args[0] != old {
		t.Fatalf("engine calls: %v", c)
	}
	for _, r := range tm.home.runs.t.rows {
		if r.key == old {
			t.Errorf("the deleted run is still listed:\n%s", tm.View())
		}
	}
}
