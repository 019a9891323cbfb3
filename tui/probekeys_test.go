package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/probe"
)

// press gives the model a key and the intent it emits, and returns the engine call that
// intent started, unrun: it stays in flight.
func (tm *testModel) press(k string) []tea.Cmd {
	_, cmd := tm.Update(keyMsg(k))
	if cmd == nil {
		return nil
	}
	if _, next := tm.Update(cmd()); next != nil {
		return []tea.Cmd{next}
	}
	return nil
}

// p probes; while that probe is in flight more presses start no other room. Enter opens the
// reading itself, every line of it, scrollable; esc goes back.
func TestProbeKeysProbeOnceAndEnterOpensTheReading(t *testing.T) {
	stateDir, _, _ := demoState(t)
	r := &probe.Reading{Agent: "claude", Version: "2.1.197", Project: demoProject, Room: probe.RoomModelServer, Bwrap: "0.8.0",
		Network: "no network", ControlSaw: map[string]string{}}
	for i := 0; i < 40; i++ {
		r.Declared = append(r.Declared, fmt.Sprintf("file number %02d of the room", i))
	}
	if err := probe.StoreReading(stateDir, r); err != nil {
		t.Fatal(err)
	}
	stub := newStub()
	tm := newTestModel(t, stateDir, stub, 100, 30)
	tm.key("tab") // the probes pane
	selectRow(t, tm.home.probes.t, "claude")

	var inflight []tea.Cmd
	for i := 0; i < 3; i++ {
		inflight = append(inflight, tm.press("p")...)
	}
	if len(inflight) != 1 {
		t.Fatalf("three p presses while probing left %d probes in flight, want 1", len(inflight))
	}
	if !strings.Contains(tm.View(), "being probed already") {
		t.Errorf("the second press said nothing:\n%s", tm.View())
	}

	tm.send(keyMsg("enter"))
	for _, c := range stub.Calls() {
		if c.method == "Probe" {
			t.Fatalf("enter probed: %v", stub.Calls())
		}
	}
	if tm.page() != readerPage {
		t.Fatalf("enter did not open the reading:\n%s", tm.View())
	}
	v := tm.View()
	for _, want := range []string{"tare probe claude 2.1.197", "declared  file number 00"} {
		if !strings.Contains(v, want) {
			t.Errorf("the reading's page lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "file number 39") {
		t.Fatalf("40 declared lines fit a 30-row screen?\n%s", v)
	}
	tm.key("G")
	if v := tm.View(); !strings.Contains(v, "file number 39") || !strings.Contains(v, "tare: 0.00") {
		t.Errorf("G did not scroll to the reading's end:\n%s", v)
	}
	tm.key("esc")
	if tm.page() != homePage {
		t.Errorf("esc did not go back: page %v", tm.page())
	}
}
