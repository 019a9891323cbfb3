package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestAttachedGemini: `tare gemini --offline` proves its room clean, starts Gemini CLI on
// the terminal in it, and a prompt typed there is answered by tare's model server (probe
// mode); the agent's own exit ends tare with nothing left behind.
func TestAttachedGemini(t *testing.T) {
	r := newRun(t, "")
	cmd := exec.Command(tareBin, "gemini", "--offline", "--project", t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "XDG_CONFIG_HOME=" + r.config,
		"XDG_STATE_HOME=" + filepath.Join(r.home, "state"), "TMPDIR=" + r.tmp, "TERM=xterm-256color", "LANG=C.UTF-8"}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	scr := &screen{}
	go func() { _, _ = io.Copy(scr, tty) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
	})
	scr.waitFor(t, "tare: 0.00", 1, 2*time.Minute)
	scr.waitFor(t, "Type your message", 1, time.Minute) // Gemini CLI's input box: ready
	// Text and Enter in one write are a paste to Gemini CLI (the Enter a newline): Enter goes
	// once the input box shows the text.
	io.WriteString(tty, "hello from the test")
	scr.waitFor(t, "hello from the test", 1, time.Minute)
	io.WriteString(tty, "\r")
	scr.waitFor(t, "tare probe: recorded.", 1, time.Minute)
	// Ctrl-D on an empty input box asks to be pressed again, and then Gemini CLI exits.
	io.WriteString(tty, "\x04")
	scr.waitFor(t, "again to exit", 1, time.Minute)
	io.WriteString(tty, "\x04")
	if code := exitCode(t, cmd, time.Minute); code != 0 {
		t.Errorf("tare exited %d after the agent exited 0", code)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
