package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/config"
	"tare/engine"
	"tare/engine/journal"
	"tare/engine/probe"
)

// TestMain lets the rooms the real engine starts in these tests (the render room, the
// judge's room, the probe's) run this test binary as /opt/tare/tare, as tare's main.go does.
func TestMain(m *testing.M) {
	if code, ok := probe.InRoom(os.Args[1:]); ok {
		os.Exit(code)
	}
	if v := os.Getenv(manualWriterEnv); v != "" {
		os.Exit(manualWriterMain(v)) // see writers_test.go
	}
	os.Exit(m.Run())
}

// needRooms skips t under -short: it runs the real engine, whose rooms start the agent CLIs
// (and Chromium for a judge), seconds to minutes on a busy machine.
func needRooms(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts rooms; skipped under -short")
	}
}

// judgeWorld is what a judge test runs on: a config naming this checkout's pinned claude, a
// state folder of the test's own, a page, a rubric on 1-10 and a judge script.
type judgeWorld struct {
	cfg                  *config.Config
	page, rubric, script string
}

func newJudgeWorld(t *testing.T, script string) judgeWorld {
	t.Helper()
	cfg, err := config.Parse(nil, "none")
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = t.TempDir()
	wd, _ := os.Getwd()
	cfg.Agents["claude"] = config.Agent{Bin: filepath.Join(filepath.Dir(wd), "agents", "claude", "node_modules", ".bin", "claude")}
	dir := t.TempDir()
	w := judgeWorld{cfg: cfg, page: filepath.Join(dir, "site"), rubric: filepath.Join(dir, "rubric.md"), script: filepath.Join(dir, "judge.toml")}
	os.MkdirAll(w.page, 0o755)
	for name, text := range map[string]string{filepath.Join(w.page, "index.html"): "<!doctype html><h1>Todo</h1><p>Buy milk</p>",
		w.rubric: "Is the page clear?\n\nscale: 1-10\n", w.script: script} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// judgeNoiseScript gives a score of 3 or 8, drawn anew for each judgement.
const judgeNoiseScript = `
[[turn]]
  [[turn.branch]]
  p = 0.5
  text = "score 3: cramped"
  [[turn.branch]]
  p = 0.5
  text = "score 8: clear"
`

// TestJudgeNoiseRunShowsEachPagesSpread: a real judge-noise run (real Chromium, the real
// claude CLI on tare's model server) is a run the app lists and opens; its view draws the
// page's scores as a strip on the rubric's scale with min, median and max as the engine
// computed them, and the verdict on the threshold the command line gives. A judgement's view
// shows its score, the threshold, the verdict and the reason, and s shows the screenshot.
func TestJudgeNoiseRunShowsEachPagesSpread(t *testing.T) {
	needRooms(t)
	w := newJudgeWorld(t, judgeNoiseScript)
	r, err := engine.LoadRubric(w.rubric)
	if err != nil {
		t.Fatal(err)
	}
	threshold := 5.0
	rep, err := engine.Judge(context.Background(), engine.JudgeOptions{Dirs: []string{w.page}, Rubric: r, Judge: "claude", Times: 4, Jobs: 2,
		Script: w.script, Seed: 11, Config: w.cfg, Kind: "judge-noise", Threshold: &threshold})
	if err != nil {
		t.Fatal(err)
	}
	sp := rep.Pages[0].Spread()
	tm := newTestModel(t, w.cfg.StateDir, newStub(), 120, 30)
	if _, ok := tm.env.store.runs[rep.Out]; !ok {
		t.Fatalf("the app does not list the judge-noise run %s: %v", rep.Out, tm.env.store.order)
	}
	tm.send(openRunMsg{rep.Out})
	view := tm.View()
	row := line(view, "p1 ")
	for _, want := range []string{"1 ", "●", " 10 ", fmt.Sprintf("%d/4 scored", len(sp.Scores)), fmt.Sprintf("%d–%g–%d", sp.Min, sp.Median, sp.Max)} {
		if !strings.Contains(row, want) {
			t.Errorf("the page's row lacks %q: %q\n%s", want, row, view)
		}
	}
	// 4 judgements never clear a threshold at the default tolerance: refused inside the
	// page's range, not cleared outside it.
	verdict := "threshold 5 not cleared: the flip rate of p1"
	if len(rep.NoisyPages(threshold)) > 0 {
		verdict = "threshold 5 refused"
	}
	if strings.Contains(view, "cleared: every page") {
		t.Errorf("4 judgements clear the threshold:\n%s", view)
	}
	if !strings.Contains(view, verdict) {
		t.Errorf("the view lacks the verdict %q:\n%s", verdict, view)
	}
	// Each judgement is a row whose status is its score against the threshold.
	j := rep.Pages[0].Judgements[0]
	want := fmt.Sprintf("%d≥5 passed", *j.Score)
	if *j.Score < 5 {
		want = fmt.Sprintf("%d<5 failed", *j.Score)
	}
	if !strings.Contains(line(view, "p1-1 "), want) {
		t.Errorf("judgement p1-1 (score %d) lacks %q:\n%s", *j.Score, want, view)
	}
	tm.send(openTailMsg{rep.Out, "p1-1"})
	tm.key("s")
	view = tm.View()
	if !strings.Contains(view, fmt.Sprintf("judge: score %d on 1-10 · threshold 5: ", *j.Score)) || !strings.Contains(view, j.Reason) {
		t.Errorf("the judgement's view lacks its score, threshold and reason %q:\n%s", j.Reason, view)
	}
	if !strings.Contains(tm.status, rep.Pages[0].Screenshot) {
		t.Errorf("s did not show the screenshot path %s: %q", rep.Pages[0].Screenshot, tm.status)
	}
}

// TestJudgeCheckScoresShowWherePassFailDoes: a real calibrate whose check is tare's judge;
// the tails table shows each tail's score against the threshold where pass/fail is, and a
// tail's view the judge's score, threshold, verdict and reason, with its screenshot on s.
func TestJudgeCheckScoresShowWherePassFailDoes(t *testing.T) {
	needRooms(t)
	w := newJudgeWorld(t, judgeNoiseScript)
	build := filepath.Join(t.TempDir(), "build.toml")
	os.WriteFile(build, []byte("[[turn]]\ntext = \"Writing.\"\nwrite = { path = \"index.html\", content = \"<h1>Hi</h1>\" }\n\n[[turn]]\ntext = \"Done.\"\n"), 0o644)
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# a page\n"), 0o644)
	dir, _, err := engine.Calibrate(context.Background(), engine.CalibrateOptions{Prompt: "Make a page", Sides: []journal.Side{{Key: "a", Agent: "claude"}},
		Check: "tare judge --rubric " + w.rubric + " --threshold 5 --script " + w.script + " --judge claude", Runs: 2, Jobs: 2,
		Project: project, Config: w.cfg, Script: build})
	if err != nil {
		t.Fatal(err)
	}
	tm := newTestModel(t, w.cfg.StateDir, newStub(), 120, 30)
	tm.send(openRunMsg{dir})
	view := tm.View()
	st := tm.env.store.run(dir).state
	for _, id := range []string{"a-0", "a-1"} {
		ts := st.Tails[id]
		if ts == nil || ts.Judge == nil || ts.Judge.Score == nil {
			t.Fatalf("tail %s has no judge's score: %+v", id, ts)
		}
		if cell := statusCell(ts).text; !strings.Contains(line(view, id+" "), cell) || !strings.HasPrefix(cell, fmt.Sprint(*ts.Judge.Score)) {
			t.Errorf("tail %s: row lacks its score %q:\n%s", id, cell, view)
		}
	}
	ts := st.Tails["a-0"]
	tm.send(openTailMsg{dir, "a-0"})
	tm.key("s")
	view = tm.View()
	if want := fmt.Sprintf("judge: score %d on 1-10 · threshold 5: %s — %s", *ts.Judge.Score, ts.Status, ts.Judge.Reason); !strings.Contains(view, want) {
		t.Errorf("the tail's view lacks %q:\n%s", want, view)
	}
	if ts.Judge.Screenshot == "" || !strings.Contains(tm.status, ts.Judge.Screenshot) {
		t.Errorf("s did not show the screenshot path %q: %q", ts.Judge.Screenshot, tm.status)
	}
}

// line is the first line of view holding sub, or "".
func line(view, sub string) string {
	for _, l := range strings.Split(view, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
