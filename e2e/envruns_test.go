package e2e

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"tare/engine/journal"
	enginerun "tare/engine/run"
	"tare/environ"
)

// stampDockerfile is a task environment with a tool only its image has (tasktool, which the
// host lacks) and a WORKDIR /app holding the task's file.
const stampDockerfile = `FROM debian:bookworm-slim
RUN printf '#!/bin/sh\necho "stamped by tasktool"\n' > /usr/local/bin/tasktool && chmod 755 /usr/local/bin/tasktool
ENV TASK_MODE=image
WORKDIR /app
COPY task.txt ./
`

// stampScript has the agent read the task's file and run the image's tool into stamp.txt.
const stampScript = `
[[turn]]
text = "Reading the task."
shell = "cat task.txt"

[[turn]]
text = "Stamping."
shell = "tasktool > stamp.txt"

[[turn]]
text = "Done."
`

// stampCheck passes only where tasktool runs (the image), the workspace is at /app with the
// image's file in it, and the image's ENV is set: the check's room is the image's too.
const stampCheck = `tasktool | cmp -s - stamp.txt && test "$PWD" = /app && test -f task.txt && test "$TASK_MODE" = image`

// stampEnv writes the environment folder and the script, and removes the image it makes
// from podman's store when the test ends.
func stampEnv(t *testing.T) (envDir, script string) {
	t.Helper()
	if err := exec.Command("podman", "image", "exists", "docker.io/library/debian:bookworm-slim").Run(); err != nil {
		t.Fatal("debian:bookworm-slim is not in podman's store: run scripts/setup, which makes it from Debian's packages")
	}
	base := t.TempDir()
	envDir = filepath.Join(base, "task", "environment")
	if err := os.MkdirAll(envDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(envDir, "Dockerfile"), []byte(stampDockerfile), 0o644)
	os.WriteFile(filepath.Join(envDir, "task.txt"), []byte("stamp the task with tasktool\n"), 0o644)
	script = filepath.Join(base, "stamp.toml")
	os.WriteFile(script, []byte(stampScript), 0o644)
	first, err := environ.Digest(envDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The images of the folder as it was and as the test left it.
		now, _ := environ.Digest(envDir)
		for _, d := range []string{first, now} {
			exec.Command("podman", "rmi", "-f", environ.ImageName(d)).Run()
		}
	})
	return envDir, script
}

