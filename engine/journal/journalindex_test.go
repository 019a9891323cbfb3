package journal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

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

// TestJournalIndexWindowsMatchReadJournal: every window the index decodes is the events
// ReadJournal reads at those places, and a torn last line is left out as ReadJournal leaves
// it, then taken in by Refresh once it is complete.
func TestJournalIndexWindowsMatchReadJournal(t *testing.T) {
	dir := t.TempDir()
	writeSyntheticJournal(t, dir, 1000)
	f, _ := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":1001,"run":"huge","phase":{"na`)
	all, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	x, err := OpenJournalIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Len() != len(all) {
		t.Fatalf("the index holds %d lines, ReadJournal %d events", x.Len(), len(all))
	}
	for _, from := range []int{0, 1, 499, 960, 999} {
		got, err := x.Window(from, 40)
		if err != nil {
			t.Fatal(err)
		}
		want := all[from:min(from+40, len(all))]
		if len(got) != len(want) || got[0].Seq != want[0].Seq || got[len(got)-1].Seq != want[len(want)-1].Seq {
			t.Errorf("window at %d: seqs %d..%d, want %d..%d", from, got[0].Seq, got[len(got)-1].Seq, want[0].Seq, want[len(want)-1].Seq)
		}
	}
	f.WriteString(`me":"done"}}` + "\n")
	f.Close()
	if err := x.Refresh(); err != nil || x.Len() != 1001 {
		t.Fatalf("after the torn line was completed: %d lines, %v; want 1001", x.Len(), err)
	}
	if last, _ := x.Window(1000, 1); len(last) != 1 || last[0].Phase == nil || last[0].Phase.Name != "done" {
		t.Errorf("the completed line reads %+v", last)
	}
}

// BenchmarkOpenHugeJournal opens a synthetic 1,000,000-event journal lazily (the index) and
// scrolls it a window of 50 events per frame at random places, against today's full read
// (ReadJournal decodes every event before anything shows) in the same run.
// go test ./engine -run '^$' -bench BenchmarkOpenHugeJournal -benchtime 1x
func BenchmarkOpenHugeJournal(b *testing.B) {
	dir := b.TempDir()
	writeSyntheticJournal(b, dir, 1_000_000)
	var openMs, fullMs, p99 float64
	for b.Loop() {
		start := time.Now()
		all, err := ReadJournal(dir)
		if err != nil || len(all) != 1_000_000 {
			b.Fatalf("full read: %d events, %v", len(all), err)
		}
		fullMs = float64(time.Since(start).Microseconds()) / 1000
		all = nil

		start = time.Now()
		x, err := OpenJournalIndex(dir)
		if err != nil || x.Len() != 1_000_000 {
			b.Fatalf("index: %v", err)
		}
		first, err := x.Window(0, 50)
		if err != nil || len(first) != 50 {
			b.Fatalf("first window: %v", err)
		}
		openMs = float64(time.Since(start).Microseconds()) / 1000

		r := rand.New(rand.NewPCG(1, 2))
		frames := make([]float64, 2000)
		for i := range frames {
			t := time.Now()
			w, err := x.Window(r.IntN(x.Len()), 50)
			if err != nil || len(w) == 0 {
				b.Fatalf("frame %d: %v", i, err)
			}
			for _, e := range w {
				_ = fmt.Sprintf("%6d %s %s", e.Seq, e.Kind(), e.Time.Format(time.TimeOnly))
			}
			frames[i] = float64(time.Since(t).Microseconds()) / 1000
		}
		x.Close()
		slices.Sort(frames)
		p99 = frames[len(frames)*99/100]
	}
	b.ReportMetric(openMs, "open-ms")
	b.ReportMetric(fullMs, "full-read-ms")
	b.ReportMetric(fullMs/openMs, "full/open")
	b.ReportMetric(p99, "p99-frame-ms")
}
