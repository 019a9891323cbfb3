package workshop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tare/agent"
)

// readSoFar is how many bytes this process has read through read(2) and friends
// (/proc/self/io's rchar): what a look at a writer costs, measured from outside the code.
func readSoFar(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// TestLooksAtAHugeStreamAreBounded: the app asks on every refresh whether a writer can be
// resumed (Exp.Resumable), and watch polls each writer's stream; a writer whose event file is
// huge costs each look a bounded chunk read on from where the last stopped, never the whole
// file again, and the quota wall at its end is found once the reading has caught up.
func TestLooksAtAHugeStreamAreBounded(t *testing.T) {
	e, id, s, events := hugeStreamExp(t, 24)
	const bound = agent.FollowChunk + 1<<20 // a chunk, the state and the ends of small files
	looks, found := 0, false
	for !found && looks < 2*len(events)/agent.FollowChunk+2 {
		before := readSoFar(t)
		found = e.Resumable(id, s)
		if n := readSoFar(t) - before; n > bound {
			t.Fatalf("look %d at a %d MiB stream read %d bytes; want at most %d", looks+1, len(events)>>20, n, bound)
		}
		looks++
	}
	if !found {
		t.Fatalf("the quota wall at the stream's end was not found in %d looks", looks)
	}
	before := readSoFar(t)
	if !e.Resumable(id, s) {
		t.Fatal("a look after catching up lost the wall")
	}
	if n := readSoFar(t) - before; n > 1<<20 {
		t.Fatalf("a look at a stream read to its end read %d bytes again", n)
	}
	// watch: each poll reads on, bounded, and tells the writer's end once its stream is told.
	seen := map[string]*follower{}
	var told []string
	for polls := 0; polls < 2*len(events)/agent.FollowChunk+2; polls++ {
		before := readSoFar(t)
		lines, _ := watchOnce(e, seen, false)
		told = append(told, lines...)
		if n := readSoFar(t) - before; n > bound {
			t.Fatalf("watch poll %d read %d bytes; want at most %d", polls+1, n, bound)
		}
	}
	if all := strings.Join(told, "\n"); !strings.Contains(all, id+" stopped on a provider limit") {
		t.Fatalf("watch did not tell the writer's end:\n%s", all)
	}
	// watch --once reads a stream longer than one look's chunk to its end before it returns.
	var once bytes.Buffer
	if err := Watch(context.Background(), e, &once, false, true, time.Second); err != nil || !strings.Contains(once.String(), id+" stopped on a provider limit") {
		t.Fatalf("watch --once did not tell the writer's end: %v\n%s", err, once.String())
	}
}

// hugeStreamExp is an experiment whose codex writer stopped at a quota wall after a stream of
// about mib MiB of its tool output.
func hugeStreamExp(tb testing.TB, mib int) (*Exp, string, *State, []byte) {
	tb.Helper()
	p, out := planDir(tb, basePlan)
	exp := filepath.Join(out, "exp")
	if _, err := Prepare(p, exp); err != nil {
		tb.Fatal(err)
	}
	e, _ := Load(exp)
	id := "codex-gpt-5.1-codex"
	s, _ := e.State(id)
	wall, err := os.ReadFile("testdata/codex-quota-events.jsonl") // codex 0.171.0 at tare's model server's quota wall
	if err != nil {
		tb.Fatal(err)
	}
	line := []byte(`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"cat notes","aggregated_output":"` +
		strings.Repeat("x", 1000) + `","exit_code":0,"status":"completed"}}` + "\n")
	events := append(bytes.Repeat(line, mib<<20/len(line)), wall...)
	if err := os.WriteFile(filepath.Join(e.Record(id), "events.jsonl"), events, 0o644); err != nil {
		tb.Fatal(err)
	}
	then := time.Now().UTC().Add(-time.Minute)
	s.Status, s.StartedAt, s.EndedAt, s.StoppedByQuota = "failed", &then, &then, true
	if err := e.saveState(id, s); err != nil {
		tb.Fatal(err)
	}
	return e, id, s, events
}

// BenchmarkResumableLook: what one refresh of the app's Writers pane costs for a writer whose
// stream is 16 MiB against one whose stream is a few KiB, once each has been read to its end
// (huge/small: about 1), and reading the huge stream whole as each look did before
// (whole/look).
func BenchmarkResumableLook(b *testing.B) {
	small, sid, ss, _ := hugeStreamExp(b, 0)
	huge, hid, hs, _ := hugeStreamExp(b, 16)
	for !small.Resumable(sid, ss) || !huge.Resumable(hid, hs) { // caught up, as after the first refreshes
	}
	look := func(e *Exp, id string, s *State) time.Duration {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if !e.Resumable(id, s) {
				b.Fatal("the wall is lost")
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	tSmall := look(small, sid, ss)
	tHuge := look(huge, hid, hs)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		data, _ := os.ReadFile(filepath.Join(huge.Record(hid), "events.jsonl"))
		if _, ok := agent.ProviderStopped(agent.Codex{}, data, nil); !ok {
			b.Fatal("no wall")
		}
	}
	tWhole := time.Since(start)
	b.ReportMetric(float64(tHuge.Nanoseconds())/float64(b.N), "ns/look-16MiB")
	b.ReportMetric(float64(tHuge)/float64(tSmall), "huge/small")
	b.ReportMetric(float64(tWhole)/float64(tHuge), "whole/look")
}

// Resumable says whether the writer's own event stream shows a provider quota wall or an
// expired login and it has not completed since: resume continues it, where a retry would
// start it over. Each call reads on from where the last stopped, a bounded chunk, so the app
// can ask on every refresh whatever the stream's size.
func (e *Exp) Resumable(id string, s *State) bool {
	return e.ResumeKind(id, s) != ""
}