func readRecipe(t *testing.T, dir string) *enginerun.Recipe {
	t.Helper()
	rec, err := enginerun.ReadRecipe(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestCalibrateInImage: a task whose tool only its image has, run by a real agent (pi) on
// tare's model server. Rooted on the host (--project holding the same files) it fails every
// run; with --env (no --project: the image's WORKDIR contents are the start) every run
// passes, the check running in the image too. recipe.json keeps the folder and the digest,
// the report names the image the check ran in, and a rerun names the environment once its
// folder digests otherwise, refusing to start without --yes.
func TestCalibrateInImage(t *testing.T) {
	envDir, script := stampEnv(t)
	r := newRun(t, "")
	host := filepath.Join(r.home, "host")
	if r.tare(t, "calibrate", "Stamp the task", "--side", "pi", "--runs", "1", "--script", script, "--check", stampCheck,
		"--project", envDir, "--out", host); r.code != 0 {
		t.Fatalf("host calibrate: exit %d\n%s", r.code, r.stderr)
	}
	if st := journal.Replay("run", readEvents(host)); st.Tally()[0].Passed != 0 {
		t.Errorf("host-rooted run passed %d of 1: the host has no tasktool", st.Tally()[0].Passed)
	}
	img := filepath.Join(r.home, "image")
	if r.tare(t, "calibrate", "Stamp the task", "--side", "pi", "--runs", "2", "--script", script, "--check", stampCheck,
		"--env", envDir, "--out", img); r.code != 0 {
		t.Fatalf("calibrate --env: exit %d\n%s", r.code, r.stderr)
	}
	st := journal.Replay("run", readEvents(img))
	if tally := st.Tally()[0]; tally.Passed != 2 || tally.Verdicts != 2 {
		for id, tl := range st.Tails {
			t.Logf("tail %s: %s %s", id, tl.Status, tl.Detail)
		}
		t.Fatalf("image-rooted runs: %d of %d passed, want 2 of 2", tally.Passed, tally.Verdicts)
	}
	digest, err := environ.Digest(envDir)
	if err != nil {
		t.Fatal(err)
	}
	rec := readRecipe(t, img)
	if rec.Env == nil || rec.Env.Digest != digest || rec.Env.Dir != envDir || rec.Env.WorkDir != "/app" || !rec.Env.FromImage || rec.Project != "" {
		t.Errorf("recipe env %+v, project %q: want %s from %s at /app, started from the image", rec.Env, rec.Project, digest[:12], envDir)
	}
	report, _ := os.ReadFile(filepath.Join(img, "report.txt"))
	if want := "rooted in environment " + digest[:12]; !strings.Contains(string(report), want) {
		t.Errorf("the report does not say %q:\n%s", want, report)
	}

	// The folder changes: a repeat would run in another image, and tare rerun says so.
	if r.tare(t, "rerun", img); r.code != 0 || !strings.Contains(r.stderr+r.stdout, "nothing drifted") {
		t.Fatalf("rerun with nothing drifted: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(envDir, "task.txt"), []byte("stamp the task with tasktool, twice\n"), 0o644)
	r.tare(t, "rerun", img)
	want := "drifted: environment: digest " + digest[:12] + " then, digest "
	if r.code != 1 || !strings.Contains(r.stderr+r.stdout, want) || !strings.Contains(r.stderr+r.stdout, "pass --yes") {
		t.Errorf("rerun after the folder changed: exit %d, want 1 and %q:\n%s%s", r.code, want, r.stdout, r.stderr)
	}
}

// TestRecordThenTailInImage: tare record --env with a real claude (its capsules taken by its
// own hook in the room, of /app), then tare tail from step 1: both in the image, both
// checked there and passing. Then the folder changes and the cache loses the image: a tail
// is refused, naming the digest it got and the run's, as a Slurm node's would be.
func TestRecordThenTailInImage(t *testing.T) {
	envDir, script := stampEnv(t)
	r := newRun(t, "")
	dir := filepath.Join(r.home, "rec")
	if r.tare(t, "record", "Stamp the task", "--side", "claude", "--script", script, "--check", stampCheck, "--env", envDir, "--out", dir); r.code != 0 {
		t.Fatalf("record --env: exit %d\n%s", r.code, r.stderr)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if !strings.Contains(string(report), "tare record · environment ") || !strings.Contains(string(report), "from its WORKDIR /app") {
		t.Errorf("the report does not name the image it started from:\n%s", report)
	}
	recording, err := journal.ReadRecording(dir)
	if err != nil {
		t.Fatal(err)
	}
	if recording.Snapshots != "hook" || len(recording.Steps) != 2 {
		t.Fatalf("recording: capsules from %q, %d steps; want claude's hook and 2 steps", recording.Snapshots, len(recording.Steps))
	}
	r.tare(t, "tail", dir, "--step", "2")
	var res journal.TailResult
	if data, err := os.ReadFile(filepath.Join(dir, "tails", "native-2-claude-0", "result.json")); err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("tail: exit %d, no result (%v)\n%s", r.code, err, r.stderr)
	}
	if !res.Passed {
		t.Fatalf("the tail from step 2 (stamp.txt made) did not pass in the image: %s / %s", res.AgentExit, res.Check)
	}
	os.WriteFile(filepath.Join(envDir, "task.txt"), []byte("another task\n"), 0o644)
	rec := readRecipe(t, dir)
	if r.tare(t, "env", "rm", rec.Env.Digest); r.code != 0 {
		t.Fatalf("env rm: %s", r.stderr)
	}
	r.tare(t, "tail", dir, "--step", "2")
	data, err := os.ReadFile(filepath.Join(dir, "tails", "native-2-claude-1", "result.json"))
	if err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("second tail: exit %d, no result (%v)\n%s", r.code, err, r.stderr)
	}
	if want := "not to the run's " + rec.Env.Digest[:12]; res.Status != journal.StatusNoVerdict || !strings.Contains(res.AgentExit, want) {
		t.Errorf("a tail whose environment now digests otherwise: %s %q, want no verdict saying %q", res.Status, res.AgentExit, want)
	}
}

// TestSlurmTailInImage: calibrate --on slurm --env sends its tail to a node of the local
// cluster, whose worker roots the agent's room and the check's in the recipe's image (found
// in the cache by the recipe's digest): the tail runs on a node and passes, which only the
// image's tasktool lets it.
func TestSlurmTailInImage(t *testing.T) {
	slurmUp(t)
	envDir, script := stampEnv(t)
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	if r.tare(t, "calibrate", "Stamp the task", "--side", "pi", "--runs", "1", "--script", script, "--check", stampCheck,
		"--env", envDir, "--out", out, "--on", "slurm"); r.code != 0 {
		t.Fatalf("calibrate --on slurm --env: exit %d\n%s", r.code, r.stderr)
	}
	events := readEvents(out)
	st := journal.Replay("run", events)
	tl, ok := st.Tails["a-0"]
	if !ok || tl.Status != journal.StatusPassed {
		t.Fatalf("the tail on Slurm: %+v, want passed in the image", tl)
	}
	ps := places(events)["a-0"]
	if len(ps) < 2 || ps[1].Node == "" || ps[1].Job == "" {
		t.Errorf("the tail's places %+v: want it running on a node with a job id", ps)
	}
}

// TestAttachedInImage: tare pi --env DIR on a terminal, offline on the stamp script: the
// agent's shell runs in the image (tasktool is the image's), on the project itself, which
// the room binds at the image's WORKDIR, so stamp.txt lands in the project.
func TestAttachedInImage(t *testing.T) {
	envDir, script := stampEnv(t)
	r := newRun(t, "")
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "task.txt"), []byte("the project's own task\n"), 0o644)
	cmd := exec.Command(tareBin, "pi", "--offline", "--script", script, "--env", envDir, "--project", project)
	cmd.Env = append(r.env(), "TERM=xterm-256color")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	scr := &screen{}
	go func() { _, _ = io.Copy(scr, tty) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
	})
	scr.waitFor(t, "tare: 0.00", 1, 3*time.Minute)
	scr.waitFor(t, "tare-model", 1, time.Minute)
	io.WriteString(tty, "Stamp the task\r")
	scr.waitFor(t, "Done.", 1, 2*time.Minute)
	got, err := os.ReadFile(filepath.Join(project, "stamp.txt"))
	if err != nil || string(got) != "stamped by tasktool\n" {
		t.Errorf("stamp.txt in the project: %q (%v), want the image's tasktool's line", got, err)
	}
	io.WriteString(tty, "\x04")
	if code := exitCode(t, cmd, time.Minute); code != 0 {
		t.Errorf("tare exited %d after the agent exited 0", code)
	}
}

