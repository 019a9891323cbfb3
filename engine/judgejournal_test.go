package engine

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"tare/engine/journal"
	"tare/engine/run"
)

// TestJudgementKillIsKnownByItsCause: a judgement the operator killed is journaled as killed
// whatever its judge's error says, and one whose judge merely wrote the kill's words (a page
// can make its judge say anything) is not: it is a judgement with no score.
func TestJudgementKillIsKnownByItsCause(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r, err := run.Create(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	j := &judgeJournal{r: r, o: JudgeOptions{Out: dir}}
	j.started(0, 0, 0)
	j.finished(0, 0, "", Judgement{Error: "the judge agent exited 1"}, [2]int{1, 10}, journal.KillError{As: journal.KillLeftOut})
	j.started(0, 1, 0)
	j.finished(0, 1, "", Judgement{Error: journal.ErrKilled.Error() + ", said the page"}, [2]int{1, 10}, nil)
	st := r.Snapshot()
	for _, c := range []struct {
		k    int
		what string
		want journal.Reason
	}{{0, "the killed judgement", journal.ReasonKilled}, {1, "the judgement whose judge wrote the kill's words", journal.ReasonCheckError}} {
		got := st.Tails[judgementID(0, c.k)]
		if got == nil || got.Reason != c.want {
			t.Errorf("%s: %+v, want reason %q", c.what, got, c.want)
		} else {
			t.Logf("%s: %s (%s)", c.what, got.Reason, got.Detail)
		}
	}
}

// TestJudgementsStopWhenTheirJournalCannotBeWritten: a judge-noise run whose journal stops
// taking writes after its first judgement stops there, as run.Emit's contract says: no
// judgement is started after the failure (its outcome would go unrecorded, and a resume
// would run it again), and the pool says the journal is why.
func TestJudgementsStopWhenTheirJournalCannotBeWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r, err := run.Create(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const times = 6
	env := &judgeEnv{o: JudgeOptions{Out: dir, Jobs: 1, Times: times}, journal: &judgeJournal{r: r, o: JudgeOptions{Out: dir}}}
	grid := [][]Judgement{make([]Judgement, times)}
	pool := env.pool(context.Background(), grid, [2]int{1, 10})
	var judged atomic.Int32
	for k := range times {
		pool.run(judgeWork{page: 0, k: k}, func(ctx context.Context, w judgeWork) Judgement {
			judged.Add(1)
			if w.k == 0 {
				r.Close() // the journal's file is gone from under the run
			}
			score := 7
			return Judgement{Score: &score, Reason: "fine"}
		})
	}
	err = pool.wait()
	if n := judged.Load(); n > 1 {
		t.Errorf("%d of %d judgements ran: the run went on unrecorded after its journal failed", n, times)
	}
	if err == nil || !strings.Contains(err.Error(), "the journal cannot be written, so the run stops") {
		t.Fatalf("pool.wait: %v, want the run stopped for its journal", err)
	}
	t.Logf("%d of %d judgements ran; %v", judged.Load(), times, err)
}
