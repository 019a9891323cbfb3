package stats

import (
	"math"
	"sort"
)

// Verdict is one run's outcome as the stratified test reads it.
type Verdict int8

// A run passed, failed, or was left out (killed as an infrastructure fault, a check that
// could not run): a left-out run's outcome is unknown and is not assumed to be random.
const (
	Failed Verdict = iota
	Passed
	LeftOut
)

// The e-processes bet a fraction λ of their capital on each pair, for every λ on this grid
// at once (a mixture with equal weights): λ_j = j/(lambdas+1), so no bet can lose all.
const lambdas = 20

// mixture is a one-sided betting capital on pairs' values Y in {-1, 0, 1}: for each λ on
// the grid the capital Π(1 + λY), and their mean. With λ >= 0 it grows when a passes where
// b fails. Under equal rates E[Y] = 0, so each capital, and their mean, is a nonnegative
// martingale starting at 1. Each capital rises with every Y, which the worst-case rule for
// left-out runs relies on.
type mixture struct{ log [lambdas]float64 }

func (m *mixture) add(y int) {
	if y == 0 {
		return
	}
	for j := range m.log {
		m.log[j] += math.Log1p(float64(y) * float64(j+1) / (lambdas + 1))
	}
}

// value is the mixture's capital: the mean over the grid.
func (m *mixture) value() float64 {
	s := 0.0
	for _, l := range m.log {
		s += math.Exp(l)
	}
	return s / lambdas
}

// stratum is one task's pairs: a's bettors (against a when runs are left out) and b's.
type stratum struct {
	pairs, discordant int
	up, down          mixture
}

// StratTest is an anytime-valid test that two sides pass a set of tasks equally often,
// from runs paired within each task, looked at after every pair: `--until-separated` over
// tasks may stop the first time it separates, or never, and its error stays at most Alpha.
//
// The null is no difference on any task (a's rate equals b's task by task, whatever the
// tasks' rates). Runs are paired within a task, a's j-th run with b's j-th, in an order
// fixed before their outcomes are known (start order); a pair's value is a's outcome minus
// b's. Under the null it has mean zero given everything before, on whichever task it falls
// and whatever chose that task (a run whose partner has not finished waits for it; runs
// left without a partner carry no evidence here), so a bettor's capital is a test
// martingale and by Ville's inequality ever reaches 1/Alpha with chance at most Alpha. This is the paired form of the
// safe tests for stratified 2x2 streams (Turner and Grünwald, "Safe sequential testing and
// effect estimation in stratified count data", AISTATS 2023): where they test each stratum's
// 2x2 table, runs paired by task need only the pairs where the sides differ, which under the
// null are fair coins on every task. The e-value is the mean of four test martingales, each
// a mixture over bet sizes, so it is one too:
//   - a ahead, pooled: one bettor over every pair, strong when a leads on most tasks;
//   - a ahead, stratified: the product over tasks of each task's own bettor, strong when a
//     leads by much on a few tasks; the product over strata is a test martingale because
//     each task's factor has conditional mean one under the null;
//   - and the same two for b ahead.
//
// Left-out runs are counted both ways before separating: the bettors on a being ahead see
// a's left-out runs as failed and b's as passed, those on b being ahead the reverse. Each
// capital only rises with a's outcome (or b's, for b's bettors), so whatever the left-out
// runs would have been the e-value is at most the one on their true outcomes: the test
// separates only when it would have on every completion of the data, and its error stays
// at most Alpha even if runs are left out because of how they were going.
//
// What a separation does not mean: that a is better on every task, or by how much (use
// TaskDiff once the runs are in, knowing it is read after a data-chosen stop).
type StratTest struct {
	// Alpha is the error allowed over the whole sequence, however it is stopped.
	Alpha float64
	// Pairs is every pair taken, over all tasks.
	Pairs int
	// Separated is +1 once the test found a ahead, -1 b ahead, 0 before; it stays decided
	// whatever pairs follow. At is the pair (1-based, over all tasks) at which it did.
	Separated, At int

	tasks              map[int]*stratum
	up, down           mixture // pooled
	logUpS, logDownS   float64 // Σ over tasks of log of each task's mixture value
	eUp, eDown, eValue float64
}

