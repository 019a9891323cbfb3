package cliff

import (
	"math"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Steps: 0, Tails: 3, Budget: 30}, "no tool calls"},
		{Config{Steps: 5, Tails: 0, Budget: 30}, "--tails 0"},
		{Config{Steps: 5, Tails: 3, Budget: 5}, "--budget 5 is less than the 6 tails"},
		{Config{Steps: 5, Tails: 3, Budget: 30, GapBelow: 1.5}, "--gap-below 1.5"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{Steps: 5, Tails: 3, Budget: 6, GapBelow: 0.2}).Validate(); err != nil {
		t.Errorf("the smallest valid budget is refused: %v", err)
	}
}

func TestStartAndEndFirst(t *testing.T) {
	cfg := Config{Steps: 10, Tails: 3, Budget: 30, GapBelow: 0.2}
	d := Decide(cfg, nil)
	if d.Kind != Running || d.Step != 0 || d.Want != 1 {
		t.Fatalf("first decision %+v, want 1 tail at step 0", d)
	}
	d = Decide(cfg, map[int]Count{0: {3, 3, 2}})
	if d.Kind != Running || d.Step != 10 {
		t.Fatalf("after the start: %+v, want the last step", d)
	}
}

// A tail with no verdict spends budget but says nothing of its step: the start is measured
// again until it has a verdict.
func TestNoVerdictSpendsButDoesNotCount(t *testing.T) {
	cfg := Config{Steps: 10, Tails: 3, Budget: 30, GapBelow: 0.2}
	d := Decide(cfg, map[int]Count{0: {Tails: 3, Verdicts: 0}})
	if d.Kind != Running || d.Step != 0 || d.Want != 1 || d.Spent != 3 {
		t.Fatalf("%+v: want another tail at step 0 with 3 spent", d)
	}
	d = Decide(Config{Steps: 10, Tails: 3, Budget: 6, GapBelow: 0.2}, map[int]Count{0: {Tails: 3, Verdicts: 1, Passed: 1}, 10: {Tails: 2, Verdicts: 2}})
	if d.Kind == Running && d.Want != 1 {
		t.Fatalf("%+v: a round never goes past the budget", d)
	}
}

func TestModelGap(t *testing.T) {
	cfg := Config{Steps: 10, Tails: 3, Budget: 30, GapBelow: 0.2}
	// 0/3 has an upper bound of 0.56: three failures are no proof the task is beyond the model.
	if d := Decide(cfg, map[int]Count{0: {3, 3, 0}}); d.Kind == ModelGap {
		t.Fatalf("0/3 declared a model gap: %+v", d)
	}
	d := Decide(cfg, map[int]Count{0: {20, 20, 0}})
	if d.Kind != ModelGap || !strings.Contains(d.Why, "beyond the model") {
		t.Fatalf("0/20 at the start: %+v, want a model gap", d)
	}
}

// A last step that passes as often as the start is measured again, and "no cliff" is said
// only when the budget is spent, never on the first few tails.
func TestNoCliffOnlyWhenBudgetSpent(t *testing.T) {
	cfg := Config{Steps: 10, Tails: 3, Budget: 12, GapBelow: 0.2}
	d := Decide(cfg, map[int]Count{0: {3, 3, 2}, 10: {3, 3, 3}})
	if d.Kind != Running || (d.Step != 0 && d.Step != 10) {
		t.Fatalf("%+v: want the ends measured again", d)
	}
	d = Decide(cfg, map[int]Count{0: {6, 6, 4}, 10: {6, 6, 5}})
	if d.Kind != NoCliff {
		t.Fatalf("%+v: want no cliff with the budget spent", d)
	}
}

// A clear scripted cliff (always passes before step 6, never from it) is pinned at step 6
// within the default budget, with both sides of it measured.
func TestPinsAClearCliff(t *testing.T) {
	cfg := Config{Steps: 12, Tails: 3, Budget: 30, GapBelow: 0.2}
	obs := map[int]Count{}
	for {
		d := Decide(cfg, obs)
		if d.Kind != Running {
			if d.Kind != Pinned || d.Hi != 6 || d.Lo != 5 {
				t.Fatalf("ended %+v (%s), want pinned at step 6", d, d.Why)
			}
			if obs[5].Verdicts == 0 || obs[6].Verdicts == 0 {
				t.Fatalf("pinned without measuring both sides: %v", obs)
			}
			if d.Spent > cfg.Budget {
				t.Fatalf("spent %d of a budget of %d", d.Spent, cfg.Budget)
			}
			return
		}
		c := obs[d.Step]
		c.Tails += d.Want
		c.Verdicts += d.Want
		if d.Step < 6 {
			c.Passed += d.Want
		}
		obs[d.Step] = c
	}
}

