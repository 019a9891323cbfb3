package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
