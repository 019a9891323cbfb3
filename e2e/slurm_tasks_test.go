package e2e

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/engine"
	"tare/engine/journal"
	enginerun "tare/engine/run"
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
// nodes; nothing is left below the shared directory. The jobs go as to nodes that are other
// machines: the exchange over HTTP and the model through the token-guarded forwarder, both
// on an address of this machine that is not loopback.
func TestSlurmJudgeNoiseGivesTheLocalScores(t *testing.T) {
	slurmUp(t)
	page, rubric, script := judgeFiles(t, noiseScript)
	r := newRun(t, "[cluster]\ntransport = \"http\"\ncallback_addr = \""+hostIP(t)+"\"\n")
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

// TestSlurmJudgeNoiseKillAndCtrlCCancelTheJobs: with judges waiting on a slow model, a kill of
// one judgement (as the app and tare kill send it) cancels its job and journals it killed,
// no verdict, while the other runs on; ctrl+c then cancels the rest: tare ends, and Slurm
// shows each job cancelled, not left running unseen.
func TestSlurmJudgeNoiseKillAndCtrlCCancelTheJobs(t *testing.T) {
	slurmUp(t)
	page, rubric, script := judgeFiles(t, "[[turn]]\ndelay = \"60s\"\ntext = \"score 6: fine\"\n")
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	cmd := exec.Command(tareBin, "judge-noise", page, "--rubric", rubric, "--times", "2", "--jobs", "2", "--script", script,
		"--judge", "claude", "--out", out, "--on", "slurm")
	cmd.Env = r.env()
	waited := startReaped(t, cmd)
	jobs := map[string]string{}
	for deadline := time.Now().Add(2 * time.Minute); len(jobs) < 2; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the judgements' jobs did not both run: %+v", places(readEvents(out)))
		}
		for id, ps := range places(readEvents(out)) {
			if p := ps[len(ps)-1]; p.State == "running" {
				jobs[id] = p.Job
			}
		}
	}
	if err := enginerun.RequestKill(out, "p1-1", journal.KillNotAsked); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		tl := journal.Replay("run", readEvents(out)).Tails["p1-1"]
		if tl != nil && tl.Status != journal.StatusRunning {
			if tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonKilled {
				t.Errorf("judgement p1-1 after its kill: %+v, want no verdict, killed", tl)
			}
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the killed judgement did not end")
		}
	}
	if s := jobState(t, jobs["p1-1"]); s != "CANCELLED" {
		t.Errorf("job %s of the killed judgement is %q, want CANCELLED", jobs["p1-1"], s)
	}
	if s := jobState(t, jobs["p1-2"]); s != "RUNNING" {
		t.Errorf("job %s of the other judgement is %q after the kill of p1-1, want RUNNING", jobs["p1-2"], s)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	slowJob{cmd: cmd, waited: waited}.awaitEnd(t, time.Minute, "ctrl+c")
	if s := jobState(t, jobs["p1-2"]); s != "CANCELLED" {
		t.Errorf("job %s is %q after ctrl+c, want CANCELLED", jobs["p1-2"], s)
	}
}

