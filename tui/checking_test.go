package tui

import (
	"strings"
	"testing"

	"tare/engine/journal"
)

// Once a tail's agent has ended and its check runs, the tail says "checking", for how long
// and of how long it may, in the Tails table, the tail's header and the plain lines.
func TestCheckingState(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	j := openRun(t, stateDir, "calibrate", "calibrate-demo")
	j.at(-sec(30), journal.Event{TailChecking: &journal.TailChecking{ID: "a-2", TimeoutSeconds: 600}})
	tm := newTestModel(t, stateDir, newStub(), 160, 40)
	tm.send(openRunMsg{cal})
	if row := rowOf(t, tm, "a-2"); !strings.Contains(row, "checking") || !strings.Contains(row, "check running 30s of at most 10m00s") {
		t.Errorf("a-2's row: %q", rowOf(t, tm, "a-2"))
	}
	if l := rowOf(t, tm, "b-2"); !strings.Contains(l, "running") {
		t.Errorf("b-2's agent still runs: %q", l)
	}
	tm.send(openTailMsg{cal, "a-2"})
	if v := tm.View(); !strings.Contains(v, "checking: check running 30s of at most 10m00s") {
		t.Errorf("a-2's header:\n%s", v)
	}
	if l := Line(journal.Event{Time: t0, Run: "r", TailChecking: &journal.TailChecking{ID: "a-2", TimeoutSeconds: 90}}); !strings.Contains(l, "tail a-2 checking") {
		t.Errorf("plain line: %q", l)
	}
}

func rowOf(t *testing.T, tm *testModel, sub string) string {
	t.Helper()
	for _, l := range strings.Split(tm.View(), "\n") {
		if strings.Contains(l, " "+sub+" ") {
			return l
		}
	}
	return ""
}
