package tui

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"tare/engine/journal"
)

// waitLine waits for one line of output that holds every part (a table row, say).
func waitLine(t *testing.T, tm *teatest.TestModel, parts ...string) {
	t.Helper()
	waitLines(t, tm, parts)
}

// waitLines waits until, for each set of parts, one line of the output holds them all. Lines
// one frame draws are waited for together: a wait drops what it read, and the renderer does
// not draw an unchanged line again.
func waitLines(t *testing.T, tm *teatest.TestModel, sets ...[]string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return hasLines(b, sets...) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

// hasLines says whether, for each set of parts, one line of b holds them all.
func hasLines(b []byte, sets ...[]string) bool {
	lines := bytes.Split(b, []byte("\n"))
	for _, parts := range sets {
		if !slices.ContainsFunc(lines, func(l []byte) bool {
			for _, p := range parts {
				if !bytes.Contains(l, []byte(p)) {
					return false
				}
			}
			return true
		}) {
			return false
		}
	}
	return true
}

// flowApp is the app on the demo state in a real program (teatest), fed by a real bridge.
func flowApp(t *testing.T, stub *stubEngine, stateDir string) *teatest.TestModel {
	m := newModel(modelConfig{engine: stub, styles: asciiStyles(), now: func() time.Time { return t0 }, agents: []string{"claude"}, probes: true})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(110, 30))
	done := make(chan struct{})
	ctx, cancel := contextWithCancel()
	go func() {
		defer close(done)
		newBridge(newWatcher(stateDir, nil, stub.Alive, nil), tm.GetProgram().Send).run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return tm
}

func quit(t *testing.T, tm *teatest.TestModel) *model {
	tm.Send(keyMsg("q"))
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*model)
}

// Open a run, open one of its tails (which keeps following its tool calls), and go back.
func TestFlowOpenRunOpenTailBack(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := flowApp(t, newStub(), stateDir)
	waitLine(t, tm, "calibrate-demo", "calibrate live", "5/2/10")

	tm.Send(keyMsg("enter"))
	waitOut(t, tm, "Tails of calibrate-demo", "Pass rate", "a claude --model haiku")
	for i := 0; i < 4; i++ {
		tm.Send(keyMsg("down"))
	}
	tm.Send(keyMsg("enter"))
	waitOut(t, tm, "tail a-2 · side a (claude --model haiku)", "go test ./cart/...", "check: once the agent ends")

	r, err := journal.OpenJournal(cal)
	if err != nil {
		t.Fatal(err)
	}
	r.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-2", Tool: "Bash", Summary: "make lint", Seconds: 1.5, Calls: 5}})
	r.Close()
	waitLine(t, tm, "5", "Bash", "make lint", "1.5s")

	tm.Send(keyMsg("esc"))
	waitOut(t, tm, "Tails of calibrate-demo")
	tm.Send(keyMsg("esc"))
	waitOut(t, tm, "Probes")
	if m := quit(t, tm); !reflect.DeepEqual(m.pages, []page{homePage}) || m.run != nil || m.tail != nil {
		t.Fatalf("ended on %v", m.pages)
	}
}

// A crashed run is resumed with r: the engine is called with its directory and the view
// follows what the resumed run journals.
func TestFlowResumeACrashedRun(t *testing.T) {
	stateDir, _, crashed := demoState(t)
	stub := newStub()
	stub.setAlive(crashed, false)
	stub.hook = func(c call) {
		if c.method != "Resume" {
			return
		}
		// What the engine does: take the run over and journal the rerun.
		stub.setAlive(crashed, true)
		j, err := journal.OpenJournal(c.args[0])
		if err != nil {
			t.Error(err)
			return
		}
		defer j.Close()
		j.Append(&journal.Event{Resumed: &journal.Resumed{Rerun: []string{"a-1"}}})
		j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: "a-1", Side: "a", How: "fresh", Attempt: 1}})
		j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-1", Tool: "Read", Summary: "go.mod after resume", Calls: 1}})
	}
	tm := flowApp(t, stub, stateDir)
	waitLine(t, tm, "calibrate-crashed", "crashed", "1/1/4")

	tm.Send(keyMsg("down"))
	tm.Send(keyMsg("r"))
	waitOut(t, tm, "resume calibrate-crashed: started")
	waitLine(t, tm, "calibrate-crashed", "live", "1/1/4")

	tm.Send(keyMsg("enter"))
	waitLine(t, tm, "a-1", "running", "Read go.mod after resume")
	m := quit(t, tm)
	if calls := stub.Calls(); !reflect.DeepEqual(calls, []call{{"Resume", []string{crashed}}}) {
		t.Fatalf("engine calls: %v", calls)
	}
	if st := m.env.store.run(crashed).state; st.Tails["a-1"].Attempt.N != 1 {
		t.Fatalf("a-1 after the resume: %+v", st.Tails["a-1"])
	}
}

// x on a running tail asks how the kill counts, with two answers: n keeps the tail, y is
// no answer, f kills it counted as failed, and the answer reaches the engine (whose journal
// keeps it: TestCalibrateKillPolicy) and the tail's row.
func TestFlowKillATailWithConfirmation(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	stub := newStub()
	stub.hook = func(c call) {
		if c.method != "Kill" {
			return
		}
		j, err := journal.OpenJournal(c.args[0])
		if err != nil {
			t.Error(err)
			return
		}
		defer j.Close()
		j.Append(&journal.Event{TailFinished: &journal.TailFinished{ID: c.args[1], Status: journal.StatusNoVerdict, Reason: journal.ReasonKilled,
			Kill: journal.KillAs(c.args[2]), Detail: "killed by the operator after 4 calls; not checked", Calls: 4}})
	}
	tm := flowApp(t, stub, stateDir)
	waitLine(t, tm, "calibrate-demo", "live")
	tm.Send(keyMsg("enter"))
	waitOut(t, tm, "Tails of calibrate-demo")
	for i := 0; i < 4; i++ {
		tm.Send(keyMsg("down"))
	}
	tm.Send(keyMsg("x"))
	waitOut(t, tm, "Kill tail a-2 of calibrate-demo?", "f count as failed", "l leave out as an infrastructure fault", "n cancel")
	tm.Send(keyMsg("y")) // not an answer to this question
	tm.Send(keyMsg("n"))
	waitOut(t, tm, "nothing killed")
	if calls := stub.Calls(); len(calls) != 0 {
		t.Fatalf("y or n called the engine: %v", calls)
	}
	tm.Send(keyMsg("x"))
	waitOut(t, tm, "Kill tail a-2 of calibrate-demo?")
	tm.Send(keyMsg("f"))
	// The tail's line comes from the journal, the status from the engine's answer: either can
	// be drawn first, and in the same frame, so both are waited for together.
	waitLines(t, tm, []string{"kill a-2 of calibrate-demo: asked"}, []string{"a-2", "failed", "killed by the operator after 4 calls"})
	m := quit(t, tm)
	if calls := stub.Calls(); !reflect.DeepEqual(calls, []call{{"Kill", []string{cal, "a-2", string(journal.KillFailed)}}}) {
		t.Fatalf("engine calls: %v", calls)
	}
	if !strings.Contains(m.status, "kill a-2 of calibrate-demo: asked") {
		t.Fatalf("status %q", m.status)
	}
}
