package e2e

import (
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/engine/journal"
)

// judgeFiles writes a page that loads a script from the network, a rubric on a 1-10 scale
// and a judge script, and returns their paths.
func judgeFiles(t *testing.T, script string) (page, rubric, scriptPath string) {
	t.Helper()
	dir := t.TempDir()
	page = filepath.Join(dir, "site")
	os.MkdirAll(page, 0o755)
	html := `<!doctype html><html><head><script src="https://cdn.example.com/lib.js"></script></head>` +
		`<body><h1>Todo</h1><p>Buy milk</p></body></html>`
	for name, data := range map[string]string{
		filepath.Join(page, "index.html"): html,
		filepath.Join(dir, "rubric.md"):   "Is the page clear?\n\nscale: 1-10\n",
		filepath.Join(dir, "judge.toml"):  script,
	} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return page, filepath.Join(dir, "rubric.md"), filepath.Join(dir, "judge.toml")
}

// TestJudgeExitFollowsThreshold: the real binary renders a page with real headless Chromium
// and has a real judge CLI (claude, codex) score it on tare's model server. The threshold
// alone decides the exit; the last line says "score N" for a --check; the remote script the
// page asked for is named as blocked; the judge's tokens and cost are shown.
func TestJudgeExitFollowsThreshold(t *testing.T) {
	page, rubric, script := judgeFiles(t, "[[turn]]\ntext = \"score 6: clear, but plain\"\n")
	for _, judge := range []string{"claude", "codex"} {
		for _, c := range []struct {
			threshold string
			code      int
		}{{"5", 0}, {"6", 0}, {"6.5", 1}, {"10", 1}} {
			t.Run(judge+"@"+c.threshold, func(t *testing.T) {
				r := newRun(t, "").tare(t, "judge", page, "--rubric", rubric, "--threshold", c.threshold, "--script", script, "--judge", judge)
				if r.code != c.code {
					t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, c.code, r.stdout, r.stderr)
				}
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				if last := lines[len(lines)-1]; !strings.HasPrefix(last, "score 6 (threshold "+c.threshold) || !strings.Contains(last, "clear, but plain") {
					t.Errorf("last line %q, want the score, the threshold and the reason", last)
				}
				for _, want := range []string{"blocked", "https://cdn.example.com/lib.js", "usage judge", "$", "screenshot ", "the judge's room: tare: 0.00"} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
					}
				}
				if left := r.leftovers(t); len(left) > 0 {
					t.Errorf("left behind: %v", left)
				}
			})
		}
	}
	t.Run("json", func(t *testing.T) {
		r := newRun(t, "").tare(t, "judge", page, "--rubric", rubric, "--threshold", "7", "--script", script, "--judge", "claude", "--json")
		var out struct {
			Passed *bool
			Usage  struct{ Input int64 }
			Pages  []struct {
				Screenshot string
				Blocked    []string
				Judgements []struct{ Score *int }
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 {
			t.Fatalf("exit %d, %v:\n%s", r.code, err, r.stdout)
		}
		if out.Passed == nil || *out.Passed || out.Usage.Input == 0 || len(out.Pages) != 1 || len(out.Pages[0].Blocked) != 1 ||
			out.Pages[0].Judgements[0].Score == nil || *out.Pages[0].Judgements[0].Score != 6 {
			t.Fatalf("json: %s", r.stdout)
		}
		if _, err := os.Stat(out.Pages[0].Screenshot); err != nil {
			t.Errorf("the screenshot is not kept: %v", err)
		}
	})
}

// noiseScript gives a score of 3 or 8, drawn anew for each judgement.
const noiseScript = `
[[turn]]
  [[turn.branch]]
  p = 0.5
  text = "score 3: cramped"
  [[turn.branch]]
  p = 0.5
  text = "score 8: clear"
`

// TestJudgeNoiseRefusesAThresholdInsideTheRange: K fresh judgements of one page, drawn
// independently, range from 3 to 8. A threshold inside that range is refused with the page
// named (exit 1); one outside every range is cleared only when 6 judgements bound the flip
// rate below the tolerance (exit 0 at 0.4, exit 1 at the default 0.05). The same seed
// replays the same scores, so the runs see the same range.
func TestJudgeNoiseRefusesAThresholdInsideTheRange(t *testing.T) {
	page, rubric, script := judgeFiles(t, noiseScript)
	args := []string{"judge-noise", page, "--rubric", rubric, "--times", "6", "--jobs", "3", "--script", script, "--seed", "11", "--judge", "claude"}
	for _, c := range []struct {
		threshold string
		code      int
		want      string
		tolerance string
	}{{"5", 1, "threshold 5 refused", ""}, {"8", 1, "threshold 8 refused", ""},
		// Outside the range, 6 unanimous judgements bound the flip rate below 0.39 only: not
		// enough for the default tolerance, enough for 0.4.
		{"3", 1, "6 unanimous judgements bound the flip rate below 0.39; 59 are needed for 0.05; not cleared", ""},
		{"9", 0, "threshold 9 cleared: every page's flip rate at it is below 0.4", "0.4"}} {
		t.Run(c.threshold, func(t *testing.T) {
			a := append(args, "--threshold", c.threshold)
			if c.tolerance != "" {
				a = append(a, "--tolerance", c.tolerance)
			}
			r := newRun(t, "").tare(t, a...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, c.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, page+"  6/6     3    ") || !strings.Contains(r.stdout, "  8    5  ") {
				t.Errorf("want a row with 6 of 6 scored, from 3 to 8 (spread 5):\n%s", r.stdout)
			}
			if !strings.Contains(r.stdout, c.want) || (c.want[len(c.want)-7:] == "refused" && !strings.Contains(r.stdout, page+" (3-8)")) {
				t.Errorf("stdout lacks %q and the page:\n%s", c.want, r.stdout)
			}
			if left := r.leftovers(t); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestJudgeNoiseNeedsEvidenceToClear: the real judge path (real Chromium, the real claude CLI
// in its rooms on tare's model server) on a page whose judge answers 7 nine times in ten and 5
// the tenth. Seed 4 draws ten 7s, so every judgement passes threshold 6; the page still flips
// 1 judgement in 10, and ten judgements cannot tell that from never: not cleared (exit 1),
// with the bound and what it would take, in the text and in --json.
func TestJudgeNoiseNeedsEvidenceToClear(t *testing.T) {
	page, rubric, script := judgeFiles(t, "[[turn]]\n  [[turn.branch]]\n  p = 0.9\n  text = \"score 7: clear\"\n  [[turn.branch]]\n  p = 0.1\n  text = \"score 5: cramped\"\n")
	args := []string{"judge-noise", page, "--rubric", rubric, "--times", "10", "--jobs", "3", "--script", script, "--seed", "4", "--judge", "claude", "--threshold", "6"}
	r := newRun(t, "").tare(t, args...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (not cleared)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{page + "  10/10   7    7       7    0  ", "10 unanimous judgements bound the flip rate below 0.26; 59 are needed for 0.05; not cleared",
		"threshold 6 not cleared: a fresh judgement of " + page + " (0 of 10 on the other side, up to 0.26)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "stands clear") || strings.Contains(r.stdout, "threshold 6 cleared") {
		t.Errorf("ten unanimous judgements clear the threshold:\n%s", r.stdout)
	}
	r = newRun(t, "").tare(t, append(args, "--json")...)
	var out struct {
		Refused []string
		Flips   []struct {
			Scored  int
			Other   int     `json:"other_side"`
			Upper   float64 `json:"upper_95"`
			Cleared bool
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 {
		t.Fatalf("--json: exit %d %v\n%s", r.code, err, r.stdout)
	}
	if len(out.Flips) != 1 || out.Flips[0].Scored != 10 || out.Flips[0].Other != 0 || out.Flips[0].Cleared || out.Flips[0].Upper < 0.25 || out.Flips[0].Upper > 0.26 ||
		len(out.Refused) != 1 || out.Refused[0] != page {
		t.Errorf("--json flips %+v refused %v", out.Flips, out.Refused)
	}
}

// flakyScript gives a score on some judgements and none on the others.
const flakyScript = `
[[turn]]
  [[turn.branch]]
  p = 0.4
  text = "score 6: fine"
  [[turn.branch]]
  p = 0.6
  text = "I cannot judge this."
`

// TestJudgeNoiseSaysAPageWasNotMeasured: with seed 1 only one of three judgements scores the
// page. One score has no spread, so the page was not measured: judge-noise says so, with how
// many judgements failed and why, never that a threshold stands clear of it, and exits 2.
func TestJudgeNoiseSaysAPageWasNotMeasured(t *testing.T) {
	page, rubric, script := judgeFiles(t, flakyScript)
	r := newRun(t, "").tare(t, "judge-noise", page, "--rubric", rubric, "--times", "3", "--jobs", "3", "--script", script,
		"--seed", "1", "--judge", "claude", "--threshold", "9")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "stands clear") {
		t.Errorf("a page with one score is counted clear:\n%s", r.stdout)
	}
	for _, want := range []string{page + "  1/3 ", "not measured", "(1 of 3 scored, 2 failed)", "threshold 9 not settled", "it said: I cannot judge this."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "not measured enough") || !strings.Contains(r.stderr, "fix:") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

// TestJudgeBadInput: each bad input is one line naming the flag or file and the fix, exit 2,
// and nothing written: no judge folder, no room folder.
func TestJudgeBadInput(t *testing.T) {
	page, rubric, script := judgeFiles(t, "[[turn]]\ntext = \"score 6: fine\"\n")
	dir := t.TempDir()
	empty, noScale := filepath.Join(dir, "empty.md"), filepath.Join(dir, "noscale.md")
	os.WriteFile(empty, []byte("  \n"), 0o644)
	os.WriteFile(noScale, []byte("Is it clear? Score it.\n"), 0o644)
	judge := func(args ...string) []string {
		return append([]string{"judge", page, "--script", script, "--judge", "claude"}, args...)
	}
	noise := func(args ...string) []string {
		return append([]string{"judge-noise", page, "--script", script, "--judge", "claude"}, args...)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"rubric missing", judge("--rubric", filepath.Join(dir, "nope.md"), "--threshold", "5"), []string{"--rubric", "nope.md", "fix:"}},
		{"rubric not given", judge("--threshold", "5"), []string{"--rubric", "fix:"}},
		{"rubric empty", judge("--rubric", empty, "--threshold", "5"), []string{"empty.md", "empty", "fix:", "scale: 1-10"}},
		{"rubric without a scale", judge("--rubric", noScale, "--threshold", "5"), []string{"noscale.md", "no scale", "fix:"}},
		{"threshold above the scale", judge("--rubric", rubric, "--threshold", "11"), []string{"--threshold 11", "1-10", "fix:"}},
		{"threshold below the scale", noise("--rubric", rubric, "--threshold", "0", "--times", "3"), []string{"--threshold 0", "1-10", "fix:"}},
		{"threshold not given", judge("--rubric", rubric), []string{"--threshold", "fix:"}},
		{"page folder missing", []string{"judge", filepath.Join(dir, "nosite"), "--rubric", rubric, "--threshold", "5"}, []string{"nosite", "no such folder", "fix:"}},
		{"page missing", judge("--rubric", rubric, "--threshold", "5", "--page", "about.html"), []string{"about.html", "fix:"}},
		{"times below 2", noise("--rubric", rubric, "--times", "1"), []string{"--times 1", "fix:"}},
		{"tolerance not a probability", noise("--rubric", rubric, "--times", "3", "--threshold", "5", "--tolerance", "1.5"), []string{"--tolerance 1.5", "between 0 and 1", "fix:"}},
		{"unknown judge", []string{"judge", page, "--rubric", rubric, "--threshold", "5", "--judge", "nosuch --fast"}, []string{`--judge "nosuch --fast"`, "nosuch"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, "").tare(t, c.args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || r.stdout != "" {
				t.Errorf("want one line on stderr and nothing on stdout; stdout %q stderr %q", r.stdout, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("error line %q lacks %q", lines[0], w)
				}
			}
			if _, err := os.Stat(filepath.Join(r.stateDir(), "judge")); err == nil {
				t.Errorf("a judge folder was written")
			}
			if left := r.leftovers(t); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// buildScript is the agent under test: it writes a page.
const buildScript = `
[[turn]]
text = "Writing the page."
write = { path = "index.html", content = "<!doctype html><h1>Hello</h1>\n" }

[[turn]]
text = "Done."
`

// TestJudgeAsCalibrateCheck: tare judge as the --check of a calibrate, as the seed's
// command list has it, with no --check-on-host: tare runs its own judge as its own code (a
// check room cannot hold the judge's rooms). Each tail's workspace is judged, its verdict
// follows the threshold, the scores land in the report beside the pass rate, and the judge's
// tokens and cost are the check's, on a line of their own, never in the agent's.
func TestJudgeAsCalibrateCheck(t *testing.T) {
	_, rubric, judgeScript := judgeFiles(t, noiseScript)
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# a page\n"), 0o644)
	build := filepath.Join(t.TempDir(), "build.toml")
	os.WriteFile(build, []byte(buildScript), 0o644)
	check := "tare judge --rubric " + rubric + " --threshold 5 --script " + judgeScript + " --judge codex"
	r := newRun(t, "").tare(t, "calibrate", "Make a page", "--side", "claude", "--runs", "3", "--jobs", "2",
		"--script", build, "--project", project, "--check", check)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	report := judgeRunReport(t, r)
	row := line(report, "scores ")
	_, scores, _ := strings.Cut(row, "scores ")
	fields := strings.Fields(scores)
	passed := 0
	for _, f := range fields {
		if f != "3" && f != "8" {
			t.Errorf("score %q is not one the judge's script gives", f)
		}
		if f == "8" {
			passed++
		}
	}
	if len(fields) != 3 || !strings.Contains(row, fmt.Sprintf(" %d/3 ", passed)) {
		t.Fatalf("want 3 scores and as many passes as scores of 8 or more in %q\n%s\nwhy tails had no verdict:\n%s", row, report, noVerdictLines(onlyRun(t, r)))
	}
	// The judge's spending is the check's: its own line, and report.json keeps it apart.
	agentUsage, checkUsage := line(report, "  usage a"), line(report, "  check usage a")
	if !strings.Contains(checkUsage, "$") || !strings.Contains(checkUsage, "simulated") || !strings.Contains(report, "tare's own judge") {
		t.Errorf("want the judge's usage as the check's, and where it ran:\n%s", report)
	}
	var rep struct {
		Sides []struct {
			Usage      struct{ Input, Output int64 }
			CheckUsage struct{ Input, Output int64 } `json:"check_usage"`
		}
	}
	data, err := os.ReadFile(filepath.Join(onlyRun(t, r), "report.json"))
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil || len(rep.Sides) != 1 || rep.Sides[0].CheckUsage.Input == 0 || rep.Sides[0].Usage.Input == 0 {
		t.Fatalf("report.json: %v\n%s", err, data)
	}
	// Three judgements, one request each, are the check's: the agent's usage is its own.
	if s := rep.Sides[0]; s.CheckUsage.Input == s.Usage.Input || agentUsage == "" {
		t.Errorf("the check's and the agent's usage look mixed: %+v", s)
	}
	var usage struct {
		Total      struct{ Input int64 }
		CheckTotal struct{ Input int64 } `json:"check_total"`
	}
	data, _ = os.ReadFile(filepath.Join(onlyRun(t, r), "usage.json"))
	if json.Unmarshal(data, &usage) != nil || usage.Total.Input != rep.Sides[0].Usage.Input || usage.CheckTotal.Input != rep.Sides[0].CheckUsage.Input {
		t.Errorf("usage.json keeps the check's usage apart from the agents': %s", data)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// judgeRunReport is the calibrate report in a --json run's report.txt.
func judgeRunReport(t *testing.T, r *run) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(onlyRun(t, r), "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestJudgeCheckFollowsNoPlantedLink: the judge as a check reads the workspace on the host,
// so a link the agent planted must never be followed there. A stylesheet linked to a host
// file that would paint the page red is left out (the screenshot is not red), and a page
// that is itself a link to a host file fails: it is not judged, and nothing is read through
// it.
func TestJudgeCheckFollowsNoPlantedLink(t *testing.T) {
	_, rubric, judgeScript := judgeFiles(t, "[[turn]]\ntext = \"score 7: fine\"\n")
	host := t.TempDir()
	canary := filepath.Join(host, "canary.css")
	os.WriteFile(canary, []byte("html, body { background: #ff0000 !important; min-height: 2000px }\n"), 0o644)
	check := "tare judge --rubric " + rubric + " --threshold 5 --script " + judgeScript + " --judge claude"
	for _, c := range []struct {
		name, turn, want string
		passed           bool
	}{
		{"stylesheet", `write = { path = "index.html", content = "<!doctype html><link rel=stylesheet href=style.css><h1>Hi</h1>" }
shell = "ln -s ` + canary + ` style.css"`, "judge score 7", true},
		{"page", `shell = "ln -s ` + canary + ` index.html"`, "not a regular file", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			project := t.TempDir()
			os.WriteFile(filepath.Join(project, "README.md"), []byte("# a page\n"), 0o644)
			build := filepath.Join(t.TempDir(), "build.toml")
			os.WriteFile(build, []byte("[[turn]]\ntext = \"Writing.\"\n"+c.turn+"\n\n[[turn]]\ntext = \"Done.\"\n"), 0o644)
			r := newRun(t, "").tare(t, "calibrate", "Make a page", "--side", "claude", "--runs", "1",
				"--script", build, "--project", project, "--check", check)
			f := judgeFinished(t, onlyRun(t, r))
			if f.Passed != c.passed || !strings.Contains(f.Detail, c.want) || f.Judge == nil {
				t.Fatalf("passed %v, detail %q, judge %+v; want passed %v and %q", f.Passed, f.Detail, f.Judge, c.passed, c.want)
			}
			if !c.passed {
				return
			}
			shot, err := os.Open(f.Judge.Screenshot)
			if err != nil {
				t.Fatal(err)
			}
			defer shot.Close()
			img, err := png.Decode(shot)
			if err != nil {
				t.Fatal(err)
			}
			if r, g, _, _ := img.At(5, 5).RGBA(); r > 0xf000 && g < 0x1000 {
				t.Errorf("the screenshot is red: the host stylesheet was read through the link")
			}
		})
	}
}

// judgeFinished is the one finished tail in a run's journal.
func judgeFinished(t *testing.T, dir string) journal.TailFinished {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, journal.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		var e journal.Event
		if json.Unmarshal([]byte(l), &e) == nil && e.TailFinished != nil {
			return *e.TailFinished
		}
	}
	t.Fatalf("no finished tail in %s", data)
	return journal.TailFinished{}
}

// noVerdictLines are the journal's lines of tails that ended with no verdict, for a failure's
// message: what the agent said when its tail was left out.
func noVerdictLines(dir string) string {
	data, _ := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
	var b strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"no-verdict"`) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
