package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProjectAgentsAreNeverRun: an agent in an attached run can write the project, so a CLI
// planted there (agents/node_modules/.bin, the folder tare once searched in the working dir, and
// agents/NAME/node_modules/.bin, where tare's own install keeps each CLI)
// must never run on the host, whether tare is started from the project, finds it through a
// PATH entry inside the project, or is pointed at it by agents.NAME.bin. tare is installed
// outside a checkout here (a copy of the binary with no agents/ beside it), the case where
// the working dir's agents/ came first.
func TestProjectAgentsAreNeverRun(t *testing.T) {
	install := t.TempDir()
	data, err := os.ReadFile(tareBin)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(install, "tare")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	marks := t.TempDir()
	planted := filepath.Join(project, "agents", "node_modules", ".bin")
	if err := os.MkdirAll(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"claude", "codex", "pi"} {
		script := "#!/bin/sh\necho \"$0 $*\" > " + filepath.Join(marks, name) + "\necho '2.1.197 (Claude Code)'\n"
		if err := os.WriteFile(filepath.Join(planted, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		own := filepath.Join(project, "agents", name, "node_modules", ".bin")
		if err := os.MkdirAll(own, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(own, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := func(t *testing.T, r *run, path string, args ...string) {
		t.Helper()
		if err := os.RemoveAll(marks); err != nil || os.Mkdir(marks, 0o755) != nil {
			t.Fatal("cannot clear the marks folder")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = project
		cmd.Env = append(r.env(), "PATH="+path) // the later PATH wins
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r.stdout, r.stderr, r.code = out.String(), errb.String(), 0
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if ran, _ := os.ReadDir(marks); len(ran) > 0 {
			t.Fatalf("tare %v ran the CLI planted in the project (%s); stderr:\n%s", args, ran[0].Name(), r.stderr)
		}
		if left := r.leftovers(t); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}

	t.Run("working dir", func(t *testing.T) {
		r := newRun(t, "")
		start(t, r, "/usr/bin:/bin", "doctor")
		for _, name := range []string{"claude", "codex", "pi"} {
			if !strings.Contains(r.stdout, "none  "+name) {
				t.Errorf("doctor found a %s with only the project's agents/ around:\n%s", name, r.stdout)
			}
		}
	})
	t.Run("PATH entry inside the project", func(t *testing.T) {
		r := newRun(t, "")
		start(t, r, planted+":/usr/bin:/bin", "probe", "claude")
		if r.code != 2 || !strings.Contains(r.stderr, "skipped: inside "+project) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("exit %d, want 2 and one line naming the skipped CLI; stderr:\n%s", r.code, r.stderr)
		}
	})
	t.Run("PATH entry inside the working folder, probing another project", func(t *testing.T) {
		r := newRun(t, "")
		start(t, r, planted+":/usr/bin:/bin", "probe", "claude", "--project", t.TempDir())
		if r.code != 2 || !strings.Contains(r.stderr, "skipped: inside "+project) {
			t.Errorf("exit %d, want 2 and the skipped CLI named; stderr:\n%s", r.code, r.stderr)
		}
	})
	t.Run("node and bwrap planted in a PATH entry inside the working folder", func(t *testing.T) {
		venv := filepath.Join(project, ".venv", "bin")
		if err := os.MkdirAll(venv, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"node", "bwrap"} {
			script := "#!/bin/sh\necho \"$0 $*\" > " + filepath.Join(marks, name) + "\n"
			if err := os.WriteFile(filepath.Join(venv, name), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		agents := filepath.Join(repoDir(), "agents", "pi", "node_modules", ".bin")
		r := newRun(t, "")
		start(t, r, venv+":"+agents+":/usr/bin:/bin", "doctor")
		if !strings.Contains(r.stdout, "ok    pi") || !strings.Contains(r.stdout, "ok    bwrap") {
			t.Errorf("doctor did not find pi and bwrap outside the project:\n%s", r.stdout)
		}
	})
	t.Run("agents.claude.bin inside the project", func(t *testing.T) {
		r := newRun(t, "[agents.claude]\nbin = \""+filepath.Join(planted, "claude")+"\"\n")
		start(t, r, "/usr/bin:/bin", "probe", "claude", "--project", project)
		if r.code != 2 || !strings.Contains(r.stderr, "agents.claude.bin") || !strings.Contains(r.stderr, "inside "+project) {
			t.Errorf("exit %d, want 2 and the config key named; stderr:\n%s", r.code, r.stderr)
		}
	})
}

// TestAgentRuntimeHoldingTheHomeIsRefused: a CLI whose runtime folder would be the home
// (here a binary in its version folder, which tare binds whole, and that folder is HOME) is
// refused before anything runs: one line naming the path and the fix, exit 2, the CLI never
// started and no room folder left.
func TestAgentRuntimeHoldingTheHomeIsRefused(t *testing.T) {
	marks := t.TempDir()
	cli := "#!/bin/sh\ntouch " + filepath.Join(marks, "ran") + "\necho '2.1.197 (Claude Code)'\n"
	r := newRun(t, "")
	r.home = filepath.Join(filepath.Dir(r.home), "2.1.197")
	for rel, text := range map[string]string{"claude": cli, ".ssh/id_rsa": "CANARY_SSH\n", ".claude/CLAUDE.md": "personal\n"} {
		p := filepath.Join(r.home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.config, "tare", "config.toml"), []byte("[agents.claude]\nbin = \""+filepath.Join(r.home, "claude")+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.tare(t, "probe", "claude", "--project", t.TempDir())
	line := strings.TrimSpace(r.stderr)
	if r.code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, "your home folder") || !strings.Contains(line, "agents.claude.bin") {
		t.Errorf("exit %d, want 2 and one line naming the home and the fix; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(marks, "ran")); err == nil {
		t.Error("the CLI ran")
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
