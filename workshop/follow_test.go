package workshop

import (
	"bytes"
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
	p, out := planDir(t, basePlan)
	exp := filepath.Join(out, "exp")
	if _, err := Prepare(p, exp); err != nil {
		t.Fatal(err)
	}
	e, _ := Load(exp)
	id := "codex-gpt-5.1-codex"
	s, _ := e.State(id)
	wall, err := os.ReadFile("testdata/codex-quota-events.jsonl") // codex 0.171.0 at tare's model server's quota wall
	if err != nil {
		t.Fatal(err)
	}
	// A long session's stream: 24 MiB of the writer's tool output, then the wall.
	line := []byte(`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"cat notes","aggregated_output":"` +
		strings.Repeat("x", 1000) + `","exit_code":0,"status":"completed"}}` + "\n")
	events := append(bytes.Repeat(line, 24<<20/len(line)), wall...)
	if err := os.WriteFile(filepath.Join(e.Record(id), "events.jsonl"), events, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	now = now.Add(-time.Minute)
	s.Status, s.StartedAt, s.EndedAt, s.StoppedByQuota = "failed", &now, &now, true
	if err := e.saveState(id, s); err != nil {
		t.Fatal(err)
	}
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
		told = append(told, watchOnce(e, seen, false)...)
		if n := readSoFar(t) - before; n > bound {
			t.Fatalf("watch poll %d read %d bytes; want at most %d", polls+1, n, bound)
		}
	}
	if all := strings.Join(told, "\n"); !strings.Contains(all, id+" stopped on a provider limit") {
		t.Fatalf("watch did not tell the writer's end:\n%s", all)
	}
}
