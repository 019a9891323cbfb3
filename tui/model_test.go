package tui

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

func TestKeysGoToTheFocusedPaneOnly(t *testing.T) {
	stateDir, _, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 100, 30)
	runs, probes := tm.home.runs.t, tm.home.probes.t
	if tm.home.ring.current() != tm.home.runs {
		t.Fatal("home should open with the runs pane focused")
	}
	tm.key("down")
	if runs.cursor != 1 || probes.cursor != 0 {
		t.Fatalf("down on runs moved runs %d, probes %d", runs.cursor, probes.cursor)
	}
	tm.key("tab")
	if tm.home.ring.current() != tm.home.probes {
		t.Fatal("tab did not move focus to probes")
	}
	tm.key("down")
	tm.key("down")
	if runs.cursor != 1 || probes.cursor != 2 {
		t.Fatalf("down on probes moved runs %d, probes %d", runs.cursor, probes.cursor)
	}
	tm.key("shift+tab")
	if tm.home.ring.current() != tm.home.runs {
		t.Fatal("shift+tab did not move focus back to runs")
	}
}

func TestEnterOpensAndEscGoesBack(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 100, 30)
	selectRow(t, tm.home.runs.t, cal)
	tm.key("enter")
	if tm.page() != runPage || tm.run.dir != cal {
		t.Fatalf("enter on a run: page %v", tm.pages)
	}
	selectRow(t, tm.run.tails.t, "a-1")
	tm.key("enter")
	if tm.page() != tailPage || tm.tail.id != "a-1" {
		t.Fatalf("enter on a tail: page %v", tm.pages)
	}
	// The finished tail's calls come from the journal (the store let go of them).
	if n := tm.tail.list.len(); n != 11 || !tm.tail.loaded {
		t.Fatalf("a-1 shows %d tool calls, want 11 (loaded %v)", n, tm.tail.loaded)
	}
	tm.key("esc")
	if tm.page() != runPage || tm.tail != nil {
		t.Fatalf("esc from the tail: %v", tm.pages)
	}
	tm.key("esc")
	if tm.page() != homePage || tm.run != nil {
		t.Fatalf("esc from the run: %v", tm.pages)
	}
	tm.key("esc")
	if tm.page() != homePage {
		t.Fatal("esc on home must stay home")
	}
}

func TestWindowSizeReachesEveryView(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 80, 24)
	tm.send(openRunMsg{cal})
	tm.send(openTailMsg{cal, "a-2"})
	tm.send(tea.WindowSizeMsg{Width: 160, Height: 48})
	if tm.home.runs.t.w != 158 || tm.home.probes.t.w != 158 {
		t.Errorf("home panes: runs %d probes %d", tm.home.runs.t.w, tm.home.probes.t.w)
	}
	if tm.run.tails.t.w != 158 || tm.tail.calls.w != 158 {
		t.Errorf("run tails %d, tail calls %d", tm.run.tails.t.w, tm.tail.calls.w)
	}
	for i, l := range strings.Split(tm.View(), "\n") {
		if w := len([]rune(l)); w != 160 {
			t.Fatalf("line %d is %d wide", i, w)
		}
	}
}

func TestFeedsReachTheViewsOfTheirRun(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 100, 30)
	tm.send(openRunMsg{cal})
	tm.send(openTailMsg{cal, "a-2"})
	if tm.tail.list.len() != 4 {
		t.Fatalf("a-2 starts with %d calls", tm.tail.list.len())
	}
	j, _ := journal.OpenJournal(cal)
	j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-2", Tool: "Bash", Summary: "make test", Calls: 5}})
	j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "b-2", Tool: "Read", Summary: "go.mod", Calls: 4}})
	j.Append(&journal.Event{TailFinished: &journal.TailFinished{ID: "a-2", Status: "passed", Passed: true, Detail: "make test ok", Calls: 5}})
	j.Close()
	tm.w.lastScan = time.Time{}
	tm.send(tm.w.poll(time.Now())) // the feed's commands read the tail's new calls
	if n := tm.tail.list.len(); n != 5 || summary(t, tm.tail, 4) != "make test" {
		t.Fatalf("the tail view has %d calls", n)
	}
	if !strings.Contains(tm.View(), "check: passed — make test ok") {
		t.Fatalf("the verdict is not shown:\n%s", tm.View())
	}
	tm.key("esc")
	if !strings.Contains(tm.View(), "Read go.mod") {
		t.Fatalf("the run view did not follow b-2:\n%s", tm.View())
	}
}

