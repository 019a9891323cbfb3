package tui

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/stats"
)

// paneEnv is a store built from the demo state's journals, for panes tested on their own.
func paneEnv(t *testing.T) (*env, string, string) {
	stateDir, cal, crashed := demoState(t)
	e := &env{st: asciiStyles(), keys: DefaultKeyMap(), store: newStore([]string{"claude", "codex", "pi"}, demoProject), now: func() time.Time { return t0 }}
	w := newWatcher(stateDir, nil, func(d string) bool { return d != crashed }, nil)
	e.store.apply(w.poll(time.Now()))
	return e, cal, crashed
}

// intent runs a pane's command and returns the message it asks with.
func intent(t *testing.T, used bool, cmd tea.Cmd) tea.Msg {
	t.Helper()
	if !used || cmd == nil {
		t.Fatalf("the pane did not take the key (used %v)", used)
	}
	return cmd()
}

func TestProbesPane(t *testing.T) {
	e, _, _ := paneEnv(t)
	p := newProbesPane(e)
	p.setSize(60, 6)
	p.refresh()
	v := p.view(true)
	for _, want := range []string{"> claude   tare: 0.00", "codex    tare: 2 leaks", "0.171.0", "2h ago", "pi       no reading"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if msg := asks(t, p, "enter"); msg != (openReadingMsg{"claude"}) {
		t.Errorf("enter asks %#v", msg)
	}
	if msg := asks(t, p, "p"); msg != (probeMsg{"claude"}) {
		t.Errorf("p asks %#v", msg)
	}
	p.update(keyMsg("down"))
	if msg := asks(t, p, "a"); msg != (attachFormMsg{"codex"}) {
		t.Errorf("a asks %#v", msg)
	}
	e.store.probing["pi"] = true
	p.refresh()
	if !strings.Contains(p.view(false), "pi       probing…") {
		t.Errorf("no probing mark:\n%s", p.view(false))
	}
}

// TestProbesPaneShowsThisProjectsReadingsOnly: a reading holds for its project and room. The
// pane shows this project's newest reading of each agent with its room, and never another
// project's "tare: 0.00", nor a reading stored before readings named their room.
func TestProbesPaneShowsThisProjectsReadingsOnly(t *testing.T) {
	stateDir := t.TempDir()
	writeProbe(t, stateDir, probe.Summary{Agent: "claude", Verdict: "tare: 0.00", Zero: true, At: t0, Project: "/src/other", Room: probe.RoomModelServer})
	writeProbe(t, stateDir, probe.Summary{Agent: "codex", Verdict: "tare: 1 leak", At: t0.Add(-time.Hour), Project: demoProject, Room: probe.RoomModelServer})
	writeProbe(t, stateDir, probe.Summary{Agent: "codex", Verdict: "tare: 0.00", Zero: true, At: t0, Project: "/src/other", Room: probe.RoomModelServer})
	writeProbe(t, stateDir, probe.Summary{Agent: "pi", Verdict: "not proven (blind)", At: t0.Add(-time.Hour), Project: demoProject, Room: probe.RoomModelServer})
	writeProbe(t, stateDir, probe.Summary{Agent: "pi", Verdict: "tare: 0.00", Zero: true, At: t0, Project: demoProject, Room: probe.RoomModelServerHostNet})
	// As the engine stored readings before: one file per agent, no room, any project.
	legacy, _ := json.Marshal(probe.Summary{Agent: "claude", Verdict: "tare: 0.00", Zero: true, At: t0, Project: demoProject})
	if err := os.WriteFile(filepath.Join(stateDir, probe.ProbesDir, "claude.json"), legacy, 0o644); err != nil {
		t.Fatal(err)
	}
	e := &env{st: asciiStyles(), keys: DefaultKeyMap(), store: newStore([]string{"claude", "codex", "pi"}, demoProject), now: func() time.Time { return t0 }}
	e.store.apply(newWatcher(stateDir, nil, nil, nil).poll(time.Now()))
	p := newProbesPane(e)
	p.setSize(90, 6)
	p.refresh()
	v := p.view(true)
	for _, want := range []string{"claude   no reading of this project yet", "codex    tare: 1 leak", "pi       tare: 0.00", "host network"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Count(v, "tare: 0.00") != 1 {
		t.Errorf("another project's (or an unnamed room's) 0.00 is shown:\n%s", v)
	}
	if !strings.Contains(p.title(), demoProject) {
		t.Errorf("the pane's title %q does not name the project", p.title())
	}
}

// asks gives a pane a key and returns the message its command asks with.
func asks(t *testing.T, p pane, k string) tea.Msg {
	t.Helper()
	used, cmd := p.update(keyMsg(k))
	return intent(t, used, cmd)
}

func TestRunsPane(t *testing.T) {
	e, cal, crashed := paneEnv(t)
	p := newRunsPane(e)
	p.setSize(100, 8)
	p.refresh()
	v := p.view(true)
	for _, want := range []string{
		"> calibrate-demo", "calibrate live         5/2/10 a 1/3 · b 1/1 +1nv", "10m00s  $0.31",
		"calibrate-crashed", "crashed       1/1/4 a 1/1", "cliff-old", "done          1/0/2",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if msg := asks(t, p, "enter"); msg != (openRunMsg{cal}) {
		t.Errorf("enter asks %#v", msg)
	}
	p.update(keyMsg("down"))
	if msg := asks(t, p, "r"); msg != (resumeMsg{crashed}) {
		t.Errorf("r asks %#v", msg)
	}
	if used, _ := p.update(keyMsg("x")); used {
		t.Error("a key the pane has no use for was taken")
	}
}

func TestTailsPaneAndTally(t *testing.T) {
	e, cal, _ := paneEnv(t)
	p := newTailsPane(e, cal)
	p.setSize(110, 10)
	p.refresh()
	v := p.view(true)
	for _, want := range []string{
		"> a-0      a       – passed        1m35s     6   9.0k  $0.04 end_turn; make test ok",
		// A retried tail shows its latest attempt, every attempt's tokens and cost, and the
		// attempt its side counts.
		"a-1      a       – failed        3m20s    11  16.5k  $0.09",
		"a-3      a       – passed          50s     5  12.0k  $0.05 attempt 2 · counts attempt 1: failed",
		"b-1      b       – no verdict      20s     2   3.0k  $0.01 ended by the provider (quota)",
		"b-2      b       – running       2m00s     3   4.5k  $0.02 Edit src/cart.go",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	for k, want := range map[string]tea.Msg{"enter": openTailMsg{cal, "a-0"}, "R": retryMsg{cal, "a-0"}, "x": killMsg{cal, "a-0"}} {
		if msg := asks(t, p, k); msg != want {
			t.Errorf("%s asks %#v, want %#v", k, msg, want)
		}
	}

	tally := &tallyPane{env: e, dir: cal}
	tally.setSize(200, 2)
	v = tally.view(false)
	// The retry of a-3 passed, yet a counts a-3's first verdict (failed); b leaves out its
	// quota-walled tail, says so, and gives the rate's bounds.
	for _, want := range []string{"a claude --model haiku", "1/3  33%    6%–79%  1 running   $0.21 · 1 retried (1 failed)",
		"1/1 100%  21%–100%  1 running   $0.10 · 1 no verdict, left out (1 quota) · 1/2-2/2 if the 1 left out had failed/passed (95% 0.09-1.00)"} {
		if !strings.Contains(v, want) {
			t.Errorf("tally lacks %q:\n%s", want, v)
		}
	}
}

func TestPassBar(t *testing.T) {
	s := asciiStyles()
	for _, tc := range []struct {
		passed, done int
		want         string
	}{
		{0, 0, "····················"},
		{10, 10, "··············━━━━━●"}, // 72%–100%
		{0, 10, "●━━━━━··············"},  // 0%–28%
		{5, 10, "····━━━━━━●━━━━━····"},
	} {
		lo, hi := stats.Wilson(tc.passed, tc.done)
		got := passBar(s, journal.SideTally{Passed: tc.passed, Verdicts: tc.done, Lo: lo, Hi: hi}, 20)
		if got != tc.want {
			t.Errorf("%d/%d: %q, want %q", tc.passed, tc.done, got, tc.want)
		}
	}
}

// The live bar's colour is the same whatever the rate: green once the interval clears 0.5
// (red once it falls below) would be a test peeked at after every tail.
func TestPassBarColourIsNoPeekedTest(t *testing.T) {
	s := newStyles(lipgloss.NewRenderer(io.Discard, termenv.WithTTY(true), termenv.WithUnsafe(), termenv.WithProfile(termenv.ANSI256)))
	colour := func(passed, done int) string {
		lo, hi := stats.Wilson(passed, done)
		bar := passBar(s, journal.SideTally{Passed: passed, Verdicts: done, Lo: lo, Hi: hi}, 20)
		return bar[:strings.IndexAny(bar, "·━●")] // the escape before the cells
	}
	winning, losing, even := colour(10, 10), colour(0, 10), colour(5, 10)
	if winning != even || losing != even {
		t.Errorf("the bar's colour follows the rate: 10/10 %q, 0/10 %q, 5/10 %q", winning, losing, even)
	}
}

func TestTableScrollsFiltersAndKeepsTheCursor(t *testing.T) {
	tb := newTable([]column{{title: "id", width: 6}, {title: "what", flex: 1}}, "none")
	tb.setStyles(asciiStyles())
	tb.setSize(30, 6) // a header and five rows
	var rows []row
	for i := 0; i < 20; i++ {
		rows = append(rows, row{key: fmt.Sprint(i), cells: []cell{{fmt.Sprint(i), plain}, {fmt.Sprintf("row %d", i), plain}}})
	}
	tb.setRows(rows)
	k := DefaultKeyMap()
	tb.update(k, tea.KeyMsg{Type: tea.KeyPgDown})
	tb.update(k, tea.KeyMsg{Type: tea.KeyDown})
	if tb.selected() != "6" || tb.offset != 2 {
		t.Fatalf("after pgdown and down: cursor %s offset %d", tb.selected(), tb.offset)
	}
	// New rows above keep the cursor on its row.
	tb.setRows(append([]row{{key: "new", cells: []cell{{"new", plain}, {"x", plain}}}}, rows...))
	if tb.selected() != "6" {
		t.Fatalf("the cursor moved to %s", tb.selected())
	}
	tb.update(k, keyMsg("/"))
	for _, r := range "row 1" {
		tb.update(k, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	tb.update(k, keyMsg("enter"))
	if len(tb.rows) != 11 || tb.filtering { // row 1, row 10..19
		t.Fatalf("filter kept %d rows (filtering %v)", len(tb.rows), tb.filtering)
	}
	lines := strings.Split(tb.view(asciiStyles(), true), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[5], "/row 1") {
		t.Fatalf("view with a filter:\n%s", strings.Join(lines, "\n"))
	}
	tb.setSize(12, 6) // too narrow for both columns: the fixed one is dropped
	if w := tb.widths(); w[0] != 0 || w[1] != 10 {
		t.Fatalf("narrow widths %v", w)
	}
}

func TestTailViewFollowsItsTailOnly(t *testing.T) {
	e, cal, _ := paneEnv(t)
	v := newTailView(e, cal, "b-2")
	v.setSize(rect{0, 1, 100, 20})
	if v.list.len() != 3 {
		t.Fatalf("b-2 opens with %d calls from the store", v.list.len())
	}
	// A call written while the journal is read is read once the first scan is in, and
	// counts once; another tail's call is not this tail's.
	_, first := v.apply([]journal.Event{{Seq: 1}})
	j, err := journal.OpenJournal(cal)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	late := journal.Event{ToolCall: &journal.ToolCall{Tail: "b-2", Tool: "Bash", Summary: "late", Calls: 4}}
	other := journal.Event{ToolCall: &journal.ToolCall{Tail: "a-2", Tool: "Bash", Calls: 5}}
	if err := j.Append(&late); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(&other); err != nil {
		t.Fatal(err)
	}
	_, again := v.apply([]journal.Event{late, other})
	if again != nil {
		t.Fatal("a second scan started while one is under way")
	}
	for cmd := first; cmd != nil; {
		cmd = v.history(cmd().(tailHistoryMsg))
	}
	v.refresh()
	if v.list.len() != 4 || summary(t, v, 3) != "late" {
		t.Fatalf("%d tools", v.list.len())
	}
	if v.calls.selected() != "4" {
		t.Fatalf("the list does not follow the newest call: %s", v.calls.selected())
	}
	used, cmd := v.update(keyMsg("d"), rect{0, 1, 100, 20})
	if msg := intent(t, used, cmd); msg != (diffMsg{cal, "b-2", 4}) {
		t.Fatalf("d asks %#v", msg)
	}
	v.showDiff(diffTextMsg{dir: cal, tail: "b-2", step: 4, text: "what tail b-2 changed\n+added\n-removed"}, rect{0, 1, 100, 20})
	var c = newCanvas(100, 21)
	v.draw(c)
	if s := c.String(); !strings.Contains(s, "Changes of tail b-2") || !strings.Contains(s, "+added") {
		t.Fatalf("diff not drawn:\n%s", s)
	}
	if used, _ := v.update(keyMsg("esc"), rect{0, 1, 100, 20}); !used || v.diff != nil {
		t.Fatal("esc did not close the diff")
	}
}

func TestFormKinds(t *testing.T) {
	e, _, _ := paneEnv(t)
	f := newForm(e)
	if runKinds[f.kind].name != "calibrate" || len(f.inputs) != 8 {
		t.Fatalf("form: %s with %d fields", runKinds[f.kind].name, len(f.inputs))
	}
	f.inputs[0].SetValue("fix the bug")
	if done, _ := f.update(keyMsg("ctrl+s")); done || !strings.Contains(f.err, "sides is empty") || f.focus != 1 {
		t.Fatalf("empty sides: done %v err %q focus %d", done, f.err, f.focus)
	}
	v := f.view(70)
	if !strings.Contains(v, "sides is empty") {
		t.Fatalf("view:\n%s", v)
	}
}

// TestRetriedRunIsLiveUntilTheRetryEnds: a finished run whose tail is retried (R, tare resume
// --retry, or tare tail on a recorded run) shows live while the retry runs, and done again
// once it ends; before, it stayed "done" with a tail running.
func TestRetriedRunIsLiveUntilTheRetryEnds(t *testing.T) {
	stateDir := t.TempDir()
	j := openRun(t, stateDir, "calibrate", "retried")
	j.at(-min_(5), journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Sides: []journal.Side{{Key: "a", Agent: "pi"}}, Budget: 1, Jobs: 1}})
	j.at(-min_(5), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}})
	j.at(-min_(4), journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusFailed}})
	j.at(-min_(4), journal.Event{RunFinished: &journal.RunFinished{Report: "a 0/1"}})
	status := func() string {
		e := &env{st: asciiStyles(), keys: DefaultKeyMap(), store: newStore(nil, demoProject), now: func() time.Time { return t0 }}
		w := newWatcher(stateDir, nil, func(string) bool { return true }, nil)
		e.store.apply(w.poll(time.Now()))
		return e.store.run(j.dir).status()
	}
	if got := status(); got != "done" {
		t.Fatalf("finished run is %q, want done", got)
	}
	j.at(-min_(3), journal.Event{Resumed: &journal.Resumed{Rerun: []string{"a-0"}}})
	j.at(-min_(3), journal.Event{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh", Attempt: 1}})
	if got := status(); got != "live" {
		t.Fatalf("run with a retry running is %q, want live", got)
	}
	j.at(-min_(2), journal.Event{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusFailed, Attempt: 1}})
	j.at(-min_(2), journal.Event{RunFinished: &journal.RunFinished{Report: "a 0/1 · 1 retried"}})
	if got := status(); got != "done" {
		t.Fatalf("run after its retry is %q, want done", got)
	}
}
