package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/demo"
)

// TestAppTerminalPaneInTmux: the app's terminal pane with a real agent (pi, attached offline
// from the attach form with the demo's model script). Resizing the terminal keeps pi's input
// line on screen, shrunk and grown again (pi is told: SIGWINCH reaches it in its room). q
// with pi alive asks first; n keeps it, y quits, and nothing is left behind.
func TestAppTerminalPaneInTmux(t *testing.T) {
	start := time.Now()
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	env := append(r.env(), "TERM=tmux-256color")
	x := startTmux(t, paths.Project, append(append([]string{"env", "-i"}, env...), tareBin)...)
	x.waitText(10*time.Second, "Probes", "Runs", "pi ")

	x.keys("BTab", "G") // back from the runs pane to the probes pane, its last agent: pi
	x.waitFor("pi selected", 5*time.Second, func(s string) bool { return strings.Contains(line(s, "pi "), "┃>") })
	x.keys("a")
	x.waitText(5*time.Second, "Attach pi", "> offline yes")
	x.keys("Tab")
	x.text(paths.Script)
	x.keys("C-s")
	x.waitText(2*time.Minute, "pi · attached · ctrl+] back to tare", "tare-model")
	x.text("hello from the pane")
	x.waitText(30*time.Second, "hello from the pane", "tare-model")

	// Shrunk: pi redraws for the smaller pane; its input line (and the footer under it) is
	// still on screen, not cut off below.
	if out, err := x.cmd("resize-window", "-t", "e2e", "-x", "100", "-y", "30").CombinedOutput(); err != nil {
		t.Fatalf("tmux resize-window: %v\n%s", err, out)
	}
	x.waitFor("pi's input line and footer in the 100x30 pane", 30*time.Second, func(s string) bool {
		rows := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(rows) <= 30 && strings.Contains(s, "hello from the pane") && strings.Contains(s, "tare-model") &&
			strings.Contains(s, "ctrl+] back to tare")
	})
	// Grown again: pi draws at the full width again (its footer's model name is right-aligned).
	if out, err := x.cmd("resize-window", "-t", "e2e", "-x", "160", "-y", "48").CombinedOutput(); err != nil {
		t.Fatalf("tmux resize-window: %v\n%s", err, out)
	}
	x.waitFor("pi's footer at the full width", 30*time.Second, func(s string) bool {
		l := line(s, "tare-model")
		return strings.Contains(s, "hello from the pane") && len([]rune(l)) > 0 && strings.Index(string([]rune(l)), "tare-model") > 120
	})

	// q with pi alive asks first; n keeps pi, y quits.
	x.keys("C-]")
	x.waitText(5*time.Second, "t terminal (pi)")
	x.keys("q")
	x.waitText(5*time.Second, "Quit tare?", "pi is still running in the terminal pane")
	x.keys("n")
	x.waitText(5*time.Second, "not quitting")
	x.keys("t")
	x.waitText(5*time.Second, "hello from the pane", "ctrl+] back to tare")
	x.keys("C-]")
	x.waitText(5*time.Second, "t terminal (pi)")
	x.keys("q")
	x.waitText(5*time.Second, "Quit tare?")
	x.keys("y")
	if code := x.exited(30 * time.Second); code != 0 {
		t.Errorf("the app exited %d after q, y", code)
	}
	x.kill()
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	t.Logf("the terminal pane test took %s", time.Since(start).Round(time.Second))
}

// TestAppWritersPaneInTmux: the app lists an experiment prepared in its state directory in
// the Writers pane; r on the pi writer, with the demo's writer script, runs it in a tare of
// its own (tare workshop run, detached), and the pane follows it to completed from that
// process; enter opens the report with the sizes withheld before the seal.
func TestAppWritersPaneInTmux(t *testing.T) {
	r := newRun(t, "")
	exp := filepath.Join(r.home, ".local", "state", "tare", "workshop", "exp")
	td := filepath.Join(repoDir(), "demo", "workshop")
	if r.tare(t, "workshop", "prepare", filepath.Join(td, "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: %s", r.stderr)
	}
	const pi = "pi-tare-model"
	wd := repoDir()
	env := append(r.env(), "TERM=tmux-256color")
	x := startTmux(t, wd, append(append([]string{"env", "-i"}, env...), tareBin)...)
	x.waitFor("the pi writer prepared", 10*time.Second, func(s string) bool { return strings.Contains(line(s, pi), "prepared") })
	x.keys("Tab")
	x.waitText(5*time.Second, "┏━ Writers")
	x.keys("G")
	x.waitFor("pi selected", 5*time.Second, func(s string) bool { return strings.Contains(line(s, pi), "┃> ") })
	x.keys("r")
	x.waitText(5*time.Second, "Run writer "+pi)
	x.text(filepath.Join(td, "writer.toml"))
	x.keys("C-s")
	x.waitFor("the pi writer completed", 2*time.Minute, func(s string) bool { return strings.Contains(line(s, pi), "completed") })
	x.keys("Enter")
	x.waitText(10*time.Second, "Report · exp", "withheld")
	x.keys("Escape")
	x.waitText(5*time.Second, "┏━ Writers")
	x.keys("q")
	if code := x.exited(30 * time.Second); code != 0 {
		t.Errorf("the app exited %d after q", code)
	}
	x.kill()
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
