package tui

import (
	"errors"
	"strings"
	"testing"
)

// When the engine refuses a run, the form stays open with every value typed, and the whole
// reason shows under the field it is about; fixing that field and sending again starts it.
func TestFormKeepsItsValuesWhenTheEngineRefuses(t *testing.T) {
	stateDir, _, _ := demoState(t)
	stub := newStub()
	reason := `tare calibrate did not start: --side "clod": unknown agent "clod"; fix: use one of claude, codex, pi (run tare doctor to see which are installed)`
	stub.err = errors.New(reason)
	tm := newTestModel(t, stateDir, stub, 80, 30)
	tm.key("n")
	tm.typeText("fix the bug")
	tm.key("tab")
	tm.typeText("clod")
	tm.key("tab")
	tm.typeText("make test")
	tm.key("ctrl+s")
	if tm.form == nil {
		t.Fatalf("the form closed on a refusal:\n%s", tm.View())
	}
	v := tm.form.view(74) // the dialog's body, as View draws it at this size
	flat := strings.Join(strings.Fields(v), " ")
	if !strings.Contains(flat, `unknown agent "clod"; fix: use one of claude, codex, pi (run tare doctor to see which are installed)`) {
		t.Errorf("the whole reason is not on screen:\n%s", v)
	}
	if strings.Contains(flat, "calibrate: tare calibrate") || strings.Contains(flat, "tare: --side") {
		t.Errorf("stacked prefixes:\n%s", v)
	}
	vals := tm.form.values()
	if vals["prompt"] != "fix the bug" || vals["sides"] != "clod" || vals["check"] != "make test" {
		t.Fatalf("values lost: %v", vals)
	}
	if tm.form.focus != 1 {
		t.Errorf("focus on field %d, want the sides field", tm.form.focus)
	}
	stub.err = nil
	tm.key("backspace")
	tm.key("backspace")
	tm.key("backspace")
	tm.key("backspace")
	tm.typeText("claude")
	tm.key("ctrl+s")
	if tm.form != nil || tm.page() != runPage {
		t.Fatalf("the fixed form did not start the run:\n%s", tm.View())
	}
	if calls := stub.Calls(); len(calls) != 2 || calls[1].args[1] != "claude" {
		t.Fatalf("engine calls: %v", calls)
	}
}