// TestSlurmWorkshopRunsEachWriterAsAJob: tare workshop run --on slurm runs each writer (the
// real codex, claude and pi CLIs on tare's model server) as a job on a real two-node Slurm,
// its room proven clean on the node. Each writer's drafts, session, stdout and stderr come
// back into its folders as a local run leaves them: the completed writers collect with the
// same drafts a local run writes, and codex, stopped by a quota wall on its node, is resumed
// (resume --on slurm) in its own session in a job of its own and continues the draft it
// wrote there.
func TestSlurmWorkshopRunsEachWriterAsAJob(t *testing.T) {
	slurmUp(t)
	r := newRun(t, "")
	td := filepath.Join(repoDir(), "demo", "workshop")
	const codex, claude, pi = "codex-gpt-5.1-codex", "claude-sonnet-4-5", "pi-tare-model"
	run := func(exp string, extra ...string) map[string]string {
		if r.tare(t, "workshop", "prepare", filepath.Join(td, "plan.toml"), exp); r.code != 0 {
			t.Fatalf("prepare: %d %s", r.code, r.stderr)
		}
		r.tare(t, append([]string{"workshop", "run", exp, "--jobs", "3", "--timeout", "2m", "--script", filepath.Join(td, "writer.toml"),
			"--script", codex + "=" + filepath.Join(td, "quota.toml")}, extra...)...)
		var res map[string]string
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 1 {
			t.Fatalf("run %v: exit %d, %q %v\n%s", extra, r.code, r.stdout, err, r.stderr)
		}
		return res
	}
	local, onSlurm := filepath.Join(r.home, "local"), filepath.Join(r.home, "slurm")
	want := run(local)
	got := run(onSlurm, "--on", "slurm")
	progress := r.stderr
	if !reflect.DeepEqual(want, got) || got[codex] != "failed" || got[claude] != "completed" || got[pi] != "completed" {
		t.Fatalf("on slurm %v, locally %v: want codex stopped by its quota wall and the others completed\n%s", got, want, progress)
	}
	// Each writer's job runs on a node of the cluster. Which node is Slurm's choice: writers
	// that do not overlap may all go to n1, so the test does not want both.
	for _, id := range []string{claude, pi, codex} {
		placed := false
		for _, l := range strings.Split(progress, "\n") {
			placed = placed || (strings.Contains(l, id) && (strings.Contains(l, "running on n1") || strings.Contains(l, "running on n2")))
		}
		if !placed {
			t.Errorf("progress does not show %s's job running on a node of the cluster:\n%s", id, progress)
		}
	}
	if !strings.Contains(progress, codex+" stopped on a provider limit") {
		t.Errorf("progress does not show codex's wall:\n%s", progress)
	}
	for _, id := range []string{claude, pi, codex} {
		for _, f := range []string{"events.jsonl", "stderr.log", "receipt.json", "session"} {
			if !exists(filepath.Join(onSlurm, "records", id, f)) {
				t.Errorf("writer %s: records/%s did not come back from its job", id, f)
			}
		}
		a, _ := os.ReadFile(filepath.Join(local, "writers", id, "drafts", "scene.md"))
		b, _ := os.ReadFile(filepath.Join(onSlurm, "writers", id, "drafts", "scene.md"))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("writer %s's draft on slurm %q, locally %q", id, b, a)
		}
	}
	var receipt struct {
		Argv  []string
		Usage struct{ Output int64 }
	}
	readJSONFile(t, filepath.Join(onSlurm, "records", claude, "receipt.json"), &receipt)
	if len(receipt.Argv) == 0 || receipt.Usage.Output == 0 {
		t.Errorf("claude's receipt from its job lacks the argv or the usage: %+v", receipt)
	}
	if r.tare(t, "workshop", "resume", onSlurm, codex, "--script", filepath.Join(td, "quota-lifted.toml"), "--on", "slurm"); r.code != 0 ||
		!strings.Contains(r.stderr, codex+": Slurm job") {
		t.Fatalf("resume --on slurm after the slurm run: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	partial, _ := os.ReadFile(filepath.Join(onSlurm, "records", codex, "attempts", "01", "artifacts", "scene.md"))
	final, _ := os.ReadFile(filepath.Join(onSlurm, "writers", codex, "drafts", "scene.md"))
	if len(partial) == 0 || !strings.HasPrefix(string(final), string(partial)) || len(final) <= len(partial) {
		t.Errorf("the resumed writer did not continue the draft its job wrote: %q then %q", partial, final)
	}
	for _, id := range []string{claude, codex, pi} {
		if r.tare(t, "workshop", "collect", onSlurm, id); r.code != 0 || !strings.Contains(r.stdout, `"completed"`) {
			t.Errorf("collect %s: exit %d %s %s", id, r.code, r.stdout, r.stderr)
		}
	}
	if r.tare(t, "workshop", "inspect", onSlurm); r.code != 0 || !strings.Contains(r.stdout, claude) {
		t.Errorf("inspect: exit %d %s", r.code, r.stderr)
	}
	for _, id := range []string{claude, codex, pi} {
		// Each writer's own folder below the shared directory, gone once its job ended.
		if rec := filepath.Join(onSlurm, "records", id); !exists(filepath.Join(rec, "cluster.json")) || exists(sharedRoot(t, rec)) {
			t.Errorf("writer %s's folder below the shared directory is left after its job", id)
		}
	}
}

// hostIP is an IPv4 address of this machine that is not loopback.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no IPv4 address besides loopback")
	return ""
}
