package cliff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// A synthetic recording: tails from steps before the cliff pass at before, from the cliff on
// at after; or, gradual, the rate falls in a straight line from before at step 0 to after at
// the last step, with no single step where it drops.
type synthetic struct {
	steps, cliff  int
	before, after float64
	gradual       bool
}

func (s synthetic) rate(step int) float64 {
	if s.gradual {
		return s.before + (s.after-s.before)*float64(step)/float64(s.steps)
	}
	if step < s.cliff {
		return s.before
	}
	return s.after
}

func drawSynthetic(rng *rand.Rand, steps int) synthetic {
	return synthetic{
		steps:  steps,
		cliff:  1 + rng.IntN(steps), // the tool calls are steps 1..steps
		before: 0.5 + 0.45*rng.Float64(),
		after:  0.3 * rng.Float64(),
	}
}

// point is where an adaptive search stood after one of its rounds.
type point struct {
	spent  int
	guess  int // the step the report would name: Hi of the boundary
	pinned bool
}

// trajectoryBudget is where a trajectory stops: 16 times the default budget, beyond which a
// search that has not pinned counts as not pinned.
const trajectoryBudget = 16 * defaultBudget

// searchTrajectory runs the search on s with a budget that rarely binds and returns where it
// stood after every round, so the location a smaller budget would have reported can be read
// off: the search is a function of its observations, so a smaller budget sees a prefix.
func searchTrajectory(rng *rand.Rand, s synthetic, tails int) []point {
	cfg := Config{Steps: s.steps, Tails: tails, Budget: trajectoryBudget, GapBelow: 0}
	obs := map[int]Count{}
	var path []point
	for {
		d := Decide(cfg, obs)
		if d.Kind != Running {
			p := point{spent: d.Spent, guess: d.Hi, pinned: d.Kind == Pinned}
			if d.Kind == NoCliff {
				p.guess = -1
			}
			return append(path, p)
		}
		c := obs[d.Step]
		for range d.Want {
			c.Tails++
			c.Verdicts++
			if rng.Float64() < s.rate(d.Step) {
				c.Passed++
			}
		}
		obs[d.Step] = c
		path = append(path, point{spent: d.Spent + d.Want, guess: Posterior(s.steps, obs).MostLikely()})
		if len(path) > 100000 {
			panic(fmt.Sprintf("search does not stop: %+v %+v %v", s, d, obs))
		}
	}
}

// guessAt is the step a search limited to budget tails would have named.
func guessAt(path []point, budget int) int {
	g := -1
	for _, p := range path {
		if p.spent > budget {
			break
		}
		g = p.guess
	}
	return g
}

// linearScan starts tails at every step and names the most likely split.
func linearScan(rng *rand.Rand, s synthetic, perStep int) int {
	obs := map[int]Count{}
	for step := 0; step <= s.steps; step++ {
		c := Count{Tails: perStep, Verdicts: perStep}
		for range perStep {
			if rng.Float64() < s.rate(step) {
				c.Passed++
			}
		}
		obs[step] = c
	}
	return Posterior(s.steps, obs).MostLikely()
}

func within1(guess, cliff int) bool { return guess >= 0 && abs(guess-cliff) <= 1 }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

type simRow struct {
	steps           int
	pinnedDefault   float64 // how often a search pins the cliff within the default budget
	pinnedRight     float64 // of the pinned, how often within one step of the true cliff
	pinnedRightN    int     // how many were pinned (any budget)
	adaptive90      int     // fewest tails with which 90% of searches name the cliff within one step
	pinnedMedian    int     // median tails until pinned
	linearTails     int     // the linear scan's tails at the same tails per step
	linearWithin1   float64 // how often that scan names the cliff within one step
	linear90PerStep int     // tails per step a linear scan needs for 90% within one step
	linear90Tails   int
}

