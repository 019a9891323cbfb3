package engine

import (
	"path/filepath"
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
