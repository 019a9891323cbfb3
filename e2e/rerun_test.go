package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// editRecipe rewrites fields of a run's recipe.json.
func editRecipe(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "recipe.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, _ = json.Marshal(m)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRerun: a real calibrate run (claude on tare's model server), then tare rerun of copies
// of it. Each kind of drift (an agent CLI's version, tare's version, the project's content,
// the model script) is named before anything starts, and without --yes a non-interactive
// rerun refuses and writes no run; with nothing drifted, or with --yes, the recorded command
// line runs again into a new run directory. A recipe from a newer tare is one line, exit 2.
func TestRerun(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# a page\n"), 0o644)
	script := filepath.Join(base, "build.toml")
	os.WriteFile(script, []byte(buildScript), 0o644)
	first := newRun(t, "")
	orig := filepath.Join(base, "run")
	if r := first.tare(t, "calibrate", "Make a page", "--side", "claude", "--runs", "1", "--script", script,
		"--check", "test -f index.html", "--project", project, "--out", orig); r.code != 0 {
		t.Fatalf("the first run: exit %d\n%s", r.code, r.stderr)
	}
	copyRun := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "run")
		if out, err := exec.Command("cp", "-a", orig, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		return dir
	}
	drifts := []struct {
		name string
		edit func(t *testing.T, m map[string]any)
		want string
	}{
		{"agent version", func(t *testing.T, m map[string]any) {
			m["agents"].(map[string]any)["claude"].(map[string]any)["version"] = "0.0.1"
		}, "drifted: claude: 0.0.1 then, 2.1.197 now"},
		{"tare version", func(t *testing.T, m map[string]any) { m["tare"] = "v0.0.1" }, "drifted: tare: v0.0.1 then"},
		{"project", func(t *testing.T, m map[string]any) {
			moved := filepath.Join(t.TempDir(), "project")
			exec.Command("cp", "-a", project, moved).Run()
			os.WriteFile(filepath.Join(moved, "extra.txt"), []byte("new\n"), 0o644)
			m["project"] = moved
		}, "drifted: project: content "},
		{"model script", func(t *testing.T, m map[string]any) {
			changed := filepath.Join(t.TempDir(), "build.toml")
			os.WriteFile(changed, []byte(buildScript+"\n# edited\n"), 0o644)
			m["script"] = changed
		}, "drifted: model script: the text in recipe.json then, "},
	}
	for _, d := range drifts {
		t.Run(d.name, func(t *testing.T) {
			dir := copyRun(t)
			editRecipe(t, dir, func(m map[string]any) { d.edit(t, m) })
			r := newRun(t, "")
			r.tare(t, "rerun", dir)
			if r.code != 1 || !strings.Contains(r.stderr, d.want) || !strings.Contains(r.stderr, "fix: pass --yes") {
				t.Fatalf("exit %d, want 1 naming %q and --yes:\n%s", r.code, d.want, r.stderr)
			}
			if strings.Count(r.stderr, "drifted:") != 1 {
				t.Errorf("want exactly this drift named:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, "the run being repeated: ") || !strings.Contains(r.stderr, "$") {
				t.Errorf("the cost of the run being repeated is not said:\n%s", r.stderr)
			}
			if _, err := os.Stat(filepath.Join(r.stateDir(), "calibrate")); err == nil {
				t.Errorf("a refused rerun wrote a run")
			}
		})
	}
	for _, c := range []struct {
		name string
		args []string
		edit func(map[string]any)
	}{
		{"nothing drifted", nil, nil},
		{"drifted, --yes", []string{"--yes"}, func(m map[string]any) { m["tare"] = "v0.0.1" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyRun(t)
			if c.edit != nil {
				editRecipe(t, dir, c.edit)
			}
			out := filepath.Join(t.TempDir(), "again")
			r := newRun(t, "").tare(t, append([]string{"rerun", dir, "--out", out}, c.args...)...)
			if r.code != 0 || !strings.Contains(r.stdout, "1/1") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "report.txt")); err != nil {
				t.Errorf("the repeat wrote no report in --out: %v", err)
			}
		})
	}
	for answer, code := range map[string]int{"n": 1, "y": 0} {
		t.Run("asks on a terminal, "+answer, func(t *testing.T) {
			dir := copyRun(t)
			editRecipe(t, dir, func(m map[string]any) { m["tare"] = "v0.0.1" })
			r := newRun(t, "")
			x := startTmux(t, base, append([]string{"env"}, append(r.env(), tareBin, "rerun", dir)...)...)
			x.waitText(30*time.Second, "drifted: tare: v0.0.1 then", "start anyway? [y/N]")
			x.text(answer)
			x.keys("Enter")
			if got := x.exited(2 * time.Minute); got != code {
				t.Fatalf("exit %d after %q, want %d", got, answer, code)
			}
			_, err := os.Stat(filepath.Join(r.stateDir(), "calibrate"))
			if started := err == nil; started != (answer == "y") {
				t.Errorf("answered %q: a run was written: %v", answer, started)
			}
		})
	}
	t.Run("recipe from a newer tare", func(t *testing.T) {
		dir := copyRun(t)
		editRecipe(t, dir, func(m map[string]any) { m["format"] = "tare-recipe 2"; m["tare"] = "v9.0.0" })
		r := newRun(t, "").tare(t, "rerun", dir)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "newer tare (v9.0.0)") || !strings.Contains(lines[0], "fix:") {
			t.Fatalf("exit %d, want 2 and one line naming the newer tare and the fix:\n%s", r.code, r.stderr)
		}
	})
}

// TestRerunJudgeNoise: a judge-noise run keeps a recipe with its paths absolute; tare rerun
// repeats it from another folder (its --tolerance too: the rerun clears the threshold as the
// first run did), and names a page or a rubric that changed since.
func TestRerunJudgeNoise(t *testing.T) {
	page, rubric, script := judgeFiles(t, noiseScript)
	out := filepath.Join(t.TempDir(), "noise")
	first := newRun(t, "").tare(t, "judge-noise", page, "--rubric", rubric, "--times", "2", "--script", script, "--seed", "3",
		"--judge", "claude", "--threshold", "9", "--tolerance", "0.8", "--out", out) // 2 unanimous judgements bound the flip rate below 0.78
	if first.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", first.code, first.stdout, first.stderr)
	}
	r := newRun(t, "").tare(t, "rerun", out, "--out", filepath.Join(t.TempDir(), "again"))
	if r.code != 0 || !strings.Contains(r.stderr, "nothing drifted") || !strings.Contains(r.stdout, page+"  2/2") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(page, "index.html"), []byte("<h1>changed</h1>"), 0o644)
	os.WriteFile(rubric, []byte("Be strict.\nscale: 1-10\n"), 0o644)
	r = newRun(t, "").tare(t, "rerun", out)
	for _, want := range []string{"drifted: page " + page + ": content ", "drifted: rubric " + rubric + ": content ", "fix: pass --yes"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, want 1 and %q:\n%s", r.code, want, r.stderr)
		}
	}
}
