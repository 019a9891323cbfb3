package engine

import (
	"fmt"

	"tare/engine/journal"
	"tare/engine/run"
	"tare/modelserver"
)

// A run's caps (--run-max-cost, --run-max-tokens) bound all its tails together. On Slurm each
// tail's worker meters its own calls on its node and cannot see the others', so the run's
// cap stays with the submitting tare: its own meter, charging the run's one budget, stands
// between every job and tare's model server (caps need the model server, which is this
// tare's), and the workers keep only the tail's caps. A tail whose call that meter refused
// ends over budget, as it does locally.

// checkSlurmRunCaps refuses a run cap that Slurm cannot hold: on a real provider there is no
// model server for the submitting tare's meter to stand in front of, and each node's worker
// sees only its own tail's calls, so the run's cap would go unenforced.
func checkSlurmRunCaps(rec *run.Recipe) error {
	if c := rec.Caps; c != nil && (c.RunTokens > 0 || c.RunCost > 0) && rec.ScriptText == "" {
		return fmt.Errorf("--run-max-cost/--run-max-tokens with --on slurm on a real provider: each node meters only its own tail, so no one meter sees the run's calls and the run's cap cannot hold; fix: cap each tail with --max-cost/--max-tokens, run on this machine, or on tare's model server (--script)")
	}
	return nil
}

// runMeter puts the run's meter in front of upstream for one tail's job, when the run has a
// run cap; it returns the address the job dials and the meter (nil: no run cap).
func (b *slurmBackend) runMeter(env *tailEnv, upstream string) (string, *modelserver.Meter, error) {
	budget := env.runBudget()
	if budget == nil || upstream == "" {
		return upstream, nil, nil
	}
	m, err := modelserver.NewMeter(upstream, CostOf, budget)
	if err != nil {
		return "", nil, fmt.Errorf("the run's meter: %v", err)
	}
	return m.Addr(), m, nil
}

// nodeRecipe is the recipe a job carries: the run's, without the run's caps, which the
// submitting tare's meter holds (a worker's count would start from zero on every node).
func nodeRecipe(rec *run.Recipe) *run.Recipe {
	if rec == nil || rec.Caps == nil || (rec.Caps.RunTokens == 0 && rec.Caps.RunCost == 0) {
		return rec
	}
	r, c := *rec, *rec.Caps
	c.RunTokens, c.RunCost = 0, 0
	r.Caps = &c
	return &r
}

// overRun ends a tail over budget when the run's meter refused one of its calls: the agent
// got the refusal and stopped, as it does locally (where the check does not run then).
func overRun(m *modelserver.Meter, res *journal.TailResult, exit, check string) (string, string) {
	if m == nil {
		return exit, check
	}
	why := m.OverBudget()
	if why == "" || (res.Status == journal.StatusNoVerdict && res.Reason != journal.ReasonNotStarted && res.Reason != "") {
		return exit, check
	}
	refused := 0
	for _, c := range m.Calls() {
		if c.OverBudget {
			refused++
		}
	}
	if res.Metered == nil {
		res.Metered = &journal.Metered{}
	}
	// The worker's meter saw the refusal as an answered call.
	res.Metered.Calls = max(0, res.Metered.Calls-refused)
	res.Metered.Refused += refused
	res.Metered.OverBudget = why
	res.Passed, res.Score, res.Status, res.Reason = false, nil, journal.StatusNoVerdict, journal.ReasonOverBudget
	return fmt.Sprintf("over budget after %d model calls: %s", res.Metered.Calls, why), "not checked"
}