// stampWriter is a workshop writer on tare's model server that runs the image's tool into
// its draft.
const stampWriter = `
final = "The scene is in drafts/scene.md."

[[turn]]
text = "Reading the assignment first."
shell = "cat /work/START.md"

[[turn]]
text = "Stamping the draft."
shell = "mkdir -p drafts && { tasktool; echo \"$TASK_MODE\"; yes 'Maren wound the clock anyway.' | head -n 10; } > drafts/scene.md"

[[turn]]
text = "The scene is in drafts/scene.md."
`

// TestWorkshopWriterInImage: tare workshop run --env DIR: the writer's room is rooted in the
// image (its tasktool and ENV reach the draft), the writer's folder bound there as in every
// writer's room.
func TestWorkshopWriterInImage(t *testing.T) {
	envDir, _ := stampEnv(t)
	r := newRun(t, "")
	exp := filepath.Join(t.TempDir(), "exp")
	if r.tare(t, "workshop", "prepare", filepath.Join(repoDir(), "demo", "workshop", "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: %d %s", r.code, r.stderr)
	}
	script := filepath.Join(t.TempDir(), "writer.toml")
	os.WriteFile(script, []byte(stampWriter), 0o644)
	const pi = "pi-tare-model"
	if r.tare(t, "workshop", "run", exp, pi, "--timeout", "2m", "--script", script, "--env", envDir); r.code != 0 {
		t.Fatalf("workshop run --env: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got, err := os.ReadFile(filepath.Join(exp, "writers", pi, "drafts", "scene.md"))
	if err != nil || !strings.HasPrefix(string(got), "stamped by tasktool\nimage\nMaren") {
		t.Errorf("the writer's draft: %q (%v), want the image's tasktool line and its ENV", got, err)
	}
}