func simulate(steps, reps, tails int, seed uint64) simRow {
	rng := rand.New(rand.NewPCG(seed, uint64(steps)))
	row := simRow{steps: steps, linearTails: (steps + 1) * tails}
	cases := make([]synthetic, reps)
	paths := make([][]point, reps)
	var pinnedAt []int
	maxSpent, inDefault, right := 0, 0, 0
	for i := range cases {
		cases[i] = drawSynthetic(rng, steps)
		paths[i] = searchTrajectory(rng, cases[i], tails)
		last := paths[i][len(paths[i])-1]
		pinnedAt = append(pinnedAt, last.spent)
		maxSpent = max(maxSpent, last.spent)
		// The search is a function of its observations, so one with the default budget
		// follows this path and pins where it does if that is within the budget.
		if last.pinned {
			row.pinnedRightN++
			if within1(last.guess, cases[i].cliff) {
				right++
			}
			if last.spent <= defaultBudget {
				inDefault++
			}
		}
	}
	row.pinnedDefault = float64(inDefault) / float64(reps)
	row.pinnedRight = float64(right) / float64(max(1, row.pinnedRightN))
	sort.Ints(pinnedAt)
	row.pinnedMedian = pinnedAt[len(pinnedAt)/2]
	row.adaptive90 = -1
	for budget := 2 * tails; budget <= maxSpent; budget++ {
		hits := 0
		for i, c := range cases {
			if within1(guessAt(paths[i], budget), c.cliff) {
				hits++
			}
		}
		if float64(hits) >= 0.9*float64(reps) {
			row.adaptive90 = budget
			break
		}
	}
	hits := 0
	for _, c := range cases {
		if within1(linearScan(rng, c, tails), c.cliff) {
			hits++
		}
	}
	row.linearWithin1 = float64(hits) / float64(reps)
	for per := 1; per <= 40; per++ {
		hits := 0
		for _, c := range cases {
			if within1(linearScan(rng, c, per), c.cliff) {
				hits++
			}
		}
		if float64(hits) >= 0.9*float64(reps) {
			row.linear90PerStep, row.linear90Tails = per, per*(steps+1)
			break
		}
	}
	return row
}

// TestSimulatedCliffs runs the search on synthetic recordings of 10 to 200 steps with a known
// cliff (before 0.5-0.95, after 0-0.3) and compares the tails it needs to name the cliff within
// one step in 90% of searches with a linear scan of every step, at 3 tails a step and at the
// fewest tails a step that reach the same 90%. The design targets: at most half the tails of
// an equally accurate linear scan at 50 steps, growing close to log(steps).
//
// Also per row: how often the search pins the cliff within the default budget of 30 tails, and
// how often a pinned answer is right (within one step), apart from the unpinned guesses the
// 90% column credits.
func TestSimulatedCliffs(t *testing.T) {
	const tails = 3
	reps := simReps(60)
	var rows []simRow
	var b strings.Builder
	fmt.Fprintf(&b, "\n%6s %12s %14s %10s %12s %13s %14s %16s %9s\n", "steps", "adaptive 90%", "pinned median", "pinned@30", "pinned right", "linear 3/step", "linear within1", "linear 90% needs", "adaptive/linear")
	for _, steps := range []int{10, 20, 50, 200} {
		r := simulate(steps, reps, tails, 7)
		rows = append(rows, r)
		need := "more than 40/step"
		if r.linear90PerStep > 0 {
			need = fmt.Sprintf("%d (%d/step)", r.linear90Tails, r.linear90PerStep)
		}
		fmt.Fprintf(&b, "%6d %12d %14d %9.0f%% %11.1f%% %13d %13.0f%% %18s %15.0f%%\n", r.steps, r.adaptive90, r.pinnedMedian, 100*r.pinnedDefault, 100*r.pinnedRight, r.linearTails, 100*r.linearWithin1, need, 100*float64(r.adaptive90)/float64(max(1, r.linear90Tails)))
	}
	t.Log(b.String())
	for _, r := range rows {
		if r.adaptive90 < 0 {
			t.Fatalf("%d steps: the search never names the cliff within one step in 90%% of cases", r.steps)
		}
		// At equal accuracy: a linear scan with 3 tails a step names the cliff within one
		// step in well under 90% of cases, so the fair baseline is the scan with the fewest
		// tails a step that reaches 90%.
		// A pinned answer is a claim (posterior 0.95 within one step): it must be right at
		// about that rate, whatever the unpinned guesses do: at least 0.93, or under -short,
		// whose few pins cannot tell 0.93 from chance, two standard errors below 0.95.
		want := 0.93
		if testing.Short() {
			want = PinnedMass - 2*math.Sqrt(PinnedMass*(1-PinnedMass)/float64(max(1, r.pinnedRightN)))
		}
		if r.pinnedRight < want {
			t.Errorf("%d steps: of %d pinned cliffs only %.1f%% are within one step of the true one", r.steps, r.pinnedRightN, 100*r.pinnedRight)
		}
		if r.steps == 50 && (r.linear90Tails == 0 || r.adaptive90*2 > r.linear90Tails) {
			t.Errorf("50 steps: the search needs %d tails for 90%% within one step, more than half the %d of a linear scan as accurate", r.adaptive90, r.linear90Tails)
		}
	}
	// Growth close to log(steps): from 10 to 200 steps (log ratio 2.3) the tails needed may
	// grow by at most about the log ratio plus the fixed cost of the two anchors, far below the
	// 20x of a linear scan.
	first, last := rows[0], rows[len(rows)-1]
	growth := float64(last.adaptive90) / float64(first.adaptive90)
	logGrowth := math.Log(float64(last.steps)) / math.Log(float64(first.steps))
	if growth > 2*logGrowth {
		t.Errorf("tails grow %.1fx from %d to %d steps, against log growth %.1fx", growth, first.steps, last.steps, logGrowth)
	}
}

