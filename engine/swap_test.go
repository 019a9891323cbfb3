package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
)

func TestParseCuts(t *testing.T) {
	if c, err := ParseCuts("0, 0.5,1"); err != nil || len(c) != 3 || c[1] != 0.5 {
		t.Fatalf("0,0.5,1: %v %v", c, err)
	}
	for in, want := range map[string]string{
		"0,1.5":   "outside [0, 1]",
		"-0.1":    "outside [0, 1]",
		"0.5,0.2": "does not come after",
		"0,0":     "does not come after",
		"0,half":  "not a number",
	} {
		if _, err := ParseCuts(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--cuts %s: %v, want %q", in, err, want)
		}
	}
}

// TestSwapOnTheDemoShowsAStateEffectAndNoModelEffect: real Claude Code and Codex on tare's
// model server, the demo's swap task, where a settings file one original adds breaks
// greet.sh for whoever continues, and both agents follow one script. At the last cut the
// state effect is distinguishable from zero and the model effect is not, and the report says
// so in words; at the first cut (both workspaces the untouched project) there is no state
// effect. Then a kill of the finished run's journal's last tails is finished by tare resume
// without running the others again.
func TestSwapOnTheDemoShowsAStateEffectAndNoModelEffect(t *testing.T) {
	needRooms(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := testConfig(t, []string{"claude", "codex"})
	dir, res, err := Swap(ctx, SwapOptions{RecordOptions: RecordOptions{Prompt: demo.Task, Project: paths.Project, Check: demo.Check,
		CheckTimeout: time.Minute, AgentTimeout: 2 * time.Minute, Out: filepath.Join(t.TempDir(), "swap"), Config: cfg,
		Script: paths.SwapScript, Seed: demo.SwapSeed},
		A: journal.Side{Agent: "claude"}, B: journal.Side{Agent: "codex"}, Cuts: []float64{0, 1}, Tails: 3, Jobs: 3, Handoff: "trail"})
	if err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if len(res.Cuts) != 2 {
		t.Fatalf("%d cuts, want 2\n%s", len(res.Cuts), report)
	}
	effects := func(c SwapCut) map[string]SwapEffect {
		m := map[string]SwapEffect{}
		for _, e := range c.Effects {
			m[e.Name] = e
		}
		return m
	}
	for _, c := range res.Cuts {
		for _, cell := range c.Cells {
			if cell.Verdicts != 3 {
				t.Errorf("cut %g, workspace %s, agent %s, %s: %d verdicts of 3\n%s", c.Cut, cell.Workspace, cell.Agent, cell.How, cell.Verdicts, report)
			}
		}
	}
	first, last := effects(res.Cuts[0]), effects(res.Cuts[1])
	if first["state"].Significant || !res.Cuts[0].Control {
		t.Errorf("cut 0: a state effect between two untouched projects, or the cut not a control\n%s", report)
	}
	if !last["state"].Significant || last["state"].Diff >= 0 {
		t.Errorf("last cut: state effect %+v, want a's (broken) workspace distinguishably below b's\n%s", last["state"], report)
	}
	if last["model"].Significant {
		t.Errorf("last cut: a model effect %+v where both agents follow one script\n%s", last["model"], report)
	}
	if !strings.Contains(string(report), "in words  the state effect is distinguishable from zero; the others are not") || !strings.Contains(string(report), "Bonferroni") {
		t.Errorf("the report does not say it in words:\n%s", report)
	}

	// tare resume of a finished swap runs nothing again.
	before := len(readJournalT(t, dir))
	out, err := Resume(ctx, ResumeOptions{Dir: dir, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var started int
	for _, e := range readJournalT(t, dir)[before:] {
		if e.TailStarted != nil {
			started++
		}
	}
	if started != 0 || !strings.Contains(out, "state effect") {
		t.Errorf("resuming a finished swap started %d tails; report:\n%s", started, out)
	}
}

func readJournalT(t *testing.T, dir string) []journal.Event {
	t.Helper()
	ev, err := journal.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestSwapOverTwoPairsOfOriginals: real Codex CLIs on tare's model server, --originals 2:
// each agent records two originals (a/, b/, a2/, b2/), every pair is swapped as one swap
// (the second pair's tails named o2-...), the cells pool both pairs' verdicts, the report
// speaks of the agents and says two pairs are too few to call anything, and tare resume of
// the finished run starts nothing again.
func TestSwapOverTwoPairsOfOriginals(t *testing.T) {
	needRooms(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := testConfig(t, []string{"codex"})
	dir, res, err := Swap(ctx, SwapOptions{RecordOptions: RecordOptions{Prompt: demo.Task, Project: paths.Project, Check: demo.Check,
		CheckTimeout: time.Minute, AgentTimeout: 2 * time.Minute, Out: filepath.Join(t.TempDir(), "swap"), Config: cfg,
		Script: paths.SwapScript, Seed: demo.SwapSeed},
		A: journal.Side{Agent: "codex"}, B: journal.Side{Agent: "codex"}, Cuts: []float64{1}, Tails: 1, Jobs: 3, Handoff: "trail", Originals: 2})
	if err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	for _, name := range []string{"a", "b", "a2", "b2"} {
		if _, err := journal.ReadRecording(filepath.Join(dir, name)); err != nil {
			t.Errorf("original %s: %v\n%s", name, err, report)
		}
	}
	if res.Originals != 2 || len(res.Cuts) != 1 || len(res.Cuts[0].StepsA) != 2 {
		t.Fatalf("originals %d, cuts %+v, want two pairs at one cut\n%s", res.Originals, res.Cuts, report)
	}
	for _, cell := range res.Cuts[0].Cells {
		if cell.Tails != 2 {
			t.Errorf("workspace %s, agent %s, %s: %d tails, want one from each pair\n%s", cell.Workspace, cell.Agent, cell.How, cell.Tails, report)
		}
	}
	st := journal.Replay(dir, readJournalT(t, dir))
	if _, ok := st.Tails["o2-c0-ab-h-0"]; !ok {
		t.Errorf("no tail o2-c0-ab-h-0 (the second pair's): %v", st.Order)
	}
	for _, want := range []string{"estimand  2 original runs per agent", "2 pairs of originals are too few to call any effect"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	before := len(readJournalT(t, dir))
	if _, err := Resume(ctx, ResumeOptions{Dir: dir, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	for _, e := range readJournalT(t, dir)[before:] {
		if e.TailStarted != nil {
			t.Errorf("resuming a finished swap of two pairs started tail %s", e.TailStarted.ID)
		}
	}
}