// When the budget runs out the search says so and still names the most likely boundary.
func TestNotPinnedWhenBudgetRunsOut(t *testing.T) {
	cfg := Config{Steps: 40, Tails: 3, Budget: 9, GapBelow: 0.2}
	d := Decide(cfg, map[int]Count{0: {3, 3, 3}, 40: {3, 3, 0}, 20: {3, 3, 3}})
	if d.Kind != NotPinned || !strings.HasPrefix(d.Why, "budget spent") {
		t.Fatalf("%+v: want not pinned", d)
	}
	if d.Hi <= 20 || d.Hi > 40 {
		t.Fatalf("%+v: the boundary should lie after step 20", d)
	}
}

func TestPosteriorSumsToOne(t *testing.T) {
	post := Posterior(7, map[int]Count{0: {3, 3, 3}, 7: {3, 3, 0}, 3: {3, 3, 1}})
	sum := 0.0
	for _, p := range post[1:] {
		sum += p
	}
	if sum < 0.999999 || sum > 1.000001 {
		t.Fatalf("posterior sums to %f", sum)
	}
	if post.MostLikely() > 3 {
		t.Fatalf("most likely %d; step 3 fails like the end, so the cliff is at or before it", post.MostLikely())
	}
}

// Tails whose pass rate falls step by step (from 9/9 at the start to 0/9 at the last step,
// evenly) are no cliff: with the budget spent the search says "gradual decline", and it never
// says "pinned" with the posterior sure of a boundary that one step does not explain.
func TestGradualDecline(t *testing.T) {
	obs := map[int]Count{}
	for s := 0; s <= 8; s++ {
		obs[s] = Count{Tails: 9, Verdicts: 9, Passed: 9 - s - s/8}
	}
	d := Decide(Config{Steps: 8, Tails: 3, Budget: 81, GapBelow: 0.2}, obs)
	if d.Kind != Gradual || d.StepOdds >= 1 {
		t.Fatalf("%+v (%s): want a gradual decline", d, d.Why)
	}
	// A sharp fall at step 4 among the same steps is a cliff.
	for s := 0; s <= 8; s++ {
		obs[s] = Count{Tails: 9, Verdicts: 9, Passed: map[bool]int{true: 8, false: 1}[s < 4]}
	}
	if d := Decide(Config{Steps: 8, Tails: 3, Budget: 81, GapBelow: 0.2}, obs); d.Kind != Pinned || d.Hi != 4 || d.Models.OneStep < PinnedMass {
		t.Fatalf("%+v (%s): want pinned at step 4", d, d.Why)
	}
}

// Probabilities are printed rounded down, and never as certainty.
func TestProb(t *testing.T) {
	for p, want := range map[float64]string{0.999: "> 0.99", 0.995: "> 0.99", 0.9899: "0.98", 0.95: "0.95", 0.949: "0.94", 0.004: "< 0.01", 0.5: "0.50"} {
		if got := Prob(p); got != want {
			t.Errorf("Prob(%g) = %q, want %q", p, got, want)
		}
	}
}

// logFall is the chance that the first of two Beta posteriors is above the second (times 2),
// checked against a fine grid integration.
func TestLogFall(t *testing.T) {
	for _, c := range [][4]int{{1, 1, 1, 1}, {4, 2, 1, 5}, {1, 5, 4, 2}, {10, 3, 2, 9}, {3, 3, 3, 3}} {
		const n = 2000
		num, den := 0.0, 0.0
		for i := range n {
			a := (float64(i) + 0.5) / n
			fa := math.Pow(a, float64(c[0]-1)) * math.Pow(1-a, float64(c[1]-1))
			for j := range n {
				b := (float64(j) + 0.5) / n
				w := fa * math.Pow(b, float64(c[2]-1)) * math.Pow(1-b, float64(c[3]-1))
				den += w
				if a > b {
					num += w
				}
			}
		}
		want := math.Log(2 * num / den)
		if got := logFall(c[0], c[1], c[2], c[3]); math.Abs(got-want) > 0.01 {
			t.Errorf("logFall%v = %.4f, grid %.4f", c, got, want)
		}
	}
}

// When the tails show the same rate everywhere, "no change" is the likeliest explanation and
// the budget's end says no difference was detected, naming no step.
func TestNoChangeNamesNoStep(t *testing.T) {
	d := Decide(Config{Steps: 8, Tails: 3, Budget: 24}, map[int]Count{0: {6, 6, 4}, 4: {6, 6, 4}, 6: {6, 6, 4}, 8: {6, 6, 3}})
	if d.Kind != NoCliff || d.Models.NoChange <= d.Models.OneStep || !strings.Contains(d.Why, "difference") {
		t.Fatalf("%+v (%s): want no cliff, no change the likeliest", d.Kind, d.Why)
	}
}

// Posterior is where the cliff may be given the observations and that there is one: for each
// candidate step c, the likelihood of every tail so far when steps before c share one unknown
// pass rate and steps from c on another, lower one (the two uniform a priori over the
// rates that fall, and integrated out), with every c equally likely beforehand. A step with no tails adds nothing, so the mass spreads evenly over the
// stretches not yet measured, which is what sends the next tails into them.
func Posterior(steps int, obs map[int]Count) Dist {
	d, _ := posterior(steps, obs)
	return d
}
