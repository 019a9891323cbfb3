package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/engine"
	"tare/engine/journal"
)

// sideScript writes a file, then runs second (the step where two runs part), then ends.
func sideScript(t *testing.T, second string) string {
	path := filepath.Join(t.TempDir(), "side.toml")
	text := "[[turn]]\ntext = \"Writing.\"\nwrite = { path = \"notes.txt\", content = \"one\\n\" }\n\n" +
		"[[turn]]\nshell = \"" + second + "\"\n\n[[turn]]\ntext = \"Done.\"\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSideBySideMarksTheFirstDivergence: two real calibrates (the real claude CLI on tare's
// model server) whose agents write the same file and then run different commands. In the
// app, m marks a tail of the first run, = on a tail of the second lays them side by side:
// step 1 is the same call on both, step 2 is marked as the first divergence with both
// commands, and each tail's workspace change is under the table. f in the tails pane finds a
// tool input across the run's tails.
func TestSideBySideMarksTheFirstDivergence(t *testing.T) {
	needRooms(t)
	w := newJudgeWorld(t, judgeNoiseScript)
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# notes\n"), 0o644)
	calibrate := func(second string) string {
		dir, _, err := engine.Calibrate(context.Background(), engine.CalibrateOptions{Prompt: "Take notes", Sides: []journal.Side{{Key: "a", Agent: "claude"}},
			Check: "test -f notes.txt", Runs: 1, Jobs: 1, Project: project, Config: w.cfg, Script: sideScript(t, second)})
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	first, second := calibrate("cat notes.txt"), calibrate("wc -l notes.txt")
	tm := newTestModel(t, w.cfg.StateDir, newStub(), 140, 40)
	tm.send(openRunMsg{first})
	selectRow(t, tm.run.tails.t, "a-0")
	tm.key("m")
	tm.send(openRunMsg{second})
	selectRow(t, tm.run.tails.t, "a-0")
	tm.key("=")
	if tm.page() != readerPage {
		t.Fatalf("= did not open the side-by-side view (status %q):\n%s", tm.status, tm.View())
	}
	view := tm.View()
	if !strings.Contains(view, "diverge at step 2") {
		t.Errorf("the title does not name step 2 as the divergence:\n%s", view)
	}
	one := line(view, "  1 ")
	if !strings.Contains(one, "notes.txt") || !strings.Contains(one, " = ") || strings.Contains(one, "▶") {
		t.Errorf("step 1 is not shown as the same write on both tails: %q\n%s", one, view)
	}
	two := line(view, "▶ ")
	if !strings.Contains(two, "  2 ") || !strings.Contains(two, "cat notes.txt") || !strings.Contains(two, "wc -l notes.txt") {
		t.Errorf("step 2 is not marked as the divergence with both commands: %q\n%s", two, view)
	}
	full := tm.reader.vp.View()
	tm.reader.vp.GotoBottom()
	full += tm.reader.vp.View()
	if !strings.Contains(full, "+one") {
		t.Errorf("the tails' workspace changes (notes.txt added) are not shown:\n%s", full)
	}

	tm.key("esc")
	tm.key("f")
	tm.typeText("wc -l")
	tm.key("enter")
	if tm.page() != readerPage {
		t.Fatalf("f did not open what it found (status %q):\n%s", tm.status, tm.View())
	}
	view = tm.View()
	if hit := line(view, "a-0 "); !strings.Contains(hit, "step 2") || !strings.Contains(hit, "input") || !strings.Contains(hit, "wc -l notes.txt") {
		t.Errorf("the search did not find the tool input of step 2: %q\n%s", hit, view)
	}
}
