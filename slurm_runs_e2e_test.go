package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"tare/demo"
	"tare/engine"
)

// TestSlurmSwapRunsItsTailsAsJobs: tare swap --on slurm records its two originals here and
// sends every tail (native ones, whose session travels in the job, and handoffs) to Slurm:
// each tail is journaled pending, then running on a node with a job id, then finished, each
// gets a verdict, and the report is written. Cliff's tails go the same way (runTail through
// the run's backend).
func TestSlurmSwapRunsItsTailsAsJobs(t *testing.T) {
	slurmUp(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(r.home, "swap")
	if r.tare(t, "swap", demo.Task, "--a", "pi", "--b", "pi", "--cuts", "0.5", "--tails", "1", "--jobs", "6", "--check", demo.Check,
		"--script", paths.SwapScript, "--seed", fmt.Sprint(demo.SwapSeed), "--project", paths.Project, "--out", out, "--on", "slurm"); r.code != 0 {
		t.Fatalf("swap --on slurm exited %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "state effect") {
		t.Errorf("no swap report:\n%s", r.stdout)
	}
	events := readEvents(out)
	st := engine.Replay("swap", events)
	placed := places(events)
	hows := map[string]bool{}
	for id, tl := range st.Tails {
		ps := placed[id]
		var states []string
		for _, p := range ps {
			states = append(states, p.State)
		}
		if strings.Join(states, ",") != "pending,running,finished" || ps[1].Node == "" || ps[1].Job == "" {
			t.Errorf("tail %s's places: %+v, want pending, running on a node with its job id, finished", id, ps)
		}
		if tl.Status != engine.StatusPassed && tl.Status != engine.StatusFailed {
			t.Errorf("tail %s: %s %s, want a verdict", id, tl.Status, tl.Detail)
		}
		hows[tl.How] = true
	}
	if len(st.Tails) != 6 || !hows["native"] || !hows["handoff"] {
		t.Errorf("%d tails, ways %v: want 6, native and handoff", len(st.Tails), hows)
	}
}