func TestActionsCallTheEngine(t *testing.T) {
	stateDir, cal, crashed := demoState(t)
	stub := newStub()
	stub.setAlive(crashed, false)
	tm := newTestModel(t, stateDir, stub, 120, 30)

	// p on a probe re-probes; the pane says so until the engine answers.
	tm.key("tab")
	selectRow(t, tm.home.probes.t, "codex")
	_, ask := tm.Update(keyMsg("p"))
	_, probe := tm.Update(ask()) // the probe is under way: its command has not answered
	if !strings.Contains(tm.View(), "probing…") {
		t.Fatalf("no probing mark:\n%s", tm.View())
	}
	tm.send(probe())
	if strings.Contains(tm.View(), "probing…") {
		t.Fatal("the probing mark stayed after the answer")
	}

	// r resumes a crashed run and refuses a live one.
	tm.key("tab")
	selectRow(t, tm.home.runs.t, cal)
	tm.key("r")
	if !tm.statusErr || !strings.Contains(tm.status, "only a crashed run") {
		t.Fatalf("resume of a live run: %q", tm.status)
	}
	selectRow(t, tm.home.runs.t, crashed)
	tm.key("r")

	// R retries a failed tail and refuses a running one; k asks first.
	tm.send(openRunMsg{cal})
	selectRow(t, tm.run.tails.t, "a-2")
	tm.key("R")
	if !strings.Contains(tm.status, "only a failed tail") {
		t.Fatalf("retry of a running tail: %q", tm.status)
	}
	selectRow(t, tm.run.tails.t, "a-1")
	tm.key("R")
	if !strings.Contains(tm.status, "retry a-1 of calibrate-demo: started; the rate keeps attempt 1: failed") {
		t.Errorf("retry of a failed tail: status %q, want it to say the rate keeps the failure", tm.status)
	}
	selectRow(t, tm.run.tails.t, "a-2")
	tm.key("x")
	if tm.confirm == nil || !strings.Contains(tm.View(), "Kill tail a-2 of calibrate-demo?") {
		t.Fatalf("k did not ask:\n%s", tm.View())
	}
	tm.key("n")
	tm.key("x")
	tm.key("l")

	want := []call{
		{"Probe", []string{"codex"}},
		{"Resume", []string{crashed}},
		{"Retry", []string{cal, "a-1"}},
		{"Kill", []string{cal, "a-2", string(journal.KillLeftOut)}},
	}
	if got := stub.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("engine calls:\n got %v\nwant %v", got, want)
	}
	if tm.statusErr || !strings.Contains(tm.status, "kill a-2 of calibrate-demo: asked") {
		t.Fatalf("status after the kill: %q", tm.status)
	}
}

func TestEngineErrorsShowInTheFooter(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	stub := newStub()
	stub.err = errors.New("tail a-1 has no capsule store; fix: rerun with capsules on")
	tm := newTestModel(t, stateDir, stub, 160, 30)
	tm.send(openRunMsg{cal})
	selectRow(t, tm.run.tails.t, "a-1")
	tm.key("R")
	if !tm.statusErr || !strings.Contains(tm.View(), "retry a-1 of calibrate-demo: tail a-1 has no capsule store") {
		t.Fatalf("footer:\n%s", tm.View())
	}
}

func TestAnAppWithoutEngineOnlyWatches(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	m := newModel(modelConfig{styles: asciiStyles(), now: func() time.Time { return t0 }, probes: true})
	tm := &testModel{model: m, t: t, w: newWatcher(stateDir, nil, nil, nil)}
	tm.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	tm.pollNow()
	tm.send(openRunMsg{cal})
	selectRow(t, tm.run.tails.t, "a-1")
	tm.key("R")
	if !tm.statusErr || !strings.Contains(tm.status, "only watches journals") {
		t.Fatalf("status: %q", tm.status)
	}
}

func TestDialogsAndFiltersTakeTheKeys(t *testing.T) {
	stateDir, _, crashed := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 120, 30)
	// The filter line takes q (it does not quit) until enter.
	tm.key("/")
	tm.typeText("crashq")
	tm.key("backspace")
	tm.key("enter")
	if rows := tm.home.runs.t.rows; len(rows) != 1 || rows[0].key != crashed {
		t.Fatalf("filtered rows: %v", rows)
	}
	tm.key("esc") // clears the filter first
	if len(tm.home.runs.t.rows) != 3 {
		t.Fatalf("esc did not clear the filter: %d rows", len(tm.home.runs.t.rows))
	}
	// The form takes every key but esc.
	tm.key("n")
	if tm.form == nil {
		t.Fatal("n did not open the form")
	}
	tm.typeText("q?")
	if tm.form == nil || tm.form.inputs[0].Value() != "q?" {
		t.Fatalf("the form lost its keys: %+v", tm.form)
	}
	tm.key("esc")
	if tm.form != nil {
		t.Fatal("esc did not close the form")
	}
	// ? shows help generated from the key map, the keys of this view; any key closes it.
	tm.key("?")
	v := tm.View()
	for _, b := range []string{"resume run", "delete run", "attach agent", "probe", "new run", "next pane"} {
		if !strings.Contains(v, b) {
			t.Errorf("help lacks %q:\n%s", b, v)
		}
	}
	tm.key("x")
	if tm.showHelp {
		t.Fatal("help stayed open")
	}
}

