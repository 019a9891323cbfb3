package tui

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tare/engine"
	"tare/engine/journal"
	enginerun "tare/engine/run"
)

// TestQuitWithALiveRunSaysWhatGoesOn: q in the app while a real calibrate runs (the real
// claude CLI in its room, on tare's model server, waiting on the model) leaves the run
// going, and the app's last line says so, with the command that follows it.
func TestQuitWithALiveRunSaysWhatGoesOn(t *testing.T) {
	w := newJudgeWorld(t, judgeNoiseScript)
	script := filepath.Join(t.TempDir(), "slow.toml")
	os.WriteFile(script, []byte("[[turn]]\nshell = \"cat README.md\"\n\n[[turn]]\ndelay = \"120s\"\ntext = \"Done.\"\n"), 0o644)
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# slow\n"), 0o644)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan string, 1)
	go func() {
		dir, _, _ := engine.Calibrate(ctx, engine.CalibrateOptions{Prompt: "Look around", Sides: []journal.Side{{Key: "a", Agent: "claude"}},
			Check: "true", Runs: 1, Jobs: 1, Project: project, Config: w.cfg, Script: script})
		done <- dir
	}()
	defer func() { stop(); <-done }()

	scr := newScreen(t, 250, 40)
	quit := make(chan error, 1)
	go func() {
		quit <- Run(context.Background(), Options{StateDir: w.cfg.StateDir, Engine: newStub(), Agents: []string{"claude"}, In: scr.tty, Out: scr.tty,
			LogFile: filepath.Join(t.TempDir(), "tui.log")})
	}()
	runs, _ := filepath.Glob(filepath.Join(w.cfg.StateDir, "calibrate", "*"))
	for len(runs) != 1 {
		time.Sleep(50 * time.Millisecond)
		runs, _ = filepath.Glob(filepath.Join(w.cfg.StateDir, "calibrate", "*"))
	}
	scr.waitFor(t, filepath.Base(runs[0]), "live")
	scr.press(t, "q")
	if err := <-quit; err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, "tare: 1 run goes on in the background: tare watch "+runs[0]+"; tare shows it again")
	if !enginerun.Alive(runs[0]) {
		t.Errorf("q stopped the run")
	}
}
