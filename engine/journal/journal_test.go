package journal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJournalAppendsStampsAndReplays(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "calibrate-demo-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	events := []Event{
		{RunStarted: &RunStarted{Kind: "calibrate", Sides: []Side{{Key: "a", Agent: "claude"}}, Budget: 2}},
		{TailStarted: &TailStarted{ID: "a-0", Side: "a", How: "fresh"}},
		{ToolCall: &ToolCall{Tail: "a-0", Tool: "Bash", Calls: 1}},
		{TailFinished: &TailFinished{ID: "a-0", Passed: true, Status: "passed", Calls: 1}},
	}
	for i := range events {
		if err := j.Append(&events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[3].Seq != 4 || got[0].Run != "calibrate-demo-1" || got[2].ToolCall.Tool != "Bash" {
		t.Fatalf("replayed %+v", got)
	}
	st := Replay("calibrate-demo-1", got)
	if done, running, budget := st.Counts(); done != 1 || running != 0 || budget != 2 {
		t.Fatalf("counts %d %d %d", done, running, budget)
	}
}

func TestJournalCutsATornLastLineAndContinuesSeq(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := j.Append(&Event{Phase: &Phase{Name: "tails"}}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	path := filepath.Join(dir, JournalFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":4,"time":"2026-11-30T00:00:00Z","phase":{"na`) // a crash mid-write
	f.Close()

	if got, err := ReadJournal(dir); err != nil || len(got) != 3 {
		t.Fatalf("torn line must be left out: %d events, %v", len(got), err)
	}
	j, err = OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := Event{RunFinished: &RunFinished{Report: "ok"}}
	if err := j.Append(&e); err != nil {
		t.Fatal(err)
	}
	j.Close()
	got, err := ReadJournal(dir)
	if err != nil || len(got) != 4 || got[3].Seq != 4 || got[3].RunFinished == nil {
		t.Fatalf("after reopening: %+v %v", got, err)
	}
}

func TestJournalRefusesACorruptMiddleLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, JournalFile), []byte("{\"seq\":1}\nnot json\n{\"seq\":3}\n"), 0o644)
	_, err := ReadJournal(dir)
	if err == nil || !strings.Contains(err.Error(), JournalFile+":2") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
}

func TestBusNeverDropsFinalEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bus := NewBus()
	sub := bus.Subscribe(ctx, 4)
	got := make(chan []Event)
	go func() {
		var seen []Event
		for e := range sub.C() {
			seen = append(seen, e)
			if e.RunFinished != nil {
				got <- seen
				return
			}
			time.Sleep(time.Millisecond) // a slow view
		}
	}()
	const tails = 50
	for i := 0; i < tails; i++ {
		for k := 0; k < 40; k++ {
			bus.Publish(Event{ToolCall: &ToolCall{Tail: "t", Calls: k}})
		}
		bus.Publish(Event{TailFinished: &TailFinished{ID: "t", Status: "passed"}})
	}
	bus.Publish(Event{RunFinished: &RunFinished{}})
	seen := <-got
	finals := 0
	for _, e := range seen {
		if e.TailFinished != nil {
			finals++
		}
	}
	if finals != tails {
		t.Fatalf("%d of %d tail-finished events arrived", finals, tails)
	}
	if sub.Dropped() == 0 {
		t.Fatalf("a slow subscriber with a buffer of 4 should have had intermediate events dropped")
	}
	if int64(len(seen))+sub.Dropped() != tails*41+1 {
		t.Fatalf("seen %d + dropped %d != published %d", len(seen), sub.Dropped(), tails*41+1)
	}
}