func TestHelpFollowsTheKeyMap(t *testing.T) {
	stateDir, _, crashed := demoState(t)
	stub := newStub()
	stub.setAlive(crashed, false)
	tm := newTestModel(t, stateDir, stub, 200, 30)
	tm.env.keys.Resume.SetKeys("ctrl+r")
	tm.env.keys.Resume.SetHelp("ctrl+r", "pick up the run")
	// The runs pane, on the crashed run: the footer offers to resume it.
	selectRow(t, tm.home.runs.t, crashed)
	if !strings.Contains(tm.View(), "ctrl+r pick up the run") {
		t.Fatalf("footer did not follow the key map:\n%s", tm.View())
	}
}

func TestFormStartsACalibrate(t *testing.T) {
	stateDir, _, _ := demoState(t)
	stub := newStub()
	tm := newTestModel(t, stateDir, stub, 120, 30)
	tm.key("n")
	tm.typeText("fix the bug")
	tm.key("tab")
	tm.typeText("claude --model haiku; codex")
	tm.key("tab")
	tm.typeText("make test")
	tm.key("tab") // timeout
	tm.key("backspace")
	tm.key("backspace")
	tm.key("backspace")
	tm.typeText("90s")
	tm.key("tab")
	tm.key("backspace")
	tm.key("backspace")
	tm.typeText("x")
	tm.key("ctrl+s")
	if tm.form == nil || !strings.Contains(tm.View(), `runs "x" is not a whole number`) {
		t.Fatalf("a bad runs value was not refused:\n%s", tm.View())
	}
	tm.key("backspace")
	tm.typeText("20")
	tm.key("tab") // jobs
	tm.key("tab") // project
	tm.key("tab") // script
	tm.typeText("demo/model.toml")
	tm.key("ctrl+s")
	want := []call{{"StartCalibrate", []string{"fix the bug", "claude --model haiku|codex", "make test", "1m30s", "20", "2", ".", "demo/model.toml"}}}
	if got := stub.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("engine calls %v, want %v", got, want)
	}
	if tm.form != nil || tm.page() != runPage || tm.run.dir != "/nowhere/calibrate/new" {
		t.Fatalf("the new run is not open: %v", tm.pages)
	}
}

func TestLiveViewEndsWithItsRun(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	m := newModel(modelConfig{styles: asciiStyles(), now: func() time.Time { return t0 }, live: cal})
	tm := &testModel{model: m, t: t, w: newWatcher("", []string{cal}, nil, nil)}
	tm.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	tm.pollNow()
	if tm.page() != runPage || !strings.Contains(tm.View(), "Tails of calibrate-demo") {
		t.Fatalf("the live view does not open on its run:\n%s", tm.View())
	}
	tm.key("esc")
	tm.key("n")
	if tm.page() != runPage || tm.form != nil {
		t.Fatal("the live view has no home and no form")
	}
	j, _ := journal.OpenJournal(cal)
	j.Append(&journal.Event{RunFinished: &journal.RunFinished{Report: "ok"}})
	j.Close()
	f := tm.w.poll(time.Now())
	_, cmd := tm.Update(f)
	if cmd == nil {
		t.Fatal("no command after the run finished")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("the live view did not end with its run")
	}
	_ = stateDir
	_, cmd = tm.Update(keyMsg("ctrl+c"))
	if !tm.interrupted || cmd == nil {
		t.Fatal("ctrl+c in the live view is an interruption")
	}
}

func TestRunViewGetsItsKindPaneWhenTheFirstEventArrivesLate(t *testing.T) {
	stateDir := t.TempDir()
	dir := filepath.Join(stateDir, "calibrate", "late")
	tm := newTestModel(t, stateDir, newStub(), 100, 30)
	tm.send(openRunMsg{dir})
	if tm.run.summary != nil {
		t.Fatal("a run with no events has no kind yet")
	}
	r := openRun(t, stateDir, "calibrate", "late")
	r.at(0, journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
	tm.pollNow()
	if tm.run.summary == nil || !strings.Contains(tm.View(), "Pass rate") {
		t.Fatalf("no pass rate pane:\n%s", tm.View())
	}
}
