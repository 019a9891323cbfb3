package journal

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// stateLine is what a view reads of a replayed run, in one line: the run's phase and whether
// it is finished, then each tail in order with its status, reason, attempt, earlier attempts,
// tool calls and whether a check runs; a queue wait where an attempt had one.
func stateLine(s *RunState) string {
	parts := []string{fmt.Sprintf("phase=%s finished=%v seq=%d", s.Phase, s.Finished, s.Seq)}
	for _, id := range s.Order {
		t := s.Tails[id]
		var earlier []string
		for _, a := range t.Earlier {
			earlier = append(earlier, fmt.Sprintf("%s/%s", a.Status, a.Reason)+queued(a))
		}
		parts = append(parts, fmt.Sprintf("%s:%s/%s#%d[%s]calls=%d checking=%v", id, t.Status, t.Reason, t.Attempt.N, strings.Join(earlier, ","), len(t.Tools), !t.Checking.IsZero())+queued(t.Attempt))
	}
	if len(s.Original) > 0 {
		parts = append(parts, fmt.Sprintf("original=%d", len(s.Original)))
	}
	return strings.Join(parts, " ")
}

// queued is an attempt's queue wait for stateLine, " queued=30s", or nothing.
func queued(a Attempt) string {
	if a.Queued == 0 {
		return ""
	}
	return fmt.Sprintf(" queued=%s", a.Queued)
}

// TestRunStateApply: events in, the state a view shows out. Applying a journal again from
// its start (as a watcher does) counts nothing twice, a retry keeps the attempt before it on
// the record (interrupted when it never finished), a check is shown only while its tail
// runs, each attempt keeps its own wait in a cluster's queue, a resume makes running tails
// rerun and the run unfinished, and agent text is escaped.
func TestRunStateApply(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := func(seq int64, id string, attempt int) Event {
		return Event{Seq: seq, TailStarted: &TailStarted{ID: id, Side: "a", How: "fresh", Attempt: attempt}}
	}
	finish := func(seq int64, id string, status Status, reason Reason) Event {
		return Event{Seq: seq, TailFinished: &TailFinished{ID: id, Status: status, Reason: reason, Passed: status == StatusPassed}}
	}
	call := func(seq int64, id string) Event {
		return Event{Seq: seq, ToolCall: &ToolCall{Tail: id, Tool: "Bash", Summary: "ls", Calls: int(seq)}}
	}
	placed := func(seq int64, id string, waited float64) Event {
		return Event{Seq: seq, Placed: &Placed{Tail: id, Job: "7", State: "running", Waited: waited}}
	}
	begin := Event{Seq: 1, RunStarted: &RunStarted{Kind: "calibrate", Sides: []Side{{Key: "a", Agent: "claude"}}}}
	for _, tc := range []struct {
		name   string
		events []Event
		want   string
	}{
		{"a tail passes", []Event{begin, {Seq: 2, Phase: &Phase{Name: "tails"}}, start(3, "a-0", 0), call(4, "a-0"), finish(5, "a-0", StatusPassed, "")},
			"phase=tails finished=false seq=5 a-0:passed/#0[]calls=1 checking=false"},
		{"a journal read again counts nothing twice", []Event{begin, start(2, "a-0", 0), call(3, "a-0"), begin, start(2, "a-0", 0), call(3, "a-0")},
			"phase= finished=false seq=3 a-0:running/#0[]calls=1 checking=false"},
		{"a retry keeps the failed attempt", []Event{begin, start(2, "a-0", 0), finish(3, "a-0", StatusFailed, ""), start(4, "a-0", 1)},
			"phase= finished=false seq=4 a-0:running/#1[failed/]calls=0 checking=false"},
		{"a rerun after a crash: the unfinished attempt was interrupted", []Event{begin, start(2, "a-0", 0), call(3, "a-0"), start(4, "a-0", 1)},
			"phase= finished=false seq=4 a-0:running/#1[no-verdict/interrupted]calls=0 checking=false"},
		{"each attempt keeps its own queue wait", []Event{begin, start(2, "a-0", 0), placed(3, "a-0", 30), finish(4, "a-0", StatusFailed, ""),
			start(5, "a-0", 1), placed(6, "a-0", 5)},
			"phase= finished=false seq=6 a-0:running/#1[failed/ queued=30s]calls=0 checking=false queued=5s"},
		{"a check shows while its tail runs only", []Event{begin, start(2, "a-0", 0), {Seq: 3, TailChecking: &TailChecking{ID: "a-0", TimeoutSeconds: 60}},
			finish(4, "b-0", StatusFailed, ""), {Seq: 5, TailChecking: &TailChecking{ID: "b-0", TimeoutSeconds: 60}}},
			"phase= finished=false seq=5 a-0:running/#0[]calls=0 checking=true b-0:failed/#0[]calls=0 checking=false"},
		{"a resume reruns what was running and reopens the run", []Event{begin, start(2, "a-0", 0), start(3, "a-1", 0), finish(4, "a-1", StatusPassed, ""),
			{Seq: 5, RunFinished: &RunFinished{Report: "r"}}, {Seq: 6, Resumed: &Resumed{Rerun: []string{"a-0", "a-1", "gone"}}}},
			"phase=done finished=false seq=6 a-0:rerun/#0[]calls=0 checking=false a-1:passed/#0[]calls=0 checking=false"},
		{"the original's calls are kept, a call of no tail is dropped", []Event{begin, call(2, "original"), call(3, "original"), call(4, "nobody")},
			"phase= finished=false seq=4 original=2"},
		{"a run finishes", []Event{begin, {Seq: 2, RunFinished: &RunFinished{Report: "done", Error: "x"}}},
			"phase=done finished=true seq=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewRunState("r")
			for i, e := range tc.events {
				if e.Time.IsZero() {
					e.Time = t0.Add(time.Duration(i) * time.Second)
				}
				s.Apply(e)
			}
			if got := stateLine(s); got != tc.want {
				t.Errorf("state\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	s := NewRunState("r")
	s.Apply(call(1, "original"))
	s.Apply(Event{Seq: 2, TailStarted: &TailStarted{ID: "a-0"}})
	s.Apply(Event{Seq: 3, ToolCall: &ToolCall{Tail: "a-0", Tool: "Bash", Summary: "printf '\x1b]52;c;aGk=\x07'"}})
	if got := s.Tails["a-0"].Tools[0].Summary; strings.ContainsRune(got, 0x1b) || !strings.Contains(got, `\x1b]52`) {
		t.Errorf("an agent's escape sequence reached the state raw: %q", got)
	}
}
