package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/demo"
	"tare/engine"
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
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "slow.toml")
	if err := os.WriteFile(script, []byte(slowScript), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	marker := "crash-marker-" + filepath.Base(r.home)
	prompt := demo.Task + " (" + marker + ")" // every agent process carries it in its argv
	cmd := exec.Command(tareBin, "calibrate", prompt, "--side", "pi", "--runs", "4", "--jobs", "2",
		"--script", script, "--check", demo.Check, "--project", paths.Project, "--out", out)
	cmd.Env = r.env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()

	// Kill once one tail has finished and another is running.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st := engine.Replay("run", readEvents(out))
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
	before := engine.Replay("run", readEvents(out))

	// The rooms die with tare.
	deadline = time.Now().Add(20 * time.Second)
	for len(processesWith(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the killed run survive: %v", processesWith(marker))
		}
		time.Sleep(50 * time.Millisecond)
	}

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
			if !contains(rerun, id) {
				t.Errorf("tail %s was running at the kill but the journal does not say it was rerun (rerun: %v)", id, rerun)
			}
			if _, err := os.Stat(filepath.Join(out, "tails", id+".attempt-1")); err != nil {
				t.Errorf("the interrupted attempt of %s was not kept: %v", id, err)
			}
		}
	}
	if len(rerun) == 0 {
		t.Errorf("no tail was rerun: the kill did not land mid-tail")
	}
}

func readEvents(dir string) []engine.Event {
	events, _ := engine.ReadJournal(dir)
	return events
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
