package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tare/demo"
)

// plantedTools are the host programs an agent in an attached run plants in the project's
// .venv/bin: Slurm's commands, the pager, git and a browser.
var plantedTools = []string{"sinfo", "sbatch", "squeue", "scancel", "srun", "less", "git", "chromium"}

// plantVenv makes project/.venv a virtualenv whose bin holds plantedTools, each a script that
// leaves a file named for it in the returned folder when anything runs it.
func plantVenv(t *testing.T, project string) (bin, marks string) {
	t.Helper()
	bin, marks = filepath.Join(project, ".venv", "bin"), t.TempDir()
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".venv", "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tool := range plantedTools {
		script := "#!/bin/sh\ntouch " + filepath.Join(marks, tool) + "\necho tails\n"
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin, marks
}

// ran lists the planted tools that were run.
func ran(marks string) []string {
	var out []string
	entries, _ := os.ReadDir(marks)
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestHostProgramsFromAProjectVenvAreRefused is red-team case 09: with the project's .venv
// activated (its bin first on PATH, VIRTUAL_ENV set), tare doctor with a [cluster] and
// calibrate --on slurm refuse Slurm's commands in one line that names the program and the
// PATH entry, and run none of what the agent planted there: from the project as the working
// folder, and from elsewhere.
func TestHostProgramsFromAProjectVenvAreRefused(t *testing.T) {
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	bin, marks := plantVenv(t, paths.Project)
	r := newRun(t, "[cluster]\ntime = \"5\"\n")
	env := func() []string {
		e := r.env()
		e[0] = "PATH=" + bin + ":" + os.Getenv("PATH")
		return append(e, "VIRTUAL_ENV="+filepath.Dir(bin))
	}
	refusedLine := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "the PATH entry "+bin) {
				return l
			}
		}
		return ""
	}
	for _, dir := range []string{paths.Project, r.home} {
		doctor := exec.Command(tareBin, "doctor")
		doctor.Env, doctor.Dir = env(), dir
		out, _ := doctor.CombinedOutput()
		line := refusedLine(string(out))
		if line == "" || !strings.Contains(line, "slurm") || !strings.Contains(line, "fix: set cluster.bin_dir") {
			t.Errorf("tare doctor from %s: no line refusing the PATH entry %s with the fix:\n%s", dir, bin, out)
		}
		if got := ran(marks); len(got) > 0 {
			t.Fatalf("tare doctor from %s ran the planted %v", dir, got)
		}

		runDir := filepath.Join(r.home, "run-"+filepath.Base(dir))
		cal := exec.Command(tareBin, calibrateArgs(paths, paths.Script, runDir, 1, 1, "--on", "slurm")...)
		cal.Env, cal.Dir = env(), dir
		out, err := cal.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || len(lines) != 1 || refusedLine(string(out)) == "" || !strings.Contains(lines[0], "sbatch") {
			t.Errorf("calibrate --on slurm from %s (%v): want one line refusing sbatch from %s, got:\n%s", dir, err, bin, out)
		}
		if got := ran(marks); len(got) > 0 {
			t.Fatalf("calibrate --on slurm from %s ran the planted %v", dir, got)
		}
		if _, err := os.Lstat(runDir); err == nil {
			t.Errorf("calibrate --on slurm from %s left %s behind", dir, runDir)
		}
	}
}
