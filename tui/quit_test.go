package tui

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	enginerun "tare/engine/run"
)

// TestQuitWithALiveRunSaysWhatGoesOn: q in the app while a real calibrate runs (the real
// claude CLI in its room, on tare's model server, waiting on the model) leaves the run
// going, and the app's last line says so, with the command that follows it.
func TestQuitWithALiveRunSaysWhatGoesOn(t *testing.T) {
	w, _, stop := liveRun(t, "[[turn]]\nshell = \"cat README.md\"\n\n[[turn]]\ndelay = \"120s\"\ntext = \"Done.\"\n")
	defer stop()

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
