package journal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJournalOutlineIsTheJournalWithoutItsToolCalls: the outline holds every event of the
// journal that is not a tool call, in order, a report longer than the read buffer whole; a
// torn last line is left out and a bad line elsewhere named by its number, as ReadJournal
// does.
func TestJournalOutlineIsTheJournalWithoutItsToolCalls(t *testing.T) {
	dir := t.TempDir()
	writeSyntheticJournal(t, dir, 50_000)
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Repeat(`a "tool_call": that is text, `, 100_000) // 2.9 MB, quotes escaped
	j.Append(&Event{RunFinished: &RunFinished{Report: report}})
	j.Close()
	f, _ := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":50002,"run":"huge","phase":{"na`)
	f.Close()

	all, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []Event
	for _, e := range all {
		if e.ToolCall == nil {
			want = append(want, e)
		}
	}
	got, err := ReadJournalOutline(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(want) < 3 {
		t.Fatalf("the outline holds %d events, the journal %d that are not tool calls", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].Kind() != want[i].Kind() {
			t.Fatalf("event %d: %d %s, want %d %s", i, got[i].Seq, got[i].Kind(), want[i].Seq, want[i].Kind())
		}
	}
	if r := got[len(got)-1].RunFinished; r == nil || r.Report != report {
		t.Fatal("the long report did not come through whole")
	}

	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, JournalFile), []byte(`{"seq":1,"run":"x","phase":{"name":"a"}}`+"\n"+`not json`+"\n"+`{"seq":3,"run":"x","phase":{"name":"b"}}`+"\n"), 0o644)
	if _, err := ReadJournalOutline(bad); err == nil || !strings.Contains(err.Error(), ":2: not an event") {
		t.Fatalf("a bad middle line: %v", err)
	}
}

// writeSyntheticJournal writes n events as a run's journal would hold them: a start, then
// tool calls of 50 tails, then their ends.
func writeSyntheticJournal(tb testing.TB, dir string, n int) {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, JournalFile))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		e := Event{Seq: int64(i), Time: t0.Add(time.Duration(i) * time.Millisecond), Run: "huge"}
		switch {
		case i == 1:
			e.RunStarted = &RunStarted{Kind: "calibrate", Project: "p", Sides: []Side{{Key: "a", Agent: "claude"}}, Budget: 50, Jobs: 50}
		case i%20000 == 0:
			e.TailFinished = &TailFinished{ID: fmt.Sprintf("a-%d", i%50), Status: "passed", Passed: true}
		default:
			e.ToolCall = &ToolCall{Tail: fmt.Sprintf("a-%d", i%50), Tool: "Bash", Summary: fmt.Sprintf("grep -n step%d src/*.go", i), Calls: i / 50, Usage: Usage{Input: int64(i), Output: 40}}
		}
		if err := enc.Encode(&e); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}
