package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/capsule"
	"tare/demo"
	"tare/engine/journal"
)

// TestSlurmSwapRunsItsTailsAsJobs: tare swap --on slurm records its two originals here and
// sends every tail (native ones, whose session travels in the job, and handoffs) to Slurm:
// each tail is journaled pending, then running on a node with a job id, then finished, each
// gets a verdict, and the report is written. Cliff's tails go the same way (runTail through
// the run's backend).
func TestSlurmSwapRunsItsTailsAsJobs(t *testing.T) {
	paths, r := slurmDemo(t, "")
	out := filepath.Join(r.home, "swap")
	if r.tare(t, "swap", demo.Task, "--a", "pi", "--b", "pi", "--cuts", "0.5", "--tails", "1", "--jobs", "6", "--check", demo.Check,
		"--script", paths.SwapScript, "--seed", fmt.Sprint(demo.SwapSeed), "--project", paths.Project, "--out", out, "--on", "slurm"); r.code != 0 {
		t.Fatalf("swap --on slurm exited %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "state effect") {
		t.Errorf("no swap report:\n%s", r.stdout)
	}
	events := readEvents(out)
	st := journal.Replay("swap", events)
	placed := places(events)
	hows := map[journal.How]bool{}
	for id, tl := range st.Tails {
		ps := placed[id]
		var states []string
		for _, p := range ps {
			states = append(states, p.State)
		}
		if strings.Join(states, ",") != "pending,running,finished" || ps[1].Node == "" || ps[1].Job == "" {
			t.Errorf("tail %s's places: %+v, want pending, running on a node with its job id, finished", id, ps)
		}
		if tl.Status != journal.StatusPassed && tl.Status != journal.StatusFailed {
			t.Errorf("tail %s: %s %s, want a verdict", id, tl.Status, tl.Detail)
		}
		hows[tl.How] = true
	}
	if len(st.Tails) != 6 || !hows["native"] || !hows["handoff"] {
		t.Errorf("%d tails, ways %v: want 6, native and handoff", len(st.Tails), hows)
	}
	// Done: the run's folder below the shared directory (job files, exchange folders, the
	// shared store) is removed; it was kept only for a resume.
	if root := sharedRoot(t, out); exists(root) {
		t.Errorf("the finished run left %s behind", root)
	}
}

// TestSlurmOverHTTPWithoutTheSharedFolder: with [cluster] transport = "http" the tails run
// although the nodes cannot see the shared folder (here a tmpfs mounted only in tare's own
// mount namespace): each job fetches its job and start capsule from tare over HTTP with the
// run's token and sends back its tool calls as they come, its end capsule (imported into the
// run's store, hash-checked) and its result.
func TestSlurmOverHTTPWithoutTheSharedFolder(t *testing.T) {
	private := t.TempDir()
	paths, r := slurmDemo(t, "[cluster]\ntransport = \"http\"\nshared = \""+private+"\"\n")
	out := filepath.Join(r.home, "run")
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs tmpfs "$0" && exec "$@"`, private, tareBin}, calibrateArgs(paths, paths.Script, out, 1, 1, "--on", "slurm")...)...)
	cmd.Env = r.env()
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("calibrate --on slurm over http: %v\n%s", err, msg)
	}
	st := journal.Replay("run", readEvents(out))
	store, err := capsule.Open(filepath.Join(out, "store"))
	if err != nil {
		t.Fatal(err)
	}
	caps, _ := store.List()
	ends := map[string]bool{}
	for _, c := range caps {
		ends[c.ID] = true
	}
	for _, id := range []string{"a-0"} {
		tl := st.Tails[id]
		if tl == nil || (tl.Status != journal.StatusPassed && tl.Status != journal.StatusFailed) || tl.Place == nil || tl.Place.Node == "" || tl.Calls == 0 {
			t.Errorf("tail %s: %+v, want a verdict from a Slurm job with its tool calls", id, tl)
		}
		if !ends[id+"-end"] {
			t.Errorf("tail %s's end capsule did not come back into the run's store (%v)", id, ends)
		}
	}
}

// TestSlurmCtrlCCancelsTheJobs: ctrl+c of a calibrate --on slurm in line mode stops the run
// as SIGTERM does: its running job is cancelled (not left running unseen), tare ends, and
// the tail is left for tare resume to run again, not to re-attach to the cancelled job.
func TestSlurmCtrlCCancelsTheJobs(t *testing.T) {
	s := slowOnSlurm(t)
	out, job, cmd, stderr := s.out, s.job, s.cmd, s.stderr
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	s.awaitEnd(t, time.Minute, "ctrl+c")
	if s := jobState(t, job); s != "CANCELLED" {
		t.Fatalf("job %s is %q after ctrl+c, want CANCELLED", job, s)
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "tare: stopped; what finished is kept, and the rest is finished with: tare resume "+out) {
		t.Errorf("exit %d, stderr:\n%s\nwant 130 and the line that says how to finish the run", code, stderr.String())
	}
	st := journal.Replay("run", readEvents(out))
	if tl := st.Tails["a-0"]; tl == nil || tl.Status != journal.StatusRunning {
		t.Fatalf("tail a-0: %+v, want left unfinished for tare resume", tl)
	}
	if _, err := os.Stat(filepath.Join(sharedRoot(t, out), "tails", "a-0.0", "jobid")); !os.IsNotExist(err) {
		t.Fatalf("the attempt still names its job (%v): tare resume would re-attach to the cancelled job instead of running the tail again", err)
	}
}

// sharedRoot is the run's folder below the shared directory, as its cluster.json names it.
func sharedRoot(t *testing.T, run string) string {
	t.Helper()
	var shared struct{ Root string }
	if data, err := os.ReadFile(filepath.Join(run, "cluster.json")); err != nil || json.Unmarshal(data, &shared) != nil || shared.Root == "" {
		t.Fatalf("%s/cluster.json: %v", run, err)
	}
	return shared.Root
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestSlurmBadInputOnCliffAndSwap: cliff, swap, judge-noise and workshop run refuse --on
// slurm where jobs could not run before they record anything: one line naming the fix, exit
// 2, no run folder (for the workshop, nothing in the experiment).
func TestSlurmBadInputOnCliffAndSwap(t *testing.T) {
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	noSlurm := t.TempDir()
	for _, tool := range []string{"bwrap", "node", "sh"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(noSlurm, tool))
		}
	}
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	page, rubric, judge := judgeFiles(t, noiseScript)
	exp, plan := filepath.Join(r.home, "exp"), filepath.Join(repoDir(), "demo", "workshop")
	if r.tare(t, "workshop", "prepare", filepath.Join(plan, "plan.toml"), exp); r.code != 0 {
		t.Fatalf("workshop prepare: %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"cliff", "pi", demo.Task, "--check", demo.Check, "--script", paths.CliffScript, "--project", paths.Project, "--out", out, "--on", "slurm"},
		{"swap", demo.Task, "--a", "pi", "--b", "pi", "--check", demo.Check, "--script", paths.SwapScript, "--project", paths.Project, "--out", out, "--on", "slurm"},
		{"swap", demo.Task, "--a", "pi", "--b", "pi", "--check", demo.Check, "--project", paths.Project, "--out", out, "--on", "slurmm"},
		{"judge-noise", page, "--rubric", rubric, "--times", "2", "--script", judge, "--judge", "claude", "--out", out, "--on", "slurm"},
		{"workshop", "run", exp, "--script", filepath.Join(plan, "writer.toml"), "--on", "slurm"},
	} {
		if args[0] == "workshop" {
			// Nothing written into the experiment either: no writer's cluster folder.
			out = filepath.Join(exp, "records", "codex-gpt-5.1-codex", "cluster.json")
		}
		cmd := exec.Command(tareBin, args...)
		cmd.Env = append(r.env(), "PATH="+noSlurm)
		msg, err := cmd.CombinedOutput()
		text := strings.TrimSpace(string(msg))
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || strings.Count(text, "\n") > 0 || !strings.Contains(text, "fix:") ||
			!strings.Contains(text, "--on") {
			t.Errorf("tare %s: %v %q, want exit 2 and one line naming --on and the fix", args[0], err, text)
		}
		if exists(out) {
			t.Fatalf("tare %s refused left %s", args[0], out)
		}
	}
}

// TestSlurmRunCapIsRunWide: --run-max-tokens on Slurm caps the run's tails together, as
// locally: one demo tail spends about 6,200 tokens, so under a cap of 9,000 the first tail
// runs to its verdict and the second, on another job, is refused once the two together pass
// the cap and ends over budget. (Each worker counting from zero let both run whole.)
func TestSlurmRunCapIsRunWide(t *testing.T) {
	paths, r := slurmDemo(t, "")
	out := filepath.Join(r.home, "run")
	if r.tare(t, calibrateArgs(paths, paths.Script, out, 2, 1, "--on", "slurm", "--run-max-tokens", "9000")...); r.code != 0 {
		t.Fatalf("calibrate --on slurm --run-max-tokens exited %d\n%s", r.code, r.stderr)
	}
	st := journal.Replay("run", readEvents(out))
	first, second := st.Tails["a-0"], st.Tails["a-1"]
	if first == nil || (first.Status != journal.StatusPassed && first.Status != journal.StatusFailed) || first.Place == nil {
		t.Fatalf("tail a-0: %+v, want a verdict from its job", first)
	}
	if second == nil || second.Status != journal.StatusNoVerdict || second.Reason != journal.ReasonOverBudget ||
		second.Metered == nil || second.Metered.Refused < 1 || !strings.Contains(second.Metered.OverBudget, "run's token cap (9000)") {
		t.Fatalf("tail a-1: %+v (metered %+v), want over budget on the run's cap", second, second.Metered)
	}
}

// modelGapScript's second tool call runs 8 s: tare is killed while it does, so the agent's
// next model call comes when only a resumed tare can answer it.
const modelGapScript = `
seed = 3
final = "Done."

[[turn]]
text = "Looking."
shell = "cat greet.sh"

[[turn]]
text = "Writing."
shell = '''touch sleeping; sleep 8; printf '#!/bin/sh\necho "hello, tare"\n' > greet.sh'''

[[turn]]
text = "Running it."
shell = "sh greet.sh"
`

// TestSlurmResumeBringsTheModelBack: tare is SIGKILLed while a scripted tail's agent runs a
// tool on its node, so the model server dies with it; tare resume re-attaches to the job and
// serves the model again on the address the job's room dials, so the agent's next calls are
// answered and the tail ends with its verdict and all its tool calls (before, it lost its
// model and ended without them).
func TestSlurmResumeBringsTheModelBack(t *testing.T) {
	paths, r := slurmDemo(t, "")
	script := filepath.Join(t.TempDir(), "gap.toml")
	if err := os.WriteFile(script, []byte(modelGapScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(r.home, "run")
	cmd := exec.Command(tareBin, calibrateArgs(paths, script, out, 1, 1, "--on", "slurm")...)
	cmd.Env = r.env()
	waited := startReaped(t, cmd)
	job := waitRunning(t, out, "a-0", 1)
	sleeping := filepath.Join(r.tmp, "tare-worker-*", "tail", "work", "sleeping")
	killNineWhen(t, cmd, waited, sleeping, 1, "the agent's long tool call")
	if r.tare(t, "resume", out); r.code != 0 {
		t.Fatalf("tare resume exited %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	st := journal.Replay("run", readEvents(out))
	if tl := st.Tails["a-0"]; tl == nil || tl.Status != journal.StatusPassed || tl.Calls != 3 || tl.Place == nil || tl.Place.Job != job {
		t.Fatalf("tail a-0: %+v, want passed with its 3 tool calls, from job %s", tl, job)
	}
}
