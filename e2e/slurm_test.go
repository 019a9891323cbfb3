package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/demo"
	"tare/engine"
	"tare/engine/journal"
	enginerun "tare/engine/run"
)

// slurmUp starts the real two-node Slurm of scripts/slurm-local (a no-op when it is up). A
// machine where it cannot start fails these tests: they never skip.
func slurmUp(t *testing.T) {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoDir(), "scripts", "slurm-local"), "up", "--nodes", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/slurm-local up --nodes 2: %v\n%s", err, out)
	}
}

// slurmDemo starts the real Slurm (slurmUp) and extracts the demo, for a test whose tare
// runs with config (TOML, "" for none).
func slurmDemo(t *testing.T, config string) (demo.Paths, *run) {
	t.Helper()
	slurmUp(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	return paths, newRun(t, config)
}

// slowJob is a one-tail calibrate --on slurm running in the background (slowOnSlurm).
type slowJob struct {
	out    string
	cmd    *exec.Cmd
	waited <-chan struct{}
	job    string
	// stderr is tare's, to read once waited is closed.
	stderr *strings.Builder
}

// slowOnSlurm starts a one-tail calibrate --on slurm whose last model turn waits a minute,
// and returns once the tail's job runs on a node and has made its first tool call.
func slowOnSlurm(t *testing.T) slowJob {
	t.Helper()
	slurmUp(t)
	paths, script := slowDemo(t)
	long := strings.Replace(slowScript, `delay = "2s"`, `delay = "60s"`, 1)
	if err := os.WriteFile(script, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	s := slowJob{out: filepath.Join(r.home, "run"), stderr: &strings.Builder{}}
	s.cmd = exec.Command(tareBin, calibrateArgs(paths, script, s.out, 1, 1, "--on", "slurm")...)
	s.cmd.Env, s.cmd.Stderr = r.env(), s.stderr
	s.waited = startReaped(t, s.cmd)
	s.job = waitRunning(t, s.out, "a-0", 1)
	return s
}

// awaitEnd waits for tare, told to stop (by what), to end, and fails the test, killing it,
// when it has not within limit.
func (s slowJob) awaitEnd(t *testing.T, limit time.Duration, what string) {
	t.Helper()
	select {
	case <-s.waited:
	case <-time.After(limit):
		s.cmd.Process.Kill()
		t.Fatalf("tare did not end after %s", what)
	}
}

// calibrateArgs is a calibrate of the demo with pi on tare's model server.
func calibrateArgs(paths demo.Paths, script, out string, runs, jobs int, extra ...string) []string {
	return append([]string{"calibrate", demo.Task, "--side", "pi", "--runs", itoa(runs), "--jobs", itoa(jobs), "--script", script,
		"--seed", "7", "--check", demo.Check, "--project", paths.Project, "--out", out}, extra...)
}

func itoa(n int) string { return strconv.Itoa(n) }

// places are the Placed events of a run by tail, in journal order.
func places(events []journal.Event) map[string][]journal.Placed {
	out := map[string][]journal.Placed{}
	for _, e := range events {
		if e.Placed != nil {
			out[e.Placed.Tail] = append(out[e.Placed.Tail], *e.Placed)
		}
	}
	return out
}

// jobState is what squeue says of a job now.
func jobState(t *testing.T, id string) string {
	t.Helper()
	out, err := exec.Command("squeue", "-h", "-t", "all", "-j", id, "-o", "%T").CombinedOutput()
	if err != nil {
		t.Fatalf("squeue -j %s: %v %s", id, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestSlurmCalibrateGivesTheLocalRates: the demo's seeded calibrate run --on slurm (one
// sbatch job per tail on a real two-node Slurm, each running tare worker) gives every tail
// the verdict the same run gives on this machine, the tails spread over both nodes, and the
// journal shows each tail pending, then running on its node with its queue wait, then
// finished.
func TestSlurmCalibrateGivesTheLocalRates(t *testing.T) {
	paths, r := slurmDemo(t, "")
	local := filepath.Join(r.home, "local")
	if r.tare(t, calibrateArgs(paths, paths.Script, local, 4, 4)...); r.code != 0 {
		t.Fatalf("local calibrate exited %d\n%s", r.code, r.stderr)
	}
	onSlurm := filepath.Join(r.home, "slurm")
	if r.tare(t, calibrateArgs(paths, paths.Script, onSlurm, 4, 4, "--on", "slurm")...); r.code != 0 {
		t.Fatalf("calibrate --on slurm exited %d\n%s", r.code, r.stderr)
	}
	want, got := journal.Replay("l", readEvents(local)), journal.Replay("s", readEvents(onSlurm))
	passed := 0
	for _, id := range []string{"a-0", "a-1", "a-2", "a-3"} {
		if want.Tails[id] == nil || got.Tails[id] == nil || want.Tails[id].Status != got.Tails[id].Status {
			t.Errorf("tail %s: local %+v, slurm %+v", id, want.Tails[id], got.Tails[id])
			continue
		}
		if got.Tails[id].Status == journal.StatusPassed {
			passed++
		}
		if got.Tails[id].Calls == 0 {
			t.Errorf("tail %s on slurm journaled no tool calls", id)
		}
	}
	if passed == 0 || passed == 4 {
		t.Errorf("%d/4 passed: the seeded demo should land strictly between", passed)
	}
	nodes := map[string]bool{}
	for id, ps := range places(readEvents(onSlurm)) {
		var states []string
		for _, p := range ps {
			states = append(states, p.State)
		}
		if strings.Join(states, ",") != "pending,running,finished" || ps[1].Node == "" || ps[1].Waited < 0 {
			t.Errorf("tail %s's places: %+v, want pending, running on a node with its queue wait, finished", id, ps)
			continue
		}
		nodes[ps[1].Node] = true
	}
	if !nodes["n1"] || !nodes["n2"] {
		t.Errorf("the tails ran on %v, want both n1 and n2", nodes)
	}
	if !strings.Contains(r.stdout, "job ") && !strings.Contains(r.stderr, "running on n") {
		t.Logf("output:\n%s", r.stderr)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestSlurmKillCancelsTheJob: a kill of a tail that runs on Slurm (as the app and the CLI
// send it) cancels its job: the tail ends with no verdict, killed, and Slurm shows the job
// cancelled, not still running.
func TestSlurmKillCancelsTheJob(t *testing.T) {
	s := slowOnSlurm(t)
	out, job := s.out, s.job
	if err := enginerun.RequestKill(out, "a-0", journal.KillNotAsked); err != nil {
		t.Fatal(err)
	}
	s.awaitEnd(t, 2*time.Minute, "the kill")
	st := journal.Replay("run", readEvents(out))
	if tl := st.Tails["a-0"]; tl == nil || tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonKilled {
		t.Fatalf("tail a-0: %+v, want no verdict, killed", tl)
	}
	if s := jobState(t, job); s != "CANCELLED" {
		t.Fatalf("job %s is %q after the kill, want CANCELLED", job, s)
	}
}

// waitRunning waits until the tail's job runs on a node and has made calls tool calls, and
// returns the job id.
func waitRunning(t *testing.T, out, tail string, calls int) string {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		events := readEvents(out)
		st := journal.Replay("run", events)
		if tl := st.Tails[tail]; tl != nil && tl.Place != nil && tl.Place.State == "running" && tl.Calls >= calls {
			return tl.Place.Job
		}
		if time.Now().After(deadline) {
			t.Fatalf("tail %s did not run on a node with %d calls: %+v", tail, calls, st.Tails[tail])
		}
	}
}

// killNineWhen SIGKILLs tare once n files match pattern (markers the rooms on the nodes
// write, what they mark named by what), and waits for it to be reaped.
func killNineWhen(t *testing.T, cmd *exec.Cmd, waited <-chan struct{}, pattern string, n int, what string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if marked, _ := filepath.Glob(pattern); len(marked) == n {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("%s did not start", what)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
}

// TestSlurmKillNineThenResumeReattaches: tare is SIGKILLed while its tails run as Slurm jobs.
// The jobs run on without it; tare resume re-attaches to them (no tail is started again, no
// job submitted again) and collects their results into the report.
func TestSlurmKillNineThenResumeReattaches(t *testing.T) {
	paths, r := slurmDemo(t, "")
	out := filepath.Join(r.home, "run")
	// tare's model server dies with tare, so the kill lands once both agents are done: while
	// their checks run on the nodes, each having marked its workspace (on the node-local disk,
	// below the TMPDIR the jobs inherit).
	args := calibrateArgs(paths, paths.Script, out, 2, 2, "--on", "slurm")
	for i, a := range args {
		if a == demo.Check {
			args[i] = "touch checking; sleep 6; " + demo.Check
		}
	}
	checking := filepath.Join(r.tmp, "tare-worker-*", "tail", "work", "checking")
	cmd := exec.Command(tareBin, args...)
	cmd.Env = r.env()
	waited := startReaped(t, cmd)
	jobs := []string{waitRunning(t, out, "a-0", 1), waitRunning(t, out, "a-1", 1)}
	killNineWhen(t, cmd, waited, checking, 2, "the two checks")
	for _, j := range jobs {
		if s := jobState(t, j); s != "RUNNING" && s != "COMPLETING" && s != "COMPLETED" {
			t.Fatalf("job %s is %q after tare's kill -9: the job should outlive tare", j, s)
		}
	}
	if r.tare(t, "resume", out); r.code != 0 || !strings.Contains(r.stdout, "95% interval") {
		t.Fatalf("tare resume exited %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	events := readEvents(out)
	started, finished := map[string]int{}, map[string]int{}
	var reattached []string
	for _, e := range events {
		switch {
		case e.TailStarted != nil:
			started[e.TailStarted.ID]++
		case e.TailFinished != nil:
			finished[e.TailFinished.ID]++
		case e.Resumed != nil:
			if len(e.Resumed.Rerun) > 0 {
				t.Errorf("resume reran %v", e.Resumed.Rerun)
			}
			reattached = append(reattached, e.Resumed.Reattached...)
		}
	}
	sort.Strings(reattached)
	if strings.Join(reattached, ",") != "a-0,a-1" {
		t.Errorf("re-attached %v, want a-0 and a-1", reattached)
	}
	st := journal.Replay("run", events)
	for i, id := range []string{"a-0", "a-1"} {
		if started[id] != 1 || finished[id] != 1 {
			t.Errorf("tail %s started %d and finished %d times, want once each", id, started[id], finished[id])
		}
		if tl := st.Tails[id]; tl == nil || (tl.Status != journal.StatusPassed && tl.Status != journal.StatusFailed) || tl.Place == nil || tl.Place.Job != jobs[i] {
			t.Errorf("tail %s: %+v, want a verdict from job %s", id, tl, jobs[i])
		}
	}
}

// TestSlurmOutOfMemoryIsNoVerdict: a tail whose job Slurm kills for going over its memory
// (here the check's) is no verdict with that reason, never a fail.
func TestSlurmOutOfMemoryIsNoVerdict(t *testing.T) {
	paths, r := slurmDemo(t, "[cluster]\nmemory = \"400M\"\n")
	out := filepath.Join(r.home, "run")
	args := calibrateArgs(paths, paths.Script, out, 1, 1, "--on", "slurm")
	for i, a := range args {
		if a == demo.Check {
			// Holds 900 MB: tail keeps the whole newline-less input as its last line.
			args[i] = "head -c 900M /dev/zero | tail -n 1 >/dev/null"
		}
	}
	if r.tare(t, args...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	st := journal.Replay("run", readEvents(out))
	tl := st.Tails["a-0"]
	if tl == nil || tl.Status != journal.StatusNoVerdict || tl.Reason != engine.ReasonOutOfMemory || !strings.Contains(tl.Detail, "memory") {
		t.Fatalf("tail a-0: %+v, want no verdict, out-of-memory", tl)
	}
	if !strings.Contains(r.stdout, "out-of-memory") {
		t.Errorf("the report does not say why the tail has no verdict:\n%s", r.stdout)
	}
}

// TestSlurmBadInput: --on slurm where tails could not run is refused before anything is
// written or submitted: one line naming the fix, exit 2.
func TestSlurmBadInput(t *testing.T) {
	slurmUp(t)
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
	down := t.TempDir()
	conf, err := os.ReadFile("/etc/slurm/slurm.conf")
	if err != nil {
		t.Fatal(err)
	}
	// A controller nobody runs: the port nothing listens on.
	os.WriteFile(filepath.Join(down, "slurm.conf"), []byte(strings.Replace(string(conf), "SlurmctldHost=localhost", "SlurmctldHost=localhost\nSlurmctldPort=6999", 1)), 0o644)
	cases := []struct {
		name, config, want string
		env                []string
	}{
		{"no sbatch", "", "sbatch is not on PATH", []string{"PATH=" + noSlurm}},
		{"controller down", "", "the Slurm controller does not answer", []string{"SLURM_CONF=" + filepath.Join(down, "slurm.conf")}},
		{"no such partition", "[cluster]\npartition = \"gpu-huge\"\n", "key cluster.partition: \"gpu-huge\" is not a partition", nil},
	}
	// A folder only this machine sees: a tmpfs mounted in a mount namespace of tare's own.
	private := t.TempDir()
	cases = append(cases, struct {
		name, config, want string
		env                []string
	}{"shared folder the nodes do not see", "[cluster]\nshared = \"" + private + "\"\n", "key cluster.shared: the nodes do not see", nil})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, c.config)
			out := filepath.Join(r.home, "run")
			cmd := exec.Command(tareBin, calibrateArgs(paths, paths.Script, out, 1, 1, "--on", "slurm")...)
			if strings.HasPrefix(c.name, "shared") {
				cmd = exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c",
					`mount -t tmpfs tmpfs "$0" && exec "$@"`, private, tareBin}, calibrateArgs(paths, paths.Script, out, 1, 1, "--on", "slurm")...)...)
			}
			cmd.Env = append(r.env(), c.env...)
			msg, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2\n%s", err, msg)
			}
			text := strings.TrimSpace(string(msg))
			if strings.Count(text, "\n") > 0 || !strings.Contains(text, c.want) || !strings.Contains(text, "fix:") {
				t.Fatalf("got %q, want one line with %q and a fix", text, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("the refused run left %s", out)
			}
		})
	}
}

// TestSlurmUnprivilegedOperatorSubmits: an operator without root (a user made here with
// useradd, as on a real cluster) submits the tails; the jobs run as that user, and their
// rooms start in unprivileged user namespaces on the nodes.
func TestSlurmUnprivilegedOperatorSubmits(t *testing.T) {
	slurmUp(t)
	const user = "tareop"
	if exec.Command("id", user).Run() != nil {
		if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", user).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v %s", user, err, out)
		}
	}
	root, err := os.MkdirTemp("", "tare-op-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	bin := filepath.Join(root, "bin")
	os.MkdirAll(bin, 0o755)
	data, err := os.ReadFile(tareBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "tare"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repoDir(), "agents"), filepath.Join(bin, "agents")); err != nil {
		t.Fatal(err)
	}
	paths, err := demo.Extract(filepath.Join(root, "demo"))
	if err != nil {
		t.Fatal(err)
	}
	home, tmp := filepath.Join(root, "home"), filepath.Join(root, "tmp")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(tmp, 0o755)
	for _, d := range []string{root, filepath.Join(root, "demo"), home, tmp} {
		if out, err := exec.Command("chown", "-R", user, d).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	os.Chmod(root, 0o755)
	out := filepath.Join(home, "run")
	args := append([]string{"-u", user, "--", "env", "-i", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"), "TMPDIR=" + tmp, "LANG=C.UTF-8", filepath.Join(bin, "tare")},
		calibrateArgs(paths, paths.Script, out, 1, 1, "--on", "slurm")...)
	msg, err := exec.Command("runuser", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tare calibrate --on slurm as %s: %v\n%s", user, err, msg)
	}
	st := journal.Replay("run", readEvents(out))
	tl := st.Tails["a-0"]
	if tl == nil || (tl.Status != journal.StatusPassed && tl.Status != journal.StatusFailed) || tl.Place == nil {
		t.Fatalf("tail a-0: %+v, want a verdict from a Slurm job\n%s", tl, msg)
	}
	owner, err := exec.Command("squeue", "-h", "-t", "all", "-j", tl.Place.Job, "-o", "%u").Output()
	if err != nil || strings.TrimSpace(string(owner)) != user {
		t.Fatalf("job %s belongs to %q (%v), want %s", tl.Place.Job, owner, err, user)
	}
}

// BenchmarkSlurmDispatch is the dispatch overhead of --on slurm: the same seeded tails of the
// demo run on this machine and as Slurm jobs (scripts/slurm-local, two nodes), in the same
// run; it reports each side's mean tail time, the queue wait, their difference per tail and
// the ratio. Run: go test -run '^$' -bench SlurmDispatch -benchtime 1x ./e2e
func BenchmarkSlurmDispatch(b *testing.B) {
	out, err := exec.Command(filepath.Join(repoDir(), "scripts", "slurm-local"), "up", "--nodes", "2").CombinedOutput()
	if err != nil {
		b.Fatalf("scripts/slurm-local up: %v\n%s", err, out)
	}
	paths, err := demo.Extract(filepath.Join(b.TempDir(), "demo"))
	if err != nil {
		b.Fatal(err)
	}
	var local, onSlurm, queued float64
	n := 0
	for i := 0; i < b.N; i++ {
		r := newRunIn(b.TempDir())
		for _, on := range []string{"local", "slurm"} {
			dir := filepath.Join(r.home, on)
			if r.tare(b, calibrateArgs(paths, paths.Script, dir, 2, 2, "--on", on)...); r.code != 0 {
				b.Fatalf("%s: exit %d\n%s", on, r.code, r.stderr)
			}
			st := journal.Replay(on, readEvents(dir))
			for _, tl := range st.Tails {
				secs := tl.Ended.Sub(tl.Started).Seconds()
				if on == "local" {
					local += secs
				} else {
					onSlurm += secs
					n++
					if tl.Place != nil {
						queued += tl.Place.Waited
					}
				}
			}
		}
	}
	k := float64(n)
	b.ReportMetric(local/k, "local-s/tail")
	b.ReportMetric(onSlurm/k, "slurm-s/tail")
	b.ReportMetric(queued/k, "queue-s/tail")
	b.ReportMetric((onSlurm-local)/k, "overhead-s/tail")
	b.ReportMetric(onSlurm/local, "slurm/local")
}

// TestSlurmUnfitNodeIsSaidOnceThenLeftOut: on a node whose bwrap cannot make a room (here
// n1, through a bwrap that refuses rooms there as one does without user namespaces) the tail
// that landed there has no verdict and names the node and the fix; later tails are submitted
// with that node excluded, so they get verdicts on n2 instead of failing one by one.
func TestSlurmUnfitNodeIsSaidOnceThenLeftOut(t *testing.T) {
	slurmUp(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "bwrap")
	// The worker (bwrap's parent) runs in the job's environment, which names the node.
	script := "#!/bin/sh\nif [ \"$1\" != --version ] && tr '\\0' '\\n' < /proc/$PPID/environ | grep -qx SLURMD_NODENAME=n1; then\n" +
		"  echo 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces' >&2; exit 1\nfi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "bwrap = \""+wrapper+"\"\n")
	out := filepath.Join(r.home, "run")
	if r.tare(t, calibrateArgs(paths, paths.Script, out, 4, 2, "--on", "slurm")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	events := readEvents(out)
	st := journal.Replay("run", events)
	var firstUnfit time.Time
	unfit := 0
	for _, e := range events {
		if f := e.TailFinished; f != nil && f.Reason == engine.ReasonNodeUnfit {
			unfit++
			if firstUnfit.IsZero() {
				firstUnfit = e.Time
			}
			if tl := st.Tails[f.ID]; tl.Place == nil || tl.Place.Node != "n1" || !strings.Contains(f.Detail, "node n1") || !strings.Contains(f.Detail, "namespaces") {
				t.Errorf("tail %s: %+v, want no verdict naming node n1 and its namespaces", f.ID, tl)
			}
		}
	}
	if unfit == 0 || unfit > 2 {
		t.Fatalf("%d tails were found unfit, want the one or two that landed on n1 before it was known\n%s", unfit, r.stdout)
	}
	verdicts := 0
	for _, e := range events {
		if s := e.TailStarted; s != nil && e.Time.After(firstUnfit) {
			if tl := st.Tails[s.ID]; tl.Place == nil || tl.Place.Node != "n2" {
				t.Errorf("tail %s started after n1 was found unfit but ran on %+v", s.ID, tl.Place)
			}
		}
		if f := e.TailFinished; f != nil && (f.Status == journal.StatusPassed || f.Status == journal.StatusFailed) {
			verdicts++
		}
	}
	if verdicts+unfit != 4 {
		t.Errorf("%d verdicts and %d unfit of 4 tails", verdicts, unfit)
	}
}
