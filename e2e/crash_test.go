package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
)

// slowScript is the demo's model with a pause before the last turn, so a kill lands while
// tails are running.
const slowScript = `
seed = 3
final = "Done."

[[turn]]
text = "Looking."
shell = "cat greet.sh"

[[turn]]
  [[turn.branch]]
  p = 0.5
  text = "Writing."
  shell = '''printf '#!/bin/sh\necho "hello, tare"\n' > greet.sh'''
  [[turn.branch]]
  p = 0.5
  text = "Writing."
  shell = '''printf '#!/bin/sh\necho "nope"\n' > greet.sh'''

[[turn]]
delay = "2s"
text = "Running it."
shell = "sh greet.sh"
`

// TestKillNineThenResume: tare calibrate is SIGKILLed while tails run. Its rooms die with it,
// nothing written is lost, and tare resume finishes the run without repeating finished tails;
// the tails that were running are rerun and the journal says so.
func TestKillNineThenResume(t *testing.T) {
	paths, script := slowDemo(t)
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	marker := "crash-marker-" + filepath.Base(r.home)
	prompt := demo.Task + " (" + marker + ")" // every agent process carries it in its argv
	cmd := exec.Command(tareBin, "calibrate", prompt, "--side", "pi", "--runs", "4", "--jobs", "2",
		"--script", script, "--check", demo.Check, "--project", paths.Project, "--out", out)
	cmd.Env = r.env()
	waited := startReaped(t, cmd)

	// Kill once one tail has finished and another is running.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st := journal.Replay("run", readEvents(out))
		done, running, _ := st.Counts()
		if done >= 1 && running >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tail finished while another ran (done %d, running %d)", done, running)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	before := journal.Replay("run", readEvents(out))
	// A tail can have written its result.json and not yet its journal line when the kill
	// lands: resume takes that result, it does not run the tail again.
	written := map[string]bool{}
	for id, tl := range before.Tails {
		if _, err := os.Stat(filepath.Join(out, "tails", id, "result.json")); tl.Status == "running" && err == nil {
			written[id] = true
		}
	}

	waitGone(t, marker) // the rooms die with tare

	resume := r.tare(t, "resume", out)
	if resume.code != 0 {
		t.Fatalf("tare resume exited %d\n%s", resume.code, resume.stderr)
	}
	if !strings.Contains(resume.stdout, "tare calibrate") || !strings.Contains(resume.stdout, "95% interval") {
		t.Fatalf("tare resume printed no report:\n%s", resume.stdout)
	}
	events := readEvents(out)
	finished, started := map[string]int{}, map[string]int{}
	var rerun []string
	for _, e := range events {
		switch {
		case e.TailFinished != nil:
			finished[e.TailFinished.ID]++
		case e.TailStarted != nil:
			started[e.TailStarted.ID]++
		case e.Resumed != nil:
			rerun = append(rerun, e.Resumed.Rerun...)
		}
	}
	for _, id := range []string{"a-0", "a-1", "a-2", "a-3"} {
		if finished[id] != 1 {
			t.Errorf("tail %s finished %d times in the journal, want once", id, finished[id])
		}
	}
	for id, tl := range before.Tails {
		switch tl.Status {
		case "passed", "failed":
			if started[id] != 1 {
				t.Errorf("tail %s had finished before the kill but was started %d times", id, started[id])
			}
		case "running":
			if written[id] {
				if slices.Contains(rerun, id) || started[id] != 1 {
					t.Errorf("tail %s had written its result at the kill but was rerun (rerun %v, started %d times)", id, rerun, started[id])
				}
				continue
			}
			if !slices.Contains(rerun, id) {
				t.Errorf("tail %s was running at the kill but the journal does not say it was rerun (rerun: %v)", id, rerun)
			}
			if _, err := os.Stat(filepath.Join(out, "tails", id+".attempt-1")); err != nil {
				t.Errorf("the interrupted attempt of %s was not kept: %v", id, err)
			}
		}
	}
	if len(rerun) == 0 && len(written) == 0 {
		t.Errorf("no tail was rerun: the kill did not land mid-tail")
	}
}

// slowDemo extracts the demo experiment and writes slowScript beside it.
func slowDemo(t *testing.T) (demo.Paths, string) {
	t.Helper()
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "slow.toml")
	if err := os.WriteFile(script, []byte(slowScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return paths, script
}

// startReaped starts cmd and returns a channel closed once it has been reaped.
func startReaped(t *testing.T, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	return waited
}

// waitGone fails the test when a process carrying marker outlives a killed tare by 20 s.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); len(processesWith(marker)) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the killed run survive: %s", describe(processesWith(marker)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readEvents(dir string) []journal.Event {
	events, _ := journal.ReadJournal(dir)
	return events
}