// simReps is how many simulated searches a table row runs: full by default, which gives the
// figures the README quotes, and a fifth of it under -short, enough for every assertion to
// mean something while `go test -short ./engine/cliff` stays a matter of seconds.
func simReps(full int) int {
	if testing.Short() {
		return max(1, full/5)
	}
	return full
}

// defaultBudget is tare cliff's default --budget.
const defaultBudget = 30

// runSearch runs a search to its end on s with the given budget.
func runSearch(rng *rand.Rand, s synthetic, tails, budget int) Decision {
	return search(rng, world{s.steps, s.rate, []int{s.cliff}}, tails, budget)
}

// TestSimulatedGradualDeclines: recordings whose pass rate falls in a straight line from the
// start (0.5-0.95) to the last step (0-0.3), with no single step where it drops. A search that
// assumed two flat rates named a cliff in nearly all of them; now it names one rarely (at
// most 10% at each length, with the default budget and with four times it), and says
// "gradual decline" or "not pinned" instead. Beside them, real cliffs of the same range: how
// often they are pinned and how often they are mistaken for a decline.
func TestSimulatedGradualDeclines(t *testing.T) {
	const tails = 3
	reps := simReps(60)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%6s %7s | %-44s | %-44s\n", "steps", "budget", "gradual declines: pinned / gradual / other", "real cliffs: pinned (right) / gradual / other")
	for _, budget := range []int{defaultBudget, 16 * defaultBudget} {
		for _, steps := range []int{10, 50, 200} {
			rng := rand.New(rand.NewPCG(uint64(budget), uint64(steps)))
			var gp, gg, rp, rr, rg int
			for range reps {
				g := drawSynthetic(rng, steps)
				g.gradual = true
				switch runSearch(rng, g, tails, budget).Kind {
				case Pinned:
					gp++
				case Gradual:
					gg++
				}
				c := drawSynthetic(rng, steps)
				switch d := runSearch(rng, c, tails, budget); d.Kind {
				case Pinned:
					rp++
					if within1(d.Hi, c.cliff) {
						rr++
					}
				case Gradual:
					if d.Models.Decline >= PinnedMass {
						rg++ // said with the search's own bar, not only the likeliest
					}
				}
			}
			pct := func(n int) float64 { return 100 * float64(n) / float64(reps) }
			fmt.Fprintf(&b, "%6d %7d | %12.0f%% %12.0f%% %16.0f%% | %8.0f%% (%3.0f%%) %10.0f%% %14.0f%%\n", steps, budget,
				pct(gp), pct(gg), pct(reps-gp-gg), pct(rp), 100*float64(rr)/float64(max(1, rp)), pct(rg), pct(reps-rp-rg))
			if pct(gp) > 10 {
				t.Errorf("%d steps, budget %d: a cliff named on %.0f%% of gradual declines, want at most 10%%", steps, budget, pct(gp))
			}
			if pct(rg) > 10 {
				t.Errorf("%d steps, budget %d: %.0f%% of real cliffs called a gradual decline with probability %.2f or more", steps, budget, pct(rg), PinnedMass)
			}
		}
	}
	t.Log(b.String())
}
