package stats

// Bounds is a pass rate when some runs have no outcome and are not assumed to be missing at
// random: the worst case counts every left-out run as failed, the best case as passed
// (Horowitz and Manski 2000, for missing binary outcomes). Nothing in the data says where in
// [Worst, Best] the rate is; Lo and Hi widen that range by the sampling error of each end.
type Bounds struct {
	Passed, Failed, LeftOut int
	// Worst is Passed/N and Best (Passed+LeftOut)/N, N every run: Passed+Failed+LeftOut.
	Worst, Best float64
	// Lo is the Wilson 95% lower bound of the worst case, Hi the upper bound of the best: the
	// range holds the rate about 95% of the time or more whatever the left-out runs would
	// have been (Wilson's coverage dips below 95% at a few small n and extreme rates).
	Lo, Hi float64
}

// RateBounds are the worst- and best-case pass rates of passed and failed runs with leftOut
// runs of unknown outcome. With none left out, Worst = Best is the plain rate.
func RateBounds(passed, failed, leftOut int) Bounds {
	b := Bounds{Passed: passed, Failed: failed, LeftOut: leftOut}
	n := passed + failed + leftOut
	if n == 0 {
		b.Best, b.Hi = 1, 1
		return b
	}
	b.Worst = float64(passed) / float64(n)
	b.Best = float64(passed+leftOut) / float64(n)
	b.Lo, _ = Wilson(passed, n)
	_, b.Hi = Wilson(passed+leftOut, n)
	return b
}

// N is every run the bounds speak of: those with an outcome and those left out.
func (b Bounds) N() int { return b.Passed + b.Failed + b.LeftOut }
