package engine

import (
	"strings"
	"tare/engine/run"
	"testing"
)

// A recipe written when tare kept the command line as typed has relative paths: the repeat
// reads them against the folder the run was made in, wherever tare rerun is started.
func TestRerunArgsOfAnOldRecipeAreAbsolute(t *testing.T) {
	p := &RerunPlan{Dir: "/home/someone/work", Recipe: &run.Recipe{Argv: []string{"calibrate", "x", "--side", "pi",
		"--project", "proj", "--script", "s.toml", "--prompt-file=task.txt", "--check", "go test ./...", "--out", "/state/first"}}}
	got := strings.Join(p.Args("/state/out"), " ")
	want := "calibrate x --side pi --project /home/someone/work/proj --script /home/someone/work/s.toml --prompt-file=/home/someone/work/task.txt --check go test ./... --out /state/out"
	if got != want {
		t.Errorf("args\n %s\nwant\n %s", got, want)
	}
	if got := strings.Join(p.Args(""), " "); strings.Contains(got, "--out") {
		t.Errorf("no --out asked: the repeat must not write into the run's own folder; args %s", got)
	}
}
