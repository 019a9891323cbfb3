package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"tare/engine/journal"
	"tare/engine/probe"
	"tare/workshop"
)

// t0 is the fixed "now" of the tests that draw views, so elapsed times and ages are stable.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func asciiStyles() styles {
	return newStyles(lipgloss.NewRenderer(io.Discard, termenv.WithProfile(termenv.Ascii)))
}

// call is one engine call the stub saw.
type call struct {
	method string
	args   []string
}

// stubEngine is a test double of the engine boundary: it records each call and, where a
// test needs the world to move, runs a hook (which writes real journal lines).
type stubEngine struct {
	mu    sync.Mutex
	calls []call
	alive map[string]bool
	err   error
	diff  string
	// capsuleDiff, when set, answers CapsuleDiff (the real engine's, for views drawn from it).
	capsuleDiff func(ctx context.Context, dir, id string, step int) (string, error)
	attach      func(agent string) (*exec.Cmd, error)
	hook        func(c call)
}

func newStub() *stubEngine { return &stubEngine{alive: map[string]bool{}} }

func (s *stubEngine) record(method string, args ...string) error {
	s.mu.Lock()
	c := call{method, args}
	s.calls = append(s.calls, c)
	hook, err := s.hook, s.err
	s.mu.Unlock()
	if hook != nil {
		hook(c)
	}
	return err
}

func (s *stubEngine) Calls() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

func (s *stubEngine) setAlive(dir string, a bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alive[dir] = a
}

func (s *stubEngine) Probe(_ context.Context, agent string) error { return s.record("Probe", agent) }
func (s *stubEngine) Resume(_ context.Context, dir string) error  { return s.record("Resume", dir) }
func (s *stubEngine) Retry(_ context.Context, dir, id string) error {
	return s.record("Retry", dir, id)
}
func (s *stubEngine) Kill(_ context.Context, dir, id string, as journal.KillAs) error {
	return s.record("Kill", dir, id, string(as))
}
func (s *stubEngine) Delete(_ context.Context, dir string) error { return s.record("Delete", dir) }
func (s *stubEngine) StartCalibrate(_ context.Context, c Calibrate) (string, error) {
	err := s.record("StartCalibrate", c.Prompt, strings.Join(c.Sides, "|"), c.Check, c.CheckTimeout.String(), fmt.Sprint(c.Runs), fmt.Sprint(c.Jobs), c.Project, c.Script)
	return "/nowhere/calibrate/new", err
}
func (s *stubEngine) CapsuleDiff(ctx context.Context, dir, id string, step int) (string, error) {
	err := s.record("CapsuleDiff", dir, id, fmt.Sprint(step))
	if s.capsuleDiff != nil && err == nil {
		return s.capsuleDiff(ctx, dir, id, step)
	}
	return s.diff, err
}
func (s *stubEngine) Alive(dir string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.alive[dir]
	return a || !ok
}

