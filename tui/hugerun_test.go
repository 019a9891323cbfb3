package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"tare/engine/journal"
)

// writeHugeRun writes a calibrate run of tails tails (two sides, 50 at a time, each making
// calls tool calls in turn with the others of its wave) with the engine's own journal
// writer, below stateDir. The last wave is still running. It returns the run's directory
// and its journal's size.
func writeHugeRun(tb testing.TB, stateDir string, tails, calls int) (string, int64) {
	tb.Helper()
	dir := filepath.Join(stateDir, "calibrate", "huge")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	j, err := journal.OpenJournal(dir)
	if err != nil {
		tb.Fatal(err)
	}
	add := func(e journal.Event) {
		if err := j.Append(&e); err != nil {
			tb.Fatal(err)
		}
	}
	const wave = 50
	add(journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: "/work/shop", Prompt: "fix the rounding in Total",
		Check: "go test ./...", Sides: []journal.Side{{Key: "a", Agent: "claude"}, {Key: "b", Agent: "codex"}}, Budget: tails, Jobs: wave}})
	for w := 0; w < tails; w += wave {
		ids := []string{}
		for i := w; i < min(w+wave, tails); i++ {
			id := fmt.Sprintf("%s-%d", "ab"[i%2:i%2+1], i/2+1)
			ids = append(ids, id)
			add(journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: id[:1], How: "fresh"}})
		}
		for c := 1; c <= calls; c++ {
			for _, id := range ids {
				add(journal.Event{ToolCall: &journal.ToolCall{Tail: id, Tool: "Bash", Summary: fmt.Sprintf("go test ./cart/... -run Step%d", c),
					Seconds: 0.4, Calls: c, Usage: journal.Usage{Input: int64(1200 * c), Output: int64(300 * c), Cost: 0.0075 * float64(c)}}})
			}
		}
		if w+wave >= tails {
			break // the last wave runs on
		}
		for k, id := range ids {
			f := journal.TailFinished{ID: id, Status: journal.StatusPassed, Passed: true, Detail: "ok", Calls: calls,
				Usage: journal.Usage{Input: int64(1200 * calls), Output: int64(300 * calls), Cost: 0.0075 * float64(calls)}}
			switch {
			case k%7 == 3:
				f.Status, f.Passed, f.Reason, f.Detail = journal.StatusNoVerdict, false, journal.ReasonTimeout, "the agent ran past its timeout"
			case k%3 == 1:
				f.Status, f.Passed, f.Detail = journal.StatusFailed, false, "--- FAIL: TestTotal"
			}
			add(journal.Event{TailFinished: &f})
		}
	}
	if err := j.Close(); err != nil {
		tb.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, journal.JournalFile))
	if err != nil {
		tb.Fatal(err)
	}
	return dir, info.Size()
}

// allocated is how many bytes the process has allocated so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// A big run opens (Runs list, run view, one of its tails with its detail) without the app
// reading its journal whole: what the app allocates on the way stays below the journal's own
// size (a full read decodes every event, several times the journal), and the views show what
// the whole journal says.
func TestHugeRunOpensWithoutReadingItWhole(t *testing.T) {
	stateDir := t.TempDir()
	dir, size := writeHugeRun(t, stateDir, 200, 500) // 100,201 events
	all, err := journal.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := journal.Replay("huge", all)
	last := all[len(all)-1].Seq
	all = nil

	before := allocated()
	tm := newTestModel(t, stateDir, newStub(), 160, 48)
	for i := 0; i < 100 && tm.env.store.run(dir).state.Seq != last; i++ {
		tm.pollNow() // the bridge polls on while a journal is read in steps
	}
	selectRow(t, tm.home.runs.t, dir)
	tm.key("enter")
	runView := tm.View()
	selectRow(t, tm.run.tails.t, "a-100")
	tm.key("enter")
	view := tm.View()
	used := allocated() - before

	st := tm.env.store.run(dir).state
	if st.Seq != last {
		t.Fatalf("the store is at event %d, the journal ends at %d", st.Seq, last)
	}
	done, running, _ := want.Counts()
	if !strings.Contains(runView, fmt.Sprintf("%d done · %d running · of 200", done, running)) {
		t.Errorf("the run's counts (%d done, %d running) are not shown:\n%s", done, running, runView)
	}
	for _, id := range want.Order {
		if g, w := st.Tails[id], want.Tails[id]; g.Status != w.Status || g.Calls != w.Calls || g.Usage.Cost != w.Usage.Cost || g.Usage.Input != w.Usage.Input {
			t.Errorf("tail %s: the app has %s after %d calls, the journal %s after %d", id, g.Status, g.Calls, w.Status, w.Calls)
		}
	}
	if n := tm.tail.list.len(); n != 500 || summary(t, tm.tail, 499) != "go test ./cart/... -run Step500" {
		t.Errorf("tail a-100 shows %d calls, want 500", n)
	}
	if !strings.Contains(view, "Step500") {
		t.Errorf("the tail's last call is not shown:\n%s", view)
	}
	t.Logf("journal %.1f MB, %d events; the app allocated %.1f MB opening it", float64(size)/(1<<20), last, float64(used)/(1<<20))
	// Decoding every event allocates about 8 times the journal (the old app did it three
	// times: the store, the tail's calls, its detail); a skim, once through a buffer.
	if used > 4*uint64(size) {
		t.Errorf("opening the run allocated %.1f MB, more than 4 times its journal (%.1f MB): it was decoded whole", float64(used)/(1<<20), float64(size)/(1<<20))
	}
}

