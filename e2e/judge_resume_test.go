package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/engine/journal"
)

// judgeCounts are how often the journal of a judge-noise run started and finished each
// judgement, and what its resumes said they reran and re-attached.
func judgeCounts(events []journal.Event) (started, finished map[string]int, rerun, reattached []string) {
	started, finished = map[string]int{}, map[string]int{}
	for _, e := range events {
		switch {
		case e.TailStarted != nil:
			started[e.TailStarted.ID]++
		case e.TailFinished != nil:
			finished[e.TailFinished.ID]++
		case e.Resumed != nil:
			rerun = append(rerun, e.Resumed.Rerun...)
			reattached = append(reattached, e.Resumed.Reattached...)
		}
	}
	sort.Strings(rerun)
	sort.Strings(reattached)
	return started, finished, rerun, reattached
}

// TestKillNineDuringJudgeNoiseThenResume: tare judge-noise (real headless Chromium renders
// the page, the real claude judges it in a room on tare's model server) is SIGKILLed while its
// second judgement runs. tare resume keeps the judgement that had finished (never judged
// again), judges the interrupted one again as a new attempt, the interrupted attempt kept on
// the record, and writes the report with every judgement once. A page changed since is
// refused in one line, before anything is written.
func TestKillNineDuringJudgeNoiseThenResume(t *testing.T) {
	page, rubric, script := judgeFiles(t, "[[turn]]\ndelay = \"3s\"\ntext = \"score 6: fine\"\n")
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	cmd := exec.Command(tareBin, "judge-noise", page, "--rubric", rubric, "--times", "2", "--jobs", "1", "--script", script,
		"--judge", "claude", "--out", out)
	cmd.Env = r.env()
	waited := startReaped(t, cmd)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		st := journal.Replay("run", readEvents(out))
		if done, running, _ := st.Counts(); done >= 1 && running >= 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no judgement finished while another ran: %+v", journal.Replay("run", readEvents(out)).Tails)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	before := journal.Replay("run", readEvents(out))

	// A page that changed since is refused in one line, the run left as it was.
	added := filepath.Join(page, "new.html")
	if err := os.WriteFile(added, []byte("<p>new</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := len(readEvents(out))
	if r.tare(t, "resume", out); r.code != 2 || !strings.Contains(r.stderr, page+": the page folder changed") || strings.Count(r.stderr, "\n") != 1 || len(readEvents(out)) != n {
		t.Fatalf("tare resume of a changed page exited %d, want 2 with one line naming the folder and the journal untouched\n%s", r.code, r.stderr)
	}
	os.Remove(added)

	if r.tare(t, "resume", out); r.code != 0 || !strings.Contains(r.stdout, "2 judgements per page") || !strings.Contains(r.stdout, "2/2") {
		t.Fatalf("tare resume exited %d, want the judge-noise report with both judgements scored\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	events := readEvents(out)
	started, finished, rerun, _ := judgeCounts(events)
	st := journal.Replay("run", events)
	for _, id := range []string{"p1-1", "p1-2"} {
		if finished[id] != 1 {
			t.Errorf("judgement %s finished %d times in the journal, want once", id, finished[id])
		}
		tl := st.Tails[id]
		if tl == nil || tl.Status != journal.StatusPassed || tl.Score == nil || *tl.Score != 6 {
			t.Errorf("judgement %s after the resume: %+v, want scored 6", id, tl)
			continue
		}
		switch before.Tails[id].Status {
		case journal.StatusPassed:
			if started[id] != 1 || len(tl.Earlier) != 0 {
				t.Errorf("judgement %s had finished before the kill but was started %d times", id, started[id])
			}
		case journal.StatusRunning:
			if !slices.Contains(rerun, id) {
				t.Errorf("judgement %s was running at the kill but the journal does not say it was rerun (rerun: %v)", id, rerun)
			}
			if len(tl.Earlier) != 1 || tl.Earlier[0].Reason != journal.ReasonInterrupted || tl.Attempt.N != 1 {
				t.Errorf("judgement %s's interrupted attempt is not on the record: attempt %d, earlier %+v", id, tl.Attempt.N, tl.Earlier)
			}
		}
	}
	if len(rerun) != 1 {
		t.Errorf("rerun %v, want the one judgement running at the kill", rerun)
	}
	if s := scoresOf(t, out); len(s) != 1 || len(s[0]) != 2 {
		t.Errorf("judgements.json has %v, want one page judged twice", deref(s))
	}
	if r.tare(t, "resume", out); r.code != 0 || !strings.Contains(r.stdout, "2 judgements per page") {
		t.Errorf("tare resume of the finished run exited %d, want its report\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestSlurmJudgeNoiseResumeReattaches: judge-noise --on slurm is SIGKILLed
// while both judgements' jobs run on a real two-node Slurm, each judge (the real claude on
// tare's model server) in a long tool call. The jobs run on; tare resume re-attaches to them,
// serves their model again, and collects both judgements into the report: the journal says
// re-attached, nothing is started again, each judgement's places name its one job, and Slurm
// shows one job per judgement, none submitted twice.
func TestSlurmJudgeNoiseResumeReattaches(t *testing.T) {
	slurmUp(t)
	marker := "judge-resume-" + filepath.Base(t.TempDir())
	page, rubric, script := judgeFiles(t, "[[turn]]\ntext = \"Looking.\"\nshell = \"sleep 5; echo "+marker+"\"\n\n[[turn]]\ntext = \"score 6: fine\"\n")
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	cmd := exec.Command(tareBin, "judge-noise", page, "--rubric", rubric, "--times", "2", "--jobs", "2", "--script", script,
		"--judge", "claude", "--out", out, "--on", "slurm")
	cmd.Env = r.env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	waited := startReaped(t, cmd)
	for deadline := time.Now().Add(2 * time.Minute); len(processesWith("sleep 5; echo "+marker)) < 2; time.Sleep(50 * time.Millisecond) {
		select {
		case <-waited:
			t.Fatalf("judge-noise ended before its judges' tool calls both ran: %+v\n%s", places(readEvents(out)), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-waited
			t.Fatalf("the judges' tool calls did not both start: %+v\n%s", places(readEvents(out)), stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	jobs := map[string]string{}
	for id, ps := range places(readEvents(out)) {
		jobs[id] = ps[len(ps)-1].Job
		if s := jobState(t, jobs[id]); s != "RUNNING" && s != "COMPLETING" && s != "COMPLETED" {
			t.Fatalf("job %s of %s is %q after tare's kill -9: the job should outlive tare", jobs[id], id, s)
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("jobs before the kill: %v, want one per judgement", jobs)
	}
	name := "tare-" + filepath.Base(sharedRoot(t, out)) + "-"
	if r.tare(t, "resume", out); r.code != 0 || !strings.Contains(r.stdout, "2 judgements per page") || !strings.Contains(r.stdout, "2/2") {
		t.Fatalf("tare resume exited %d, want the judge-noise report with both judgements scored\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	events := readEvents(out)
	started, finished, rerun, reattached := judgeCounts(events)
	if len(rerun) != 0 || strings.Join(reattached, ",") != "p1-1,p1-2" {
		t.Errorf("resume reran %v and re-attached %v, want both re-attached, none rerun", rerun, reattached)
	}
	ps := places(events)
	for _, id := range []string{"p1-1", "p1-2"} {
		if started[id] != 1 || finished[id] != 1 {
			t.Errorf("judgement %s started %d and finished %d times, want once each", id, started[id], finished[id])
		}
		for _, p := range ps[id] {
			if p.Job != jobs[id] {
				t.Errorf("judgement %s placed in job %s, want only its first job %s", id, p.Job, jobs[id])
			}
		}
		got, err := exec.Command("squeue", "--me", "-h", "-t", "all", "-n", name+id, "-o", "%i").Output()
		if err != nil || strings.Fields(string(got)) == nil || strings.Join(strings.Fields(string(got)), ",") != jobs[id] {
			t.Errorf("Slurm's jobs of judgement %s: %q (%v), want only job %s", id, got, err, jobs[id])
		}
	}
	if s := deref(scoresOf(t, out)); fmt.Sprint(s) != "[[6 6]]" {
		t.Errorf("judgements.json has %v, want both judgements scored 6", s)
	}
}