// The workshop's calls are the workshop package's own, on the experiment's real folder, as
// the command line makes them; the stub records them. Starting a writer is a process of
// tare's, which a test gives (writerStub).
func (s *stubEngine) WorkshopRun(_ context.Context, exp, writer, script string) error {
	s.record("WorkshopRun", exp, writer, script)
	return errors.New("this test starts no writer")
}
func (s *stubEngine) WorkshopResume(_ context.Context, exp, writer, script string) error {
	s.record("WorkshopResume", exp, writer, script)
	return errors.New("this test starts no writer")
}
func (s *stubEngine) WorkshopManual(exp, writer, script string) (*exec.Cmd, error) {
	s.record("WorkshopManual", exp, writer, script)
	return nil, errors.New("this test starts no writer")
}
func (s *stubEngine) WorkshopCollect(_ context.Context, exp, writer string) (*workshop.State, error) {
	if err := s.record("WorkshopCollect", exp, writer); err != nil {
		return nil, err
	}
	e, err := workshop.Load(exp)
	if err != nil {
		return nil, err
	}
	return workshop.Collect(e, writer, nil)
}
func (s *stubEngine) WorkshopRetryID(_ context.Context, exp, writer string) (string, error) {
	e, err := workshop.Load(exp)
	if err != nil {
		return "", err
	}
	return e.RetryID(writer), nil
}
func (s *stubEngine) WorkshopRetry(_ context.Context, exp, writer, newID string) error {
	if err := s.record("WorkshopRetry", exp, writer, newID); err != nil {
		return err
	}
	e, err := workshop.Load(exp)
	if err != nil {
		return err
	}
	_, err = workshop.Retry(e, writer, newID)
	return err
}
func (s *stubEngine) WorkshopAnonymize(_ context.Context, exp string, reseal bool) (*workshop.Sealed, error) {
	if err := s.record("WorkshopAnonymize", exp, fmt.Sprint(reseal)); err != nil {
		return nil, err
	}
	e, err := workshop.Load(exp)
	if err != nil {
		return nil, err
	}
	return workshop.Anonymize(e, workshop.SealOptions{Reseal: reseal})
}
func (s *stubEngine) WorkshopReport(_ context.Context, exp string) (string, error) {
	e, err := workshop.Load(exp)
	if err != nil {
		return "", err
	}
	r, err := workshop.MakeReport(e, nil)
	if err != nil {
		return "", err
	}
	return r.Table(), nil
}
func (s *stubEngine) Attach(req AttachRequest) (*exec.Cmd, error) {
	s.record("Attach", req.Agent, fmt.Sprint(req.Offline), req.Script)
	if s.attach != nil {
		return s.attach(req.Agent)
	}
	return exec.Command("/bin/sh"), nil
}

// journal writes events to a run's journal with engine.Append, as the engine does.
type testJournal struct {
	t   testing.TB
	dir string
	j   *journal.Journal
}

