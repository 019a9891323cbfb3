package tui

import (
	"strings"
	"testing"

	"tare/engine/journal"
)

// A search shows its progress as it goes: the reader opens on the first hits with how many
// tails are read, fills as more come, and its title says when it is done; a reader the
// operator opened meanwhile is not taken over.
func TestFindShowsItsProgress(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	tm := newTestModel(t, stateDir, newStub(), 120, 30)
	tm.send(openRunMsg{cal})
	s := &search{dir: cal, q: "go test"}
	hit := journal.TailHit{Tail: "a-1", Step: 2, Field: "input", Line: "go test ./..."}
	tm.Update(searchMsg{s: s, hits: []journal.TailHit{hit}, done: 3, total: 10}) // its command waits for the next
	if tm.page() != readerPage || !strings.Contains(tm.View(), "3 of 10 tails read") || !strings.Contains(tm.View(), "go test ./...") {
		t.Fatalf("the first progress does not show:\n%s", tm.View())
	}
	tm.send(searchMsg{s: s, hits: []journal.TailHit{hit, {Tail: "b-2", Step: 1, Field: "text", Line: "running go test"}}, finished: true})
	v := tm.View()
	if strings.Contains(v, "tails read") || !strings.Contains(v, "2 found") || !strings.Contains(v, "running go test") {
		t.Fatalf("the finished search does not show:\n%s", v)
	}
	tm.key("esc")
	other := &search{dir: cal, q: "cart"}
	tm.Update(searchMsg{s: other, done: 1, total: 10})
	tm.key("esc")
	tm.send(searchMsg{s: other, hits: []journal.TailHit{hit}, finished: true})
	if tm.page() == readerPage || !strings.Contains(tm.status, `find "cart": 1 found`) {
		t.Fatalf("a search left by the operator: page %v, status %q", tm.pages, tm.status)
	}
}
