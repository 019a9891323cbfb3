package tui

import (
	"strings"
	"testing"
)

// j/k/g/G/ctrl+d/ctrl+u move as in less, vim and k9s; k is never kill (x and ctrl+k are,
// still confirmed); ? and q stay in the footer at 80 columns.
func TestKeysOfHabit(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 80, 24)
	if f := tm.footer(); !strings.Contains(f, "? help") || !strings.Contains(f, "q quit") {
		t.Errorf("footer at 80 columns: %q", f)
	}
	tm.send(openRunMsg{cal})
	tb := tm.run.tails.t
	at := func() string { return tb.rows[tb.cursor].key }
	tm.key("G")
	last := at()
	tm.key("g")
	if first := at(); first == last {
		t.Fatalf("g and G select the same row %q", first)
	}
	tm.key("j")
	second := at()
	tm.key("k")
	if tm.confirm != nil {
		t.Fatal("k asked to kill a tail")
	}
	tm.key("j")
	tm.key("j")
	tm.key("k")
	if at() != second {
		t.Errorf("j j k from the second row is on %q, want %q", at(), second)
	}
	tm.send(keyMsg("ctrl+d"))
	if at() == second {
		t.Error("ctrl+d did not move")
	}
	tm.send(keyMsg("ctrl+u"))
	if at() == last {
		t.Error("ctrl+u did not move")
	}
	selectRow(t, tb, "a-2") // running
	tm.key("x")
	if tm.confirm == nil || !strings.Contains(tm.View(), "Kill tail a-2") {
		t.Fatalf("x did not ask to kill:\n%s", tm.View())
	}
	tm.key("n")
	tm.send(keyMsg("ctrl+k"))
	if tm.confirm == nil {
		t.Fatal("ctrl+k did not ask to kill")
	}
	if f := tm.footer(); !strings.Contains(f, "? help") || !strings.Contains(f, "q quit") {
		t.Errorf("run view footer at 80 columns: %q", f)
	}
}