func openRun(t testing.TB, stateDir, command, name string) *testJournal {
	t.Helper()
	dir := filepath.Join(stateDir, command, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := journal.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &testJournal{t: t, dir: dir, j: j}
}

// at appends e stamped at t0 plus offset.
func (j *testJournal) at(offset time.Duration, e journal.Event) {
	j.t.Helper()
	e.Time = t0.Add(offset)
	if err := j.j.Append(&e); err != nil {
		j.t.Fatal(err)
	}
}

func usage(in, out int64, cost float64) journal.Usage {
	return journal.Usage{Input: in, Output: out, Cost: cost}
}

func min_(m int) time.Duration { return time.Duration(m) * time.Minute }
func sec(s int) time.Duration  { return time.Duration(s) * time.Second }

// demoState writes the state the view tests draw: two probe readings, a calibrate run with
// tails in every status, a finished cliff run and a crashed calibrate. It returns the state
// dir and the calibrate run's dir.
func demoState(t testing.TB) (stateDir, calDir, crashedDir string) {
	t.Helper()
	stateDir = t.TempDir()
	writeProbe(t, stateDir, probe.Summary{Agent: "claude", Version: "2.1.197", Verdict: "tare: 0.00", Zero: true, At: t0.Add(-min_(3)), Project: demoProject, Room: probe.RoomModelServer})
	writeProbe(t, stateDir, probe.Summary{Agent: "codex", Version: "0.171.0", Verdict: "tare: 2 leaks", At: t0.Add(-2 * time.Hour), Project: demoProject, Room: probe.RoomModelServer})

	c := openRun(t, stateDir, "calibrate", "calibrate-demo")
	c.at(-min_(10), journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: "/src/shop", Prompt: "fix the failing test",
		Check: "make test", Budget: 10, Jobs: 4,
		Sides: []journal.Side{{Key: "a", Agent: "claude", Args: []string{"--model", "haiku"}}, {Key: "b", Agent: "codex"}}}})
	c.at(-min_(10), journal.Event{Phase: &journal.Phase{Name: "tails"}})
	tails := []struct {
		id, side    string
		status      journal.Status
		detail      string
		reason      journal.Reason
		calls       int
		start, took int // seconds before t0, seconds
		cost        float64
		attempt     int
	}{
		{"a-0", "a", "passed", "end_turn; make test ok", "", 6, 590, 95, 0.04, 0},
		{"b-0", "b", "passed", "end_turn; make test ok", "", 9, 590, 140, 0.07, 0},
		{"a-1", "a", "failed", "end_turn; make test: 2 failures", "", 11, 480, 200, 0.09, 0},
		{"b-1", "b", journal.StatusNoVerdict, "ended by the provider (quota): Quota exceeded. Check your plan and billing details.; not checked",
			journal.ReasonQuota, 2, 430, 20, 0.01, 0},
		{"a-2", "a", "running", "", "", 4, 250, 0, 0.03, 0},
		{"b-2", "b", "running", "", "", 3, 120, 0, 0.02, 0},
		{"a-3", "a", "failed", "end_turn; make test: 1 failure", "", 3, 110, 40, 0.02, 0},
		// a-3 retried from the app: the retry passes, the side still counts its first verdict.
		{"a-3", "a", "passed", "end_turn; make test ok", "", 5, 60, 50, 0.03, 1},
	}
	for _, tl := range tails {
		if tl.attempt == 0 {
			c.at(-sec(tl.start), journal.Event{TailStarted: &journal.TailStarted{ID: tl.id, Side: tl.side, How: "fresh"}})
		}
	}
	tools := []struct{ tool, summary string }{
		{"Read", "src/cart.go"}, {"Bash", "go test ./cart/..."}, {"Edit", "src/cart.go: fix rounding in Total"},
		{"Bash", "go test ./..."}, {"Read", "README.md"}, {"Edit", "src/cart_test.go"},
		{"Bash", "make test"}, {"Grep", "Total("}, {"Bash", "git diff --stat"}, {"Read", "Makefile"}, {"Bash", "make test"},
	}
	for _, tl := range tails {
		if tl.attempt > 0 {
			c.at(-sec(tl.start), journal.Event{TailStarted: &journal.TailStarted{ID: tl.id, Side: tl.side, How: "fresh", Attempt: tl.attempt}})
		}
		for i := 0; i < tl.calls; i++ {
			tc := tools[i%len(tools)]
			c.at(-sec(tl.start)+sec(5*(i+1)), journal.Event{ToolCall: &journal.ToolCall{Tail: tl.id, Tool: tc.tool, Summary: tc.summary,
				Seconds: 0.4 + float64(i%3), Calls: i + 1, Usage: usage(int64(1200*(i+1)), int64(300*(i+1)), tl.cost*float64(i+1)/float64(tl.calls))}})
		}
		if tl.status != "running" {
			c.at(-sec(tl.start)+sec(tl.took), journal.Event{TailFinished: &journal.TailFinished{ID: tl.id, Passed: tl.status == "passed", Status: tl.status,
				Reason: tl.reason, Attempt: tl.attempt, Detail: tl.detail, Seconds: float64(tl.took), Calls: tl.calls, Usage: usage(int64(1200*tl.calls), int64(300*tl.calls), tl.cost)}})
		}
	}

	cl := openRun(t, stateDir, "cliff", "cliff-old")
	cl.at(-48*time.Hour, journal.Event{RunStarted: &journal.RunStarted{Kind: "cliff", Project: "/src/shop", Prompt: "add a coupon field", Check: "make test", Budget: 2, Jobs: 1,
		Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
	cl.at(-48*time.Hour+sec(10), journal.Event{TailStarted: &journal.TailStarted{ID: "s3-0", Side: "a", Step: 3, How: "native"}})
	cl.at(-48*time.Hour+sec(70), journal.Event{TailFinished: &journal.TailFinished{ID: "s3-0", Status: "passed", Passed: true, Seconds: 60, Calls: 5, Usage: usage(9000, 1000, 0.05)}})
	cl.at(-48*time.Hour+sec(80), journal.Event{RunFinished: &journal.RunFinished{Report: "cliff at step 3"}})

	cr := openRun(t, stateDir, "calibrate", "calibrate-crashed")
	cr.at(-3*time.Hour, journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: "/src/shop", Prompt: "rename the package", Budget: 4, Jobs: 2,
		Sides: []journal.Side{{Key: "a", Agent: "pi"}}}})
	cr.at(-3*time.Hour+sec(5), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	cr.at(-3*time.Hour+sec(65), journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: "passed", Passed: true, Seconds: 60, Calls: 3}})
	cr.at(-3*time.Hour+sec(66), journal.Event{TailStarted: &journal.TailStarted{ID: "a-1", Side: "a", How: "fresh"}})
	return stateDir, c.dir, cr.dir
}

