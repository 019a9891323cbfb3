package taskset

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const dataset = "testdata/tasks"

func TestLoadGoodTask(t *testing.T) {
	task, err := Load(filepath.Join(dataset, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	c := task.Config
	if task.Name != "hello" || !strings.Contains(task.Instruction, "Write hello") {
		t.Errorf("name %q, instruction %q", task.Name, task.Instruction)
	}
	if c.Version != "1.0" || c.AgentTimeout != 300*time.Second || c.VerifierTimeout != 120*time.Second || c.BuildTimeout != 600*time.Second {
		t.Errorf("version and timeouts: %+v", c)
	}
	if c.CPUs != 1 || c.MemoryMB != 2048 || c.StorageMB != 10240 || c.AllowInternet {
		t.Errorf("resources: %+v", c)
	}
	if !reflect.DeepEqual(c.VerifierEnv, map[string]string{"EXPECT": "hello"}) || c.Metadata["difficulty"] != "easy" {
		t.Errorf("verifier env %v, metadata %v", c.VerifierEnv, c.Metadata)
	}
	abs, _ := filepath.Abs(filepath.Join(dataset, "hello"))
	if task.TestsDir != filepath.Join(abs, "tests") || task.Solution != filepath.Join(abs, "solution/solve.sh") ||
		task.EnvironmentDir != filepath.Join(abs, "environment") || task.Dockerfile != filepath.Join(abs, "environment/Dockerfile") {
		t.Errorf("paths: %+v", task)
	}
}

// The newer spelling of the format: schema_version, [task], sizes as strings, no solution, and
// a key tare does not use, which is listed rather than refused.
func TestLoadNewerSpelling(t *testing.T) {
	task, err := Load(filepath.Join(dataset, "json-reward"))
	if err != nil {
		t.Fatal(err)
	}
	c := task.Config
	if c.Version != "1.1" || c.Task["name"] != "tare/json-reward" {
		t.Errorf("version %q, task %v", c.Version, c.Task)
	}
	if c.CPUs != 2 || c.MemoryMB != 4096 || c.StorageMB != 10240 || !c.AllowInternet {
		t.Errorf("resources: %+v", c)
	}
	if !reflect.DeepEqual(c.Ignored, []string{"environment.gpus"}) {
		t.Errorf("ignored %v, want [environment.gpus]", c.Ignored)
	}
	if task.Solution != "" {
		t.Errorf("solution %q for a task without one", task.Solution)
	}
}

func TestLoadSetKeepsGoodTasksAndNamesBadOnes(t *testing.T) {
	set, err := LoadSet(dataset, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, task := range set.Tasks {
		names = append(names, task.Name)
	}
	if !reflect.DeepEqual(names, []string{"hello", "json-reward"}) {
		t.Errorf("loaded %v, want [hello json-reward]", names)
	}
	want := []string{
		"testdata/tasks/bad-field/task.toml: agent.timeout_sec: is \"two minutes\", not a number; write a positive number",
		"testdata/tasks/bad-toml/task.toml: line 6: expected '.' or ']' to end table name",
		"testdata/tasks/link-out/environment/context.txt: links out of the task folder; copy what it points to into the task folder",
		"testdata/tasks/no-test/tests/test.sh: is missing; add tests/test.sh",
		"testdata/tasks/unknown-table/task.toml: verfier: is not part of the task format; remove it, or move it under [metadata]",
	}
	if len(set.Bad) != len(want) {
		t.Fatalf("bad folders:\n%v\nwant %d", set.Bad, len(want))
	}
	for i, e := range set.Bad {
		msg := e.Error()
		t.Log(msg)
		if !strings.HasPrefix(msg, want[i]) || strings.Contains(msg, "\n") {
			t.Errorf("bad folder %d:\n got %q\nwant %q...", i, msg, want[i])
		}
	}
}

func TestLoadSetGlobs(t *testing.T) {
	set, err := LoadSet(dataset, []string{"json-*", "hel?o"})
	if err != nil || len(set.Tasks) != 2 || len(set.Bad) != 0 {
		t.Fatalf("set %+v, err %v", set, err)
	}
	if _, err := LoadSet(dataset, []string{"nothing-*"}); err == nil || !strings.Contains(err.Error(), "no task folder matches --task nothing-*") {
		t.Errorf("unmatched glob: %v", err)
	}
	if _, err := LoadSet(dataset, []string{"[x"}); err == nil || !strings.Contains(err.Error(), "malformed pattern") {
		t.Errorf("malformed glob: %v", err)
	}
	set, err = LoadSet(dataset, []string{"bad-*"})
	if err == nil || !strings.Contains(err.Error(), "no task loaded (2 bad task folders)") || len(set.Bad) != 2 {
		t.Errorf("only bad tasks: %v, %+v", err, set)
	}
	if _, err := LoadSet(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "holds no task folder") {
		t.Errorf("empty dataset: %v", err)
	}
}

// Files and links to files beside the tasks are not tasks; a link to a folder is a task the
// dataset does not hold, and is named as bad.
func TestLoadSetLinks(t *testing.T) {
	ds := t.TempDir()
	must(t, os.CopyFS(filepath.Join(ds, "hello"), os.DirFS(filepath.Join(dataset, "hello"))))
	must(t, os.WriteFile(filepath.Join(ds, "README.md"), []byte("tasks\n"), 0o644))
	must(t, os.Symlink("README.md", filepath.Join(ds, "NOTES.md")))
	must(t, os.Symlink("hello", filepath.Join(ds, "hello-again")))
	set, err := LoadSet(ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Tasks) != 1 || len(set.Bad) != 1 || !strings.HasSuffix(set.Bad[0].Error(), "hello-again: is a link; put the task folder itself in the dataset") {
		t.Errorf("tasks %d, bad %v", len(set.Tasks), set.Bad)
	}
	if _, err := LoadSet(filepath.Join(ds, "missing"), nil); err == nil || !strings.Contains(err.Error(), "cannot read the dataset folder (no such file or directory)") {
		t.Errorf("missing dataset: %v", err)
	}
}

// copyTask copies the good fixture task into a fresh folder that a test may spoil.
func copyTask(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "task")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(dataset, "hello"))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestLoadRefuses(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, dir string)
		want  string
	}{
		{"link in tests", func(t *testing.T, dir string) {
			must(t, os.Symlink("test.sh", filepath.Join(dir, "tests/run.sh")))
		}, "tests/run.sh: is a link"},
		{"link in solution", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "solution/solve.sh")))
			must(t, os.Symlink("../tests/test.sh", filepath.Join(dir, "solution/solve.sh")))
		}, "solution/solve.sh: is a link"},
		{"linked instruction", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "instruction.md"), filepath.Join(dir, "environment/instruction.md")))
			must(t, os.Symlink("environment/instruction.md", filepath.Join(dir, "instruction.md")))
		}, "instruction.md: is a link"},
		{"absolute link out", func(t *testing.T, dir string) {
			must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "environment/passwd")))
		}, "environment/passwd: links out of the task folder"},
		{"fifo", func(t *testing.T, dir string) {
			must(t, unix.Mkfifo(filepath.Join(dir, "environment/pipe"), 0o600))
		}, "environment/pipe: is not a regular file"},
		{"oversized instruction", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "instruction.md"), make([]byte, MaxInstructionBytes+1), 0o644))
		}, "instruction.md: is larger than 1048576 bytes; shorten it"},
		{"missing instruction", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "instruction.md")))
		}, "instruction.md: is missing; add instruction.md"},
		{"test.sh a folder", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "tests/test.sh")))
			must(t, os.Mkdir(filepath.Join(dir, "tests/test.sh"), 0o755))
		}, "tests/test.sh: is not a regular file"},
		{"negative timeout", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "task.toml"), []byte("[verifier]\ntimeout_sec = -5\n"), 0o644))
		}, "task.toml: verifier.timeout_sec: is -5; write a positive number"},
		{"bad memory", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "task.toml"), []byte("[environment]\nmemory = \"lots\"\n"), 0o644))
		}, `task.toml: environment.memory: is "lots"`},
		{"memory twice", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "task.toml"), []byte("[environment]\nmemory = \"1G\"\nmemory_mb = 1024\n"), 0o644))
		}, "task.toml: environment.memory: is given twice"},
		{"unknown top-level key", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "task.toml"), []byte("difficulty = \"easy\"\n"), 0o644))
		}, "task.toml: difficulty: is not part of the task format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyTask(t)
			if _, err := Load(dir); err != nil {
				t.Fatalf("the unspoilt copy does not load: %v", err)
			}
			c.spoil(t, dir)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, c.want)) && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// A link that stays inside the task folder (a build context sharing a file) is fine.
func TestLoadAllowsLinkInsideEnvironment(t *testing.T) {
	dir := copyTask(t)
	must(t, os.Symlink("Dockerfile", filepath.Join(dir, "environment/Containerfile")))
	if _, err := Load(dir); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
