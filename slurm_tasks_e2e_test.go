package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/engine"
)

// scoresOf are a judge-noise run's scores, page by page, judgement by judgement (nil: none).
func scoresOf(t *testing.T, out string) [][]*int {
	t.Helper()
	var rep engine.JudgeReport
	data, err := os.ReadFile(filepath.Join(out, "judgements.json"))
	if err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("%s/judgements.json: %v", out, err)
	}
	var all [][]*int
	for _, p := range rep.Pages {
		var s []*int
		for _, j := range p.Judgements {
			if j.Score == nil {
				t.Errorf("page %s: a judgement without a score: %s", p.Dir, j.Error)
			}
			s = append(s, j.Score)
		}
		all = append(all, s)
	}
	return all
}

// TestSlurmJudgeNoiseGivesTheLocalScores: judge-noise --on slurm runs each judgement as a job
// on a real two-node Slurm (real headless Chromium renders the page here, the real claude
// judges it in a room on the node, on tare's scripted model server) and gives every
// judgement the score the same seeded run gives on this machine. The journal shows each
// judgement's job pending, running on a node, finished; the judgements spread over both
// nodes; nothing is left below the shared directory.
func TestSlurmJudgeNoiseGivesTheLocalScores(t *testing.T) {
	slurmUp(t)
	page, rubric, script := judgeFiles(t, noiseScript)
	r := newRun(t, "")
	args := func(out string, extra ...string) []string {
		return append([]string{"judge-noise", page, "--rubric", rubric, "--times", "4", "--jobs", "4", "--script", script,
			"--seed", "11", "--judge", "claude", "--out", out}, extra...)
	}
	local, onSlurm := filepath.Join(r.home, "local"), filepath.Join(r.home, "slurm")
	if r.tare(t, args(local)...); r.code != 0 && r.code != 1 {
		t.Fatalf("local judge-noise exited %d\n%s", r.code, r.stderr)
	}
	if r.tare(t, args(onSlurm, "--on", "slurm")...); r.code != 0 && r.code != 1 {
		t.Fatalf("judge-noise --on slurm exited %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want, got := scoresOf(t, local), scoresOf(t, onSlurm)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("scores on slurm %v, locally %v", deref(got), deref(want))
	}
	nodes := map[string]bool{}
	ps := places(readEvents(onSlurm))
	for _, id := range []string{"p1-1", "p1-2", "p1-3", "p1-4"} {
		var states []string
		for _, p := range ps[id] {
			states = append(states, p.State)
		}
		if strings.Join(states, ",") != "pending,running,finished" || ps[id][1].Node == "" {
			t.Errorf("judgement %s's places: %+v, want pending, running on a node, finished", id, ps[id])
			continue
		}
		nodes[ps[id][1].Node] = true
	}
	if !nodes["n1"] || !nodes["n2"] {
		t.Errorf("the judgements ran on %v, want both n1 and n2", nodes)
	}
	if !exists(filepath.Join(onSlurm, "cluster.json")) || exists(sharedRoot(t, onSlurm)) {
		t.Errorf("the run's folder below the shared directory is left after the run")
	}
}

func deref(s [][]*int) [][]int {
	var out [][]int
	for _, p := range s {
		var row []int
		for _, v := range p {
			if v == nil {
				row = append(row, -1)
			} else {
				row = append(row, *v)
			}
		}
		out = append(out, row)
	}
	return out
}

// TestSlurmJudgeNoiseCtrlCCancelsTheJobs: ctrl+c of a judge-noise --on slurm whose judges
// wait on a slow model cancels their running jobs: tare ends, and Slurm shows each job
// cancelled, not left running unseen.
func TestSlurmJudgeNoiseCtrlCCancelsTheJobs(t *testing.T) {
	slurmUp(t)
	page, rubric, script := judgeFiles(t, "[[turn]]\ndelay = \"60s\"\ntext = \"score 6: fine\"\n")
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	cmd := exec.Command(tareBin, "judge-noise", page, "--rubric", rubric, "--times", "2", "--jobs", "2", "--script", script,
		"--judge", "claude", "--out", out, "--on", "slurm")
	cmd.Env = r.env()
	waited := startReaped(t, cmd)
	var jobs []string
	for deadline := time.Now().Add(2 * time.Minute); len(jobs) < 2; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the judgements' jobs did not both run: %+v", places(readEvents(out)))
		}
		jobs = jobs[:0]
		for _, ps := range places(readEvents(out)) {
			if p := ps[len(ps)-1]; p.State == "running" {
				jobs = append(jobs, p.Job)
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("tare did not end after ctrl+c")
	}
	for _, job := range jobs {
		if s := jobState(t, job); s != "CANCELLED" {
			t.Errorf("job %s is %q after ctrl+c, want CANCELLED", job, s)
		}
	}
}
