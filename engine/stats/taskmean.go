package stats

// TaskRate is a side's mean pass rate over a set of tasks, each task weighing the same
// however many runs it had: the number a leaderboard means by "solves 62% of the tasks".
type TaskRate struct {
	// Tasks is how many tasks the mean is over, every task given, even one with no verdict.
	Tasks int
	// Worst is the mean of the tasks' rates with every left-out run counted as failed, Best
	// with every one counted as passed; with none left out they are the same number.
	Worst, Best float64
	// Lo and Hi are the range at level 1 - alpha: Lo bounds the worst case from below, Hi the
	// best case from above, so the range holds the mean rate whatever the left-out runs would
	// have been.
	Lo, Hi float64
}

// TaskMean is the mean pass rate over tasks from each task's counts (one RateBounds per
// task), with an interval in which the tasks, not the runs, are the units.
//
// What it means: if the tasks are a sample from a larger set of tasks like them, and each
// task's runs are independent repeats, the range holds the mean rate over that larger set
// at least 1 - alpha of the time; in the simulations it held the mean of these tasks' own
// true rates at least as often, and at 5% it missed at most 1.3%: it is conservative. It is
// the betting interval of MeanInterval on the per-task rates, bounded in [0, 1]: it assumes
// nothing about how the tasks' rates spread, so it stays honest when most tasks sit near 0
// or 1 and each has one to five runs, where a Wilson interval on the runs pooled (which
// counts 50 runs of 10 tasks as 50 units) missed the mean over tasks in up to a third of
// the simulated datasets.
//
// What it does not mean: it is not the chance that a given task passes, and it says nothing
// of tasks unlike these. With few tasks it is wide, as it must be: five tasks cannot pin a
// mean over tasks however many runs each had.
func TaskMean(tasks []Bounds, alpha float64) TaskRate {
	r := TaskRate{Tasks: len(tasks), Hi: 1}
	if len(tasks) == 0 {
		r.Best = 1
		return r
	}
	worst, best := make([]float64, len(tasks)), make([]float64, len(tasks))
	for i, t := range tasks {
		w, b := caseRates(t)
		r.Worst += w / float64(len(tasks))
		r.Best += b / float64(len(tasks))
		// MeanInterval takes values in [-1, 1]: a rate r is 2r - 1 there.
		worst[i], best[i] = 2*w-1, 2*b-1
	}
	lo, _, _ := MeanInterval(worst, alpha)
	_, hi, _ := MeanInterval(best, alpha)
	r.Lo, r.Hi = max(0, (lo+1)/2), min(1, (hi+1)/2)
	return r
}