// NewStratTest starts a stratified test at error alpha.
func NewStratTest(alpha float64) *StratTest {
	return &StratTest{Alpha: alpha, tasks: map[int]*stratum{}, eUp: 1, eDown: 1, eValue: 1}
}

// Add takes one pair on a task (any int naming it): a's run and b's.
func (t *StratTest) Add(task int, a, b Verdict) {
	s := t.tasks[task]
	if s == nil {
		s = &stratum{}
		t.tasks[task] = s
	}
	t.Pairs++
	s.pairs++
	// Against a: a's left-out run failed, b's passed; against b the reverse.
	yUp := b2i(a == Passed) - b2i(b != Failed)
	yDown := b2i(a != Failed) - b2i(b == Passed)
	if a != b || a == LeftOut {
		s.discordant++
	}
	oldUp, oldDown := math.Log(s.up.value()), math.Log(s.down.value())
	s.up.add(yUp)
	s.down.add(-yDown)
	t.up.add(yUp)
	t.down.add(-yDown)
	t.logUpS += math.Log(s.up.value()) - oldUp
	t.logDownS += math.Log(s.down.value()) - oldDown
	t.eUp = (t.up.value() + math.Exp(t.logUpS)) / 2
	t.eDown = (t.down.value() + math.Exp(t.logDownS)) / 2
	t.eValue = (t.eUp + t.eDown) / 2
	if t.Separated == 0 && t.eValue >= 1/t.Alpha {
		t.Separated, t.At = 1, t.Pairs
		if t.eDown > t.eUp {
			t.Separated = -1
		}
	}
}

// EValue is the evidence against no difference now: the capital a bettor who started with
// 1 holds. Under the null it reaches 1/Alpha with chance at most Alpha, ever; 20 is
// separation at 5%. It is not a probability, and it may fall again after a separation.
func (t *StratTest) EValue() float64 { return t.eValue }

// TaskEvidence is one task's own evidence that the sides differ on it.
type TaskEvidence struct {
	// Task names the task as Add was given it.
	Task int
	// Pairs is the task's pairs, Discordant those where the sides differed or a run was left
	// out (the only ones that carry evidence).
	Pairs, Discordant int
	// EValue is the task's own e-value: the mean of its bettor on a ahead and its bettor on
	// b ahead, with left-out runs counted against the side each backs. Under no difference
	// on this task it reaches 1/alpha with chance at most alpha.
	EValue float64
	// Favours is +1 when the evidence points to a, -1 to b, 0 when there is none.
	Favours int
}

// Tasks ranks the tasks by how strongly each one alone separates the sides, the strongest
// first (ties by task): the tasks on which to spend deeper tools such as cliff or swap.
//
// What it means: each EValue is valid for its own task, so a task reached 1/alpha by
// chance with probability at most alpha. What it does not mean: the list is not corrected
// for looking at many tasks: among 40 tasks with no difference at all, about two may show
// an e-value of 20 by chance. Read it as a ranking; to claim a set of tasks differs at
// alpha, apply e-BH (Wang and Ramdas 2022) or Bonferroni over the tasks.
func (t *StratTest) Tasks() []TaskEvidence {
	out := make([]TaskEvidence, 0, len(t.tasks))
	for id, s := range t.tasks {
		up, down := s.up.value(), s.down.value()
		e := TaskEvidence{Task: id, Pairs: s.pairs, Discordant: s.discordant, EValue: (up + down) / 2}
		switch {
		case up > down:
			e.Favours = 1
		case down > up:
			e.Favours = -1
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].EValue != out[j].EValue {
			return out[i].EValue > out[j].EValue
		}
		return out[i].Task < out[j].Task
	})
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
