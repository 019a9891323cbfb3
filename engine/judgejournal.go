package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"tare/engine/journal"
	"tare/engine/run"
)

// judgeJournal is a judge-noise run's journal.jsonl, in its folder beside judgements.json,
// so the app lists and follows it as it does every run: a side per page (its key p1, p2...,
// its prompt the page folder), a tail per judgement (p1-1, p1-2...) whose verdict carries
// the judge's score, and the report at the end. A nil journal writes nothing (tare judge).
type judgeJournal struct {
	r *run.Run
	o JudgeOptions
}

// JudgePageKey is the side key of the judge-noise run's page n (from 0): "p1".
func JudgePageKey(n int) string { return fmt.Sprintf("p%d", n+1) }

// openJudgeJournal starts the journal of a judge-noise run in o.Out.
func openJudgeJournal(o JudgeOptions, judge []string, simulated bool) (*judgeJournal, error) {
	r, err := run.Open(o.Out, nil)
	if err != nil {
		return nil, err
	}
	j := &judgeJournal{r: r, o: o}
	sides := make([]journal.Side, len(o.Dirs))
	for i, d := range o.Dirs {
		sides[i] = journal.Side{Key: JudgePageKey(i), Agent: judge[0], Args: judge[1:], Prompt: filepath.Join(d, o.Page)}
	}
	if err := r.Emit(journal.Event{RunStarted: &journal.RunStarted{Kind: "judge-noise", Project: o.Dirs[0], Prompt: "judge by " + o.Rubric.Path,
		Sides: sides, Budget: len(o.Dirs) * o.Times, Jobs: o.Jobs, Simulated: simulated}}); err != nil {
		r.Close()
		return nil, err
	}
	return j, nil
}

// phase records that the run entered phase name.
func (j *judgeJournal) phase(name string) error {
	if j == nil {
		return nil
	}
	return j.r.Emit(journal.Event{Phase: &journal.Phase{Name: name}})
}

// err is the first journal write that failed (nil: none, or no journal). A judgement whose
// outcome cannot be journaled stops the run, as run.Emit's contract says: its record would be
// lost, and a resume would run it again.
func (j *judgeJournal) err() error {
	if j == nil {
		return nil
	}
	if err := j.r.Err(); err != nil {
		return fmt.Errorf("the journal cannot be written, so the run stops: %v", err)
	}
	return nil
}

func judgementID(page, k int) string { return fmt.Sprintf("%s-%d", JudgePageKey(page), k+1) }

// started records attempt (0: the first) of judgement k of page; a resume's rerun is a new
// attempt, the interrupted one kept on the record.
func (j *judgeJournal) started(page, k, attempt int) error {
	if j == nil {
		return nil
	}
	return j.r.Emit(journal.Event{TailStarted: &journal.TailStarted{ID: judgementID(page, k), Side: JudgePageKey(page), How: journal.HowFresh, Attempt: attempt}})
}

// finished records judgement k of page (its screenshot shot): a score is passed or failed by
// the threshold (passed without one: the judge gave a score); no score is no verdict, with the
// judge's error. cause is why the judgement's context ended (nil: it did not): a kill is
// known by it, not by the words of the judge's error.
func (j *judgeJournal) finished(page, k int, shot string, jd Judgement, scale [2]int, cause error) error {
	if j == nil {
		return nil
	}
	v := &journal.JudgeVerdict{Score: jd.Score, Threshold: j.o.Threshold, Tolerance: j.o.Tolerance, Scale: scale, Reason: jd.Reason, Error: jd.Error,
		Screenshot: shot, Out: j.o.Out}
	f := &journal.TailFinished{ID: judgementID(page, k), Seconds: jd.Seconds, Usage: jd.Usage, Score: jd.Score, Judge: v}
	switch {
	case jd.Score == nil && errors.Is(cause, journal.ErrKilled):
		f.Status, f.Reason, f.Detail = journal.StatusNoVerdict, journal.ReasonKilled, run.Clip(jd.Error, 200)
	case jd.Score == nil:
		f.Status, f.Reason, f.Detail = journal.StatusNoVerdict, journal.ReasonCheckError, "no score: "+run.Clip(jd.Error, 200)
	case j.o.Threshold != nil && float64(*jd.Score) < *j.o.Threshold:
		f.Status, f.Detail = journal.StatusFailed, fmt.Sprintf("score %d: %s", *jd.Score, run.Clip(jd.Reason, 200))
	default:
		f.Passed, f.Status, f.Detail = true, journal.StatusPassed, fmt.Sprintf("score %d: %s", *jd.Score, run.Clip(jd.Reason, 200))
	}
	return j.r.Emit(journal.Event{TailFinished: f})
}

// done closes the run with its report, or the error that ended it; the error is the
// journal's when the run's end could not be written.
func (j *judgeJournal) done(report string, err error) error {
	if j == nil {
		return nil
	}
	f := &journal.RunFinished{Report: report}
	if err != nil {
		f.Error = err.Error()
	}
	werr := j.r.Emit(journal.Event{RunFinished: f})
	j.r.Close()
	if werr != nil {
		return fmt.Errorf("the journal cannot be written, so the run stops: %v", werr)
	}
	return nil
}

// killable is judgement k of page's context, cancelled when the operator kills it (tare kill,
// the app) as a tail's is; stop ends the watch. Without a journal (tare judge) it is ctx.
func (j *judgeJournal) killable(ctx context.Context, page, k int) (context.Context, func()) {
	if j == nil {
		return ctx, func() {}
	}
	jctx, kill := context.WithCancelCause(ctx)
	stop := run.WatchKill(jctx, j.o.Out, judgementID(page, k), kill)
	return jctx, func() {
		stop()
		kill(nil)
	}
}
