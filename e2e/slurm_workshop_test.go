package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The scene the writer's model has it write, after a long tool call during which tare dies.
const gapScene = `Maren climbed the eighty-two steps for the last time with the winding key in her coat
pocket, although the motor had turned the clockwork since 1998. She wound it anyway. The
lens took the last of the dusk and gave it back in one white flash every ten seconds.
`

// writerGapScript pauses 8 s in a tool call (marked on the node) before the draft is written:
// tare is killed there, so the rest of the writer's conversation needs its model back.
const writerGapScript = `
final = "The scene is in drafts/scene.md."

[[turn]]
text = "Reading the assignment first."
shell = "cat /work/START.md; touch /work/pausing; sleep 8"

[[turn]]
text = "Writing the scene."
[turn.write]
path = "drafts/scene.md"
content = """
` + gapScene + `"""

[[turn]]
text = "The scene is in drafts/scene.md."
`

// slurmWriter prepares the demo experiment and starts tare workshop run --on slurm of its pi
// writer on script (TOML text) in the background, returning once the writer's room on its
// node has made the marker /work/pausing.
func slurmWriter(t *testing.T, script string) (r *run, exp, id string, cmd *exec.Cmd, waited <-chan struct{}) {
	t.Helper()
	slurmUp(t)
	r = newRun(t, "")
	exp, id = filepath.Join(r.home, "exp"), "pi-tare-model"
	if r.tare(t, "workshop", "prepare", filepath.Join(repoDir(), "demo", "workshop", "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: %d %s", r.code, r.stderr)
	}
	file := filepath.Join(r.home, "gap.toml")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(tareBin, "workshop", "run", exp, id, "--script", file, "--timeout", "3m", "--on", "slurm")
	cmd.Env = r.env()
	waited = startReaped(t, cmd)
	pausing := filepath.Join(r.tmp, "tare-worker-*", "in", "work", "pausing")
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if marked, _ := filepath.Glob(pausing); len(marked) == 1 {
			return r, exp, id, cmd, waited
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the writer's long tool call did not start on a node")
		}
	}
}

// writerState is the part of records/ID/state.json these tests read.
type writerState struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Job    *struct {
		ID   string `json:"id"`
		Node string `json:"node"`
	} `json:"slurm_job"`
}

// TestSlurmWorkshopKillNineThenCollectReattaches: tare is SIGKILLed while a writer runs as a
// Slurm job (mid tool call, its model server dying with tare). The job runs on; inspect says
// so with its id and node; collect re-attaches to it, serving the scripted model again on
// the address its room dials, waits for its end and brings back what the node wrote: the
// draft byte for byte, the writer completed, and no model turn served twice (no rerun).
// Before, collect failed the writer as interrupted and its draft stayed on the node.
func TestSlurmWorkshopKillNineThenCollectReattaches(t *testing.T) {
	r, exp, id, cmd, waited := slurmWriter(t, writerGapScript)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-waited
	var s writerState
	readJSONFile(t, filepath.Join(exp, "records", id, "state.json"), &s)
	if s.Status != "running" || s.Job == nil || s.Job.Node == "" {
		t.Fatalf("state after kill -9: %+v, want running with its job and node on record", s)
	}
	if st := jobState(t, s.Job.ID); st != "RUNNING" && st != "COMPLETING" {
		t.Fatalf("job %s is %q after tare's kill -9: the job should outlive tare", s.Job.ID, st)
	}
	if r.tare(t, "workshop", "inspect", exp); r.code != 0 || !strings.Contains(r.stdout, "its Slurm job "+s.Job.ID+" is still running on "+s.Job.Node) {
		t.Fatalf("inspect after kill -9 does not say the job runs on: %s %s", r.stdout, r.stderr)
	}
	if r.tare(t, "workshop", "resume", exp, id); r.code != 2 || !strings.Contains(r.stderr, "never launch it twice") {
		t.Fatalf("resume while the job lives: exit %d %s", r.code, r.stderr)
	}
	if r.tare(t, "workshop", "collect", exp, id); r.code != 0 || !strings.Contains(r.stdout, `"completed"`) ||
		!strings.Contains(r.stderr, "re-attaching to its Slurm job "+s.Job.ID) {
		t.Fatalf("collect after kill -9: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{filepath.Join("writers", id, "drafts", "scene.md"), filepath.Join("records", id, "artifacts", "scene.md")} {
		if got, err := os.ReadFile(filepath.Join(exp, p)); err != nil || string(got) != gapScene {
			t.Errorf("%s: %q %v, want what the node wrote", p, got, err)
		}
	}
	// One model log for both servers (the killed tare's and collect's): every scripted turn
	// served once; a rerun would have served the first again.
	f, err := os.Open(filepath.Join(exp, "records", "model-requests-gap.toml.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turns := map[int]int{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var q struct{ Turn int }
		if json.Unmarshal(sc.Bytes(), &q) == nil && q.Turn > 0 {
			turns[q.Turn]++
		}
	}
	if turns[1] != 1 || turns[2] != 1 || turns[3] != 1 {
		t.Errorf("turns served %v, want each of 1, 2, 3 once", turns)
	}
	if rec := filepath.Join(exp, "records", id); exists(sharedRoot(t, rec)) {
		t.Errorf("the writer's folder below the shared directory is left after its job")
	}
}

// writerCutScript writes the first line of its draft, then runs a tool for a minute.
const writerCutScript = `
[[turn]]
text = "Starting."
write = {path = "drafts/scene.md", content = "The first line of the scene, kept.\n"}

[[turn]]
text = "Thinking."
shell = "touch /work/pausing; sleep 60"

[[turn]]
text = "Too late."
`

// TestSlurmWorkshopCancelledJobKeepsPartialProse: a writer's job cancelled with scancel (as a
// time limit or an admin ends it: SIGTERM, then SIGKILL after the grace) sends back what its
// room wrote in the grace: the writer is failed with the reason and its partial draft is
// archived, as a local writer stopped at its timeout. Before, the worker ended without a
// result and the draft stayed on the node.
func TestSlurmWorkshopCancelledJobKeepsPartialProse(t *testing.T) {
	_, exp, id, cmd, waited := slurmWriter(t, writerCutScript)
	var s writerState
	readJSONFile(t, filepath.Join(exp, "records", id, "state.json"), &s)
	if s.Job == nil {
		cmd.Process.Kill()
		t.Fatalf("state: %+v, want its job on record", s)
	}
	if out, err := exec.Command("scancel", s.Job.ID).CombinedOutput(); err != nil {
		cmd.Process.Kill()
		t.Fatalf("scancel %s: %v %s", s.Job.ID, err, out)
	}
	select {
	case <-waited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("tare did not end after its writer's job was cancelled")
	}
	readJSONFile(t, filepath.Join(exp, "records", id, "state.json"), &s)
	if s.Status != "failed" || !strings.Contains(s.Error, "cancelled outside tare") || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("state %+v, exit %d: want failed as cancelled", s, cmd.ProcessState.ExitCode())
	}
	if kept, err := os.ReadFile(filepath.Join(exp, "records", id, "artifacts", "scene.md")); err != nil || string(kept) != "The first line of the scene, kept.\n" {
		t.Fatalf("the partial draft is not archived: %q %v", kept, err)
	}
}