// describe names each pid with its argv[0], state and wait channel, which tell a
// room that runs on from one stuck in its setup.
func describe(pids []string) string {
	var out []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		state := "?"
		if _, after, ok := strings.Cut(string(stat), ") "); ok && after != "" {
			state = after[:1]
		}
		wchan, _ := os.ReadFile("/proc/" + pid + "/wchan")
		out = append(out, fmt.Sprintf("%s %s state %s wchan %s", pid, argv0, state, wchan))
	}
	return strings.Join(out, "; ")
}

// processesWith lists the pids whose command line holds marker.
func processesWith(marker string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), marker) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// TestKillNineDuringRecordThenResume: tare record is SIGKILLed mid-recording. Its rooms die
// with it; tare resume records the task again from the run's start capsule, keeps the
// interrupted attempt, says so in the journal, and leaves a recording tare tail continues.
func TestKillNineDuringRecordThenResume(t *testing.T) {
	paths, script := slowDemo(t)
	r := newRun(t, "")
	out := filepath.Join(r.home, "rec")
	marker := "record-crash-marker-" + filepath.Base(r.home)
	cmd := exec.Command(tareBin, "record", demo.Task+" ("+marker+")", "--side", "codex",
		"--script", script, "--check", demo.Check, "--project", paths.Project, "--out", out)
	cmd.Env = r.env()
	waited := startReaped(t, cmd)

	// Kill once the recording has made a tool call (the script then pauses before its last).
	deadline := time.Now().Add(3 * time.Minute)
	for calls := 0; calls == 0; {
		for _, e := range readEvents(out) {
			if e.ToolCall != nil && e.ToolCall.Tail == "original" {
				calls++
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the recording made no tool call")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	waitGone(t, marker)
	if _, err := os.Stat(filepath.Join(out, "original", "record.json")); err == nil {
		t.Fatal("the recording had finished before the kill: the test proves nothing")
	}

	resume := r.tare(t, "resume", out)
	if resume.code != 0 || !strings.Contains(resume.stdout, "tare record") || !strings.Contains(resume.stdout, "steps     3") {
		t.Fatalf("tare resume exited %d, want the report of a 3-step recording\nstdout: %s\nstderr: %s", resume.code, resume.stdout, resume.stderr)
	}
	var rerun []string
	finished := 0
	for _, e := range readEvents(out) {
		if e.Resumed != nil {
			rerun = append(rerun, e.Resumed.Rerun...)
		}
		if e.RunFinished != nil && e.RunFinished.Error == "" {
			finished++
		}
	}
	if !slices.Contains(rerun, "original") || finished != 1 {
		t.Errorf("journal: rerun %v and %d clean run ends, want original rerun and one end", rerun, finished)
	}
	if _, err := os.Stat(filepath.Join(out, "original.attempt-1")); err != nil {
		t.Errorf("the interrupted recording was not kept: %v", err)
	}
	tail := r.tare(t, "tail", out, "--step", "1")
	if !strings.Contains(tail.stdout+tail.stderr, "native-1-codex-0") {
		t.Errorf("tare tail --step 1 on the resumed recording (exit %d):\nstdout: %s\nstderr: %s", tail.code, tail.stdout, tail.stderr)
	}
	if res, err := os.ReadFile(filepath.Join(out, "tails", "native-1-codex-0", "result.json")); err != nil || strings.Contains(string(res), `"status": "no-verdict"`) {
		t.Errorf("the tail reached no verdict: %v\n%s", err, res)
	}

	// A tare tail killed while its tail runs: resume explains the tail instead of leaving it
	// running for ever.
	cmd = exec.Command(tareBin, "tail", out, "--step", "2")
	cmd.Env = r.env()
	waited = startReaped(t, cmd)
	const id = "native-2-codex-0"
	for deadline = time.Now().Add(time.Minute); journal.Replay("run", readEvents(out)).Tails[id] == nil; {
		if time.Now().After(deadline) {
			t.Fatal("tare tail --step 2 started no tail")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-waited
	if st := journal.Replay("run", readEvents(out)).Tails[id]; st.Status != "running" {
		t.Fatalf("tail %s is %s after the kill, want running", id, st.Status)
	}
	if again := r.tare(t, "resume", out); again.code != 0 {
		t.Fatalf("second tare resume exited %d: %s", again.code, again.stderr)
	}
	if st := journal.Replay("run", readEvents(out)).Tails[id]; st.Status != journal.StatusNoVerdict || st.Reason != journal.ReasonInterrupted ||
		!strings.Contains(st.Detail, "run it again with tare tail") {
		t.Errorf("the killed tail after resume: %s (%s), %q; want no verdict, interrupted, saying to run it again", st.Status, st.Reason, st.Detail)
	}
}

// TestKillNineDuringCliffThenResume: tare cliff is SIGKILLed while its tails run. tare resume
// finishes the analysis: tails that had finished are not started again, those that were
// running are rerun (their interrupted attempt kept) and the journal says so, and the report
// names the cliff.
func TestKillNineDuringCliffThenResume(t *testing.T) {
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(r.home, "cliff")
	marker := "crash-marker-" + filepath.Base(r.home)
	cmd := exec.Command(tareBin, "cliff", "codex", demo.Task+" ("+marker+")", "--check", demo.Check, "--script", paths.CliffScript,
		"--seed", "39", "--project", paths.Project, "--out", out)
	cmd.Env = r.env()
	before := killWhileTailsRun(t, cmd, out, marker, "cliff-")

	resume := r.tare(t, "resume", out)
	if resume.code != 0 {
		t.Fatalf("tare resume exited %d\n%s", resume.code, resume.stderr)
	}
	if first, _, _ := strings.Cut(resume.stdout, "\n"); !strings.HasPrefix(first, "cliff at step ") && !strings.HasPrefix(first, "not pinned") {
		t.Fatalf("tare resume printed no cliff report:\n%s", resume.stdout)
	}
	checkResumed(t, out, before)
}

// killWhileTailsRun starts cmd and SIGKILLs it once one tail whose id has prefix has finished
// while another runs; it waits until the run's rooms (whose agents carry marker) are gone and
// returns the run's state at the kill.
func killWhileTailsRun(t *testing.T, cmd *exec.Cmd, out, marker, prefix string) *journal.RunState {
	t.Helper()
	var stderr strings.Builder
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	waited := startReaped(t, cmd)
	deadline := time.Now().Add(4 * time.Minute)
	for {
		select {
		case <-waited:
			t.Fatalf("tare ended before a tail finished while another ran: %s\n%s", cmd.ProcessState, stderr.String())
		default:
		}
		st := journal.Replay("run", readEvents(out))
		done, running := 0, 0
		for id, tl := range st.Tails {
			switch {
			case !strings.HasPrefix(id, prefix):
			case tl.Status == "running":
				running++
			default:
				done++
			}
		}
		if done >= 1 && running >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tail finished while another ran (done %d, running %d)", done, running)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	before := journal.Replay("run", readEvents(out))
	waitGone(t, marker)
	return before
}

// checkResumed: after tare resume, every tail that had finished before the kill was started
// once, and every tail that was running was rerun (the journal says so), its interrupted
// attempt kept beside it.
func checkResumed(t *testing.T, out string, before *journal.RunState) {
	t.Helper()
	started := map[string]int{}
	var rerun []string
	for _, e := range readEvents(out) {
		switch {
		case e.TailStarted != nil:
			started[e.TailStarted.ID]++
		case e.Resumed != nil:
			rerun = append(rerun, e.Resumed.Rerun...)
		}
	}
	for id, tl := range before.Tails {
		switch tl.Status {
		case "running":
			if !slices.Contains(rerun, id) {
				t.Errorf("tail %s was running at the kill but the journal does not say it was rerun (rerun: %v)", id, rerun)
			}
			if _, err := os.Stat(filepath.Join(out, "tails", id+".attempt-1")); err != nil {
				t.Errorf("the interrupted attempt of %s was not kept: %v", id, err)
			}
		default:
			if started[id] != 1 {
				t.Errorf("tail %s had finished before the kill but was started %d times", id, started[id])
			}
		}
	}
	if len(rerun) == 0 {
		t.Errorf("no tail was rerun: the kill did not land mid-tail")
	}
}

// TestKillNineDuringSwapThenResume: tare swap is SIGKILLed while its tails run; tare resume
// keeps both originals and every finished tail, reruns the ones that were running (the
// journal says so) and writes the report.
func TestKillNineDuringSwapThenResume(t *testing.T) {
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(r.home, "swap")
	marker := "crash-marker-" + filepath.Base(r.home)
	cmd := exec.Command(tareBin, "swap", demo.Task+" ("+marker+")", "--a", "codex", "--b", "codex", "--cuts", "0,1", "--tails", "2",
		"--check", demo.Check, "--script", paths.SwapScript, "--seed", fmt.Sprint(demo.SwapSeed), "--project", paths.Project, "--out", out)
	cmd.Env = r.env()
	before := killWhileTailsRun(t, cmd, out, marker, "c")
	originals := map[string][]byte{}
	for _, side := range []string{"a", "b"} {
		data, err := os.ReadFile(filepath.Join(out, side, "original", "record.json"))
		if err != nil {
			t.Fatalf("original %s was not kept: %v", side, err)
		}
		originals[side] = data
	}

	resume := r.tare(t, "resume", out)
	if resume.code != 0 || !strings.Contains(resume.stdout, "state effect") {
		t.Fatalf("tare resume exited %d and printed no swap report:\n%s\n%s", resume.code, resume.stdout, resume.stderr)
	}
	for side, data := range originals {
		if again, _ := os.ReadFile(filepath.Join(out, side, "original", "record.json")); string(again) != string(data) {
			t.Errorf("original %s was recorded again", side)
		}
	}
	checkResumed(t, out, before)
}
