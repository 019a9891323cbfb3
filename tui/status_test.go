package tui

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// An action that only started says "started", not "done"; a status clears itself (a note
// after a few seconds, an error later); a failure says each name once.
func TestStatusTellsTheTruthAndClears(t *testing.T) {
	stateDir, _, crashed := demoState(t)
	stub := newStub()
	stub.setAlive(crashed, false)
	tm := newTestModel(t, stateDir, stub, 120, 30)
	tm.send(openRunMsg{crashed})
	tm.key("r")
	if !strings.Contains(tm.status, "resume calibrate-crashed: started") || strings.Contains(tm.status, "done") {
		t.Fatalf("after r: %q", tm.status)
	}
	tm.Update(tickMsg(t0.Add(3 * time.Second)))
	if tm.status == "" {
		t.Fatal("the note cleared within 3s")
	}
	tm.Update(tickMsg(t0.Add(7 * time.Second)))
	if tm.status != "" {
		t.Fatalf("the note stayed: %q", tm.status)
	}

	tm.done(actionMsg{kind: probeKind, owner: "probe:agy", agent: "agy", what: "probe agy", err: errors.New("agy: agy not found (looked in /opt/agents)")})
	if tm.status != "probe agy: agy not found (looked in /opt/agents)" {
		t.Errorf("stacked: %q", tm.status)
	}
	tm.done(actionMsg{kind: resumeKind, owner: crashed, what: "resume calibrate-crashed", err: errors.New("tare: the run is live")})
	if tm.status != "resume calibrate-crashed: the run is live" {
		t.Errorf("stacked: %q", tm.status)
	}
	tm.Update(tickMsg(t0.Add(10 * time.Second)))
	if tm.status == "" {
		t.Fatal("an error cleared within 10s")
	}
	tm.Update(tickMsg(t0.Add(25 * time.Second)))
	if tm.status != "" {
		t.Fatalf("the error stayed: %q", tm.status)
	}
}
