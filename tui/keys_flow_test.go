package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine"
	"tare/engine/journal"
	"tare/workshop"
)

// realRun is a finished calibrate of the real claude CLI in its room, on tare's model
// server with script, in a state directory of its own: the run the app tests open.
func realRun(t *testing.T, script string, check string, runs int) (state, dir string) {
	t.Helper()
	needRooms(t)
	w := newJudgeWorld(t, judgeNoiseScript)
	path := filepath.Join(t.TempDir(), "script.toml")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# greeter\n"), 0o644)
	dir, _, err := engine.Calibrate(context.Background(), engine.CalibrateOptions{Prompt: "Look around", Sides: []journal.Side{{Key: "a", Agent: "claude"}},
		Check: check, Runs: runs, Jobs: 1, Project: project, Config: w.cfg, Script: path})
	if err != nil {
		t.Fatal(err)
	}
	return w.cfg.StateDir, dir
}

// liveRun starts a real calibrate of the real claude CLI in its room, on tare's model server
// with script, in a state directory of its own. done is closed once it ends; stop cancels
// it, as ctrl+c stops tare, and waits for that end.
func liveRun(t *testing.T, script string) (w judgeWorld, done <-chan struct{}, stop func()) {
	t.Helper()
	needRooms(t)
	w = newJudgeWorld(t, judgeNoiseScript)
	path := filepath.Join(t.TempDir(), "script.toml")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# slow\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	end := make(chan struct{})
	go func() {
		defer close(end)
		engine.Calibrate(ctx, engine.CalibrateOptions{Prompt: "Look around", Sides: []journal.Side{{Key: "a", Agent: "claude"}},
			Check: "true", Runs: 1, Jobs: 1, Project: project, Config: w.cfg, Script: path})
	}()
	return w, end, func() { cancel(); <-end }
}

// quickScript is one tool call and a last word.
const quickScript = "[[turn]]\nshell = \"cat README.md\"\n\n[[turn]]\ntext = \"Done.\"\n"

// footerOf is the footer line of a view: its last.
func footerOf(view string) string {
	lines := strings.Split(strings.TrimRight(view, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestEscGoesBackFromEitherPaneOfATail: on a real run's tail, esc goes back to the run from
// the Detail pane as from the tool calls, as in k9s and lazygit.
func TestEscGoesBackFromEitherPaneOfATail(t *testing.T) {
	needRooms(t)
	state, dir := realRun(t, quickScript, "true", 1)
	tm := newTestModel(t, state, newStub(), 160, 48)
	tm.send(openRunMsg{dir})
	for _, keys := range [][]string{{"esc"}, {"tab", "esc"}, {"tab", "tab", "esc"}} {
		tm.send(openTailMsg{dir, "a-0"})
		for _, k := range keys {
			tm.key(k)
		}
		if tm.page() != runPage {
			t.Fatalf("%s in the tail view: still on page %v, want the run:\n%s", strings.Join(keys, " then "), tm.page(), tm.View())
		}
	}
}

// TestFooterOffersOnlyKeysThatAct: on a real run whose tail passed, neither the tails pane's
// footer nor the tail view's offers to kill or retry it (both would only be refused), nor
// resume for a run that is not crashed; a failed tail's footer offers the retry.
func TestFooterOffersOnlyKeysThatAct(t *testing.T) {
	needRooms(t)
	state, dir := realRun(t, quickScript, "true", 1)
	tm := newTestModel(t, state, newStub(), 160, 48)
	tm.send(openRunMsg{dir})
	selectRow(t, tm.run.tails.t, "a-0")
	tm.Update(tickMsg(time.Now()))
	for _, where := range []string{"tails", "tail"} {
		if where == "tail" {
			tm.key("enter")
			if tm.page() != tailPage {
				t.Fatalf("enter did not open the tail:\n%s", tm.View())
			}
		}
		f := footerOf(tm.View())
		for _, no := range []string{"kill tail", "retry tail", "resume run"} {
			if strings.Contains(f, no) {
				t.Errorf("the %s footer of a passed tail offers %q: %s", where, no, f)
			}
		}
		if !strings.Contains(f, "open logs") {
			t.Errorf("the %s footer lost the keys that act: %s", where, f)
		}
	}

	state, dir = realRun(t, quickScript, "false", 1)
	tm = newTestModel(t, state, newStub(), 160, 48)
	tm.send(openRunMsg{dir})
	selectRow(t, tm.run.tails.t, "a-0")
	if f := footerOf(tm.View()); !strings.Contains(f, "retry tail") || strings.Contains(f, "kill tail") {
		t.Errorf("the footer of a failed tail: %s", f)
	}
}

// TestHelpShowsTheKeysOfTheViewYouAreIn: ? at home with the Writers pane lists the workshop's
// keys under the pane's title, and not the tail view's; ? on a real run lists the tails
// pane's find and compare, and not the Writers pane's.
func TestHelpShowsTheKeysOfTheViewYouAreIn(t *testing.T) {
	needRooms(t)
	state, dir := realRun(t, quickScript, "true", 1)
	if _, err := workshop.Prepare(filepath.Join("..", "demo", "workshop", "plan.toml"), filepath.Join(state, workshop.Dir, "exp")); err != nil {
		t.Fatal(err)
	}
	m := newModel(modelConfig{engine: newStub(), styles: asciiStyles(), now: time.Now, agents: []string{"claude"}, probes: true,
		workshop: true, stateDir: state})
	defer m.wf.close()
	tm := &testModel{model: m, t: t, w: newWatcher(state, nil, newStub().Alive, nil)}
	tm.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tm.pollNow()
	tm.key("?")
	help := tm.View()
	for _, want := range []string{"Writers", "run writer", "write by hand", "collect", "resume (quota/login)", "retry as new", "anonymize", "Runs", "delete run", "Probes", "attach agent"} {
		if !strings.Contains(help, want) {
			t.Errorf("? at home lacks %q:\n%s", want, help)
		}
	}
	for _, no := range []string{"kill tail", "changes", "beside marked"} {
		if strings.Contains(help, no) {
			t.Errorf("? at home lists the tail's %q:\n%s", no, help)
		}
	}
	tm.key("?")
	tm.send(openRunMsg{dir})
	tm.key("?")
	help = tm.View()
	for _, want := range []string{"Tails", "find", "compare", "kill tail", "sort"} {
		if !strings.Contains(help, want) {
			t.Errorf("? on the run lacks %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "write by hand") {
		t.Errorf("? on the run lists the Writers pane's keys:\n%s", help)
	}
}