// f on a run of many tails reads the run's journal once, not once per tail (each tail's
// detail read it whole before), and shows what the tails' streams hold.
func TestFindOnABigRunReadsItsJournalOnce(t *testing.T) {
	stateDir := t.TempDir()
	dir, size := writeHugeRun(t, stateDir, 100, 200) // 20,151 events
	stream, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "claude_trail_stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tdir := filepath.Join(dir, "tails", "a-25") // side a is claude
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tdir, "stdout.jsonl"), stream, 0o644); err != nil {
		t.Fatal(err)
	}
	tm := newTestModel(t, stateDir, newStub(), 160, 48)
	selectRow(t, tm.home.runs.t, dir)
	tm.key("enter")

	before := allocated()
	tm.key("f")
	tm.typeText("notes/a.txt")
	tm.key("enter")
	used := allocated() - before
	if tm.page() != readerPage {
		t.Fatalf("f did not open what it found (status %q):\n%s", tm.status, tm.View())
	}
	view := tm.View()
	if !strings.Contains(view, "a-25") || !strings.Contains(view, "/work/notes/a.txt") || strings.Contains(view, "tails read") {
		t.Errorf("the search's hits in a-25 are not shown, or it is not done:\n%s", view)
	}
	t.Logf("journal %.1f MB; the search allocated %.1f MB", float64(size)/(1<<20), float64(used)/(1<<20))
	if used > 4*uint64(size) {
		t.Errorf("the search allocated %.1f MB, more than 4 times the journal (%.1f MB): it read the journal per tail", float64(used)/(1<<20), float64(size)/(1<<20))
	}
}

// summary is the i-th call's summary as the tail view has it ("" when out of range).
func summary(t testing.TB, v *tailView, i int) string {
	t.Helper()
	if i >= v.list.len() {
		return ""
	}
	c, err := v.list.call(i)
	if err != nil {
		t.Fatal(err)
	}
	return c.Summary
}

// A tail of 50,000 calls opens with only the rows on screen decoded: what opening it
// allocates is less than its calls' lines (decoding them allocates several times them), and scrolling to its first call shows it.
func TestTailOfManyCallsDecodesWhatTheScreenShows(t *testing.T) {
	stateDir := t.TempDir()
	dir, size := writeHugeRun(t, stateDir, 2, 50_000) // one wave of two tails, still running
	tm := newTestModel(t, stateDir, newStub(), 160, 48)
	for i := 0; i < 100 && tm.env.store.run(dir).state.Seq != 100_003; i++ {
		tm.pollNow()
	}
	selectRow(t, tm.home.runs.t, dir)
	tm.key("enter")
	selectRow(t, tm.run.tails.t, "b-1")
	before := allocated()
	tm.key("enter")
	view := tm.View()
	used := allocated() - before
	if n := tm.tail.list.len(); n != 50_000 || !strings.Contains(view, "Step50000") {
		t.Fatalf("tail b-1 shows %d calls:\n%s", n, view)
	}
	tm.key("g")
	if view := tm.View(); !strings.Contains(view, "-run Step1 ") {
		t.Errorf("the first call is not shown at the top:\n%s", view)
	}
	t.Logf("journal %.1f MB, the tail's lines %.1f MB; opening the tail allocated %.1f MB", float64(size)/(1<<20), float64(size)/2/(1<<20), float64(used)/(1<<20))
	if used > uint64(size)/2 {
		t.Errorf("opening the tail allocated %.1f MB, more than its calls' lines (%.1f MB): they were decoded", float64(used)/(1<<20), float64(size)/2/(1<<20))
	}
}