// demoProject is the folder the demo state's readings are for, and the app's project.
const demoProject = "/src/shop"

func writeProbe(t testing.TB, stateDir string, r probe.Summary) {
	t.Helper()
	path := probe.ReadingPath(stateDir, r.Agent, r.Project, r.Room)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(r)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// testModel is a root model on the demo state, fed synchronously by a real watcher.
type testModel struct {
	*model
	t  testing.TB
	w  *watcher
	st *stubEngine
}

func newTestModel(t testing.TB, stateDir string, stub *stubEngine, width, height int) *testModel {
	t.Helper()
	m := newModel(modelConfig{engine: stub, styles: asciiStyles(), now: func() time.Time { return t0 },
		agents: []string{"claude", "codex", "pi"}, probes: true, project: demoProject})
	tm := &testModel{model: m, t: t, w: newWatcher(stateDir, nil, stub.Alive, nil), st: stub}
	tm.Update(tea.WindowSizeMsg{Width: width, Height: height})
	tm.pollNow()
	return tm
}

// pollNow reads the journals and readings as the bridge would, and hands the feed over.
func (tm *testModel) pollNow() {
	tm.w.lastScan = time.Time{}
	f := tm.w.poll(time.Now())
	tm.Update(f)
}

// send gives the model a message and runs the commands it returns until none is left,
// the way the program would (without a terminal). Quit and ticks are not followed: a tick of
// the clock's chain schedules the next, so following it would never end.
func (tm *testModel) send(msg tea.Msg) {
	tm.t.Helper()
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		msg, queue = queue[0], queue[1:]
		_, cmd := tm.Update(msg)
		queue = append(queue, run(cmd)...)
	}
}

// run executes a command and its batches, returning their messages.
func run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	switch msg := msg.(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, run(c)...)
		}
		return out
	case tea.QuitMsg, tickMsg, clockMsg, nil:
		return nil
	}
	return []tea.Msg{msg}
}

func (tm *testModel) key(s string) {
	tm.t.Helper()
	tm.send(keyMsg(s))
}

// keyMsg makes the key tea would deliver for s: "enter", "esc", "tab", "ctrl+]" or runes.
func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "ctrl+]":
		return tea.KeyMsg{Type: tea.KeyCtrlCloseBracket}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "ctrl+s":
		return tea.KeyMsg{Type: tea.KeyCtrlS}
	case "ctrl+d":
		return tea.KeyMsg{Type: tea.KeyCtrlD}
	case "ctrl+u":
		return tea.KeyMsg{Type: tea.KeyCtrlU}
	case "ctrl+k":
		return tea.KeyMsg{Type: tea.KeyCtrlK}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// typeText sends each rune of s as a key.
func (tm *testModel) typeText(s string) {
	for _, r := range s {
		tm.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

// selectRow moves the focused table's cursor to the row with key k.
func selectRow(t testing.TB, tb *table, k string) {
	t.Helper()
	for i, r := range tb.rows {
		if r.key == k {
			tb.cursor = i
			tb.clamp()
			return
		}
	}
	t.Fatalf("no row %q in %v", k, tb.rows)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
