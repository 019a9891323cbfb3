package stats

// TaskDiffRange is side a's mean pass rate over tasks minus side b's, the two compared task
// by task.
type TaskDiffRange struct {
	// Tasks is how many tasks both sides ran.
	Tasks int
	// Worst is the difference with every left-out run counted against a (a's as failed, b's
	// as passed), Best with every one counted for a; with none left out they agree.
	Worst, Best float64
	// Lo and Hi are the range at level 1 - alpha: Lo bounds the worst case from below, Hi
	// the best case from above.
	Lo, Hi float64
}

// TaskDiff is the difference of two sides' mean pass rates over the same tasks, paired by
// task: each task gives one value, a's rate on it minus b's (in [-1, 1]), and the interval
// is MeanInterval's betting interval on those values, the tasks being the units.
//
// What it means: if the tasks are a sample from a larger set like them, the range holds
// the difference of the two sides' mean rates over that set at least 1 - alpha of the time,
// however the tasks' rates spread; pairing by task takes the tasks' own difficulty out of
// the comparison, so it is narrower than the two TaskMean ranges set side by side. A range
// that excludes zero says one side passes more tasks on average.
//
// What it does not mean: it is an average over tasks, so a range around zero can hide a
// side that is much better on some tasks and much worse on others (TaskEvidence lists
// those), and a range that excludes zero does not say a is better on every task. It is a
// fixed-size interval: looked at after every run it is not valid; StratTest is the test to
// watch while runs arrive. Tasks where either side has no runs at all are counted with the
// worst and best cases, 0 and 1, so they widen the range rather than vanish.
func TaskDiff(a, b []Bounds, alpha float64) TaskDiffRange {
	n := min(len(a), len(b))
	r := TaskDiffRange{Tasks: n, Worst: -1, Best: 1, Lo: -1, Hi: 1}
	if n == 0 {
		return r
	}
	worst, best := make([]float64, n), make([]float64, n)
	r.Worst, r.Best = 0, 0
	for i := range n {
		aw, ab := caseRates(a[i])
		bw, bb := caseRates(b[i])
		worst[i], best[i] = aw-bb, ab-bw
		r.Worst += worst[i] / float64(n)
		r.Best += best[i] / float64(n)
	}
	lo, _, _ := MeanInterval(worst, alpha)
	_, hi, _ := MeanInterval(best, alpha)
	r.Lo, r.Hi = lo, hi
	return r
}

// caseRates are a task's worst- and best-case rates; a task with no runs is 0 to 1.
func caseRates(t Bounds) (worst, best float64) {
	if t.N() == 0 {
		return 0, 1
	}
	return t.Worst, t.Best
}
