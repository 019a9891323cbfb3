package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tare/demo"
	"tare/engine"
	"tare/engine/journal"
)

// TestUntilSeparatedBadInput: --until-separated beside --runs, --max-runs below 2, beyond
// 10,000 or without --until-separated, --detect without it or below the table's first row,
// and --until-separated with other than two sides are each refused with
// one line naming the flag and the fix, exit 2, nothing started or left behind.
func TestUntilSeparatedBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"with --runs", []string{"--side", "pi", "--side", "claude", "--until-separated", "--runs", "5"}, "--runs: --until-separated decides"},
		{"max-runs 1", []string{"--side", "pi", "--side", "claude", "--until-separated", "--max-runs", "1"}, "--max-runs 1:"},
		{"max-runs alone", []string{"--side", "pi", "--side", "claude", "--max-runs", "5"}, "--max-runs: bounds --until-separated only"},
		{"max-runs beyond the calibration", []string{"--side", "pi", "--side", "claude", "--until-separated", "--max-runs", "20000"}, "--max-runs 20000:"},
		{"detect alone", []string{"--side", "pi", "--side", "claude", "--detect", "0.1"}, "--detect: sizes --until-separated only"},
		{"detect below the table", []string{"--side", "pi", "--side", "claude", "--until-separated", "--detect", "0.01"}, "--detect 0.01:"},
		{"one side", []string{"--side", "pi", "--until-separated"}, "--until-separated: compares two sides, 1 given"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, "")
			project := filepath.Join(r.home, "project")
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			r.tare(t, append([]string{"calibrate", "x", "--check", "true", "--project", project}, c.args...)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) || !strings.Contains(lines[0], "fix:") {
				t.Fatalf("exit %d, stderr %q: want exit 2 and one line saying %q and the fix", r.code, r.stderr, c.want)
			}
			if left := r.leftovers(t); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if runs, _ := filepath.Glob(filepath.Join(r.home, ".local", "state", "tare", "*", "*")); len(runs) > 0 {
				t.Errorf("run directories left behind: %v", runs)
			}
		})
	}
}

// TestKillNineDuringUntilSeparatedThenResume: tare calibrate --until-separated is SIGKILLed
// while its first runs go on; tare resume continues the same sequence (the runs that had
// finished are kept and make its first pairs, none is started again) and stops at the pair
// where the sides separate, far below --max-runs, starting nothing after the decision but
// what was in flight.
func TestKillNineDuringUntilSeparatedThenResume(t *testing.T) {
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	marker := "crash-marker-" + filepath.Base(r.home)
	cmd := exec.Command(tareBin, "calibrate", demo.Task+" ("+marker+")", "--side", "claude", "--side", "codex",
		"--until-separated", "--max-runs", "30", "--jobs", "2", "--script", filepath.Join(repoDir(), "engine", "testdata", "differ.toml"),
		"--check", demo.Check, "--project", paths.Project, "--out", out)
	cmd.Env = r.env()
	before := killWhileTailsRun(t, cmd, out, marker, "")

	resume := r.tare(t, "resume", out, "--json")
	if resume.code != 0 {
		t.Fatalf("tare resume exited %d\n%s", resume.code, resume.stderr)
	}
	checkResumed(t, out, before)
	var rep engine.RunReport
	if err := json.Unmarshal([]byte(resume.stdout), &rep); err != nil {
		t.Fatalf("tare resume --json: %v\n%s", err, resume.stdout)
	}
	sep := rep.Separation
	if sep == nil || sep.Stopped != "separated" || sep.Pairs > 10 || sep.Ahead != "a" || sep.Lo <= 0 {
		t.Fatalf("separation %+v, want separated within 10 pairs, claude ahead", sep)
	}
	// The runs that had finished before the kill are the sequence's first: each side's in
	// run order, so the resumed sequence is the one the killed tare was taking.
	paired := map[string]bool{}
	for _, p := range sep.Paired {
		paired[p[0]], paired[p[1]] = true, true
	}
	for id, tl := range before.Tails {
		if tl.Status != "running" && !paired[id] && !slices.Contains(sep.After, id) {
			t.Errorf("%s finished before the kill but is neither paired nor after the stop: %+v", id, sep)
		}
	}
	// Without --detect the report gives no run count, and no difference at the stop.
	text, err := os.ReadFile(filepath.Join(out, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, never := range []string{"runs to separate", "to detect"} {
		if strings.Contains(string(text), never) {
			t.Errorf("report.txt says %q without --detect:\n%s", never, text)
		}
	}
	if !strings.Contains(string(text), "95% confidence sequence over the") {
		t.Errorf("report.txt lacks the difference's confidence sequence:\n%s", text)
	}
	st := journal.Replay("run", readEvents(out))
	if started := len(st.Tails); started > 2*(sep.Pairs+2) {
		t.Errorf("%d runs started for a stop at pair %d with 2 jobs", started, sep.Pairs)
	}
}
