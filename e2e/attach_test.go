package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// screen collects what a program writes to its pty.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.buf.String(), sub)
}

// waitFor waits until sub has appeared n times on the screen, failing after the deadline.
func (s *screen) waitFor(t *testing.T, sub string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for s.count(sub) < n {
		if time.Now().After(deadline) {
			s.mu.Lock()
			tail := s.buf.String()
			s.mu.Unlock()
			if len(tail) > 3000 {
				tail = tail[len(tail)-3000:]
			}
			t.Fatalf("%q did not appear %d times within %s; screen ends:\n%s", sub, n, within, tail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startAttached runs `tare pi --offline` on a pty, as a person would in a terminal, and
// waits until pi is ready for input.
func startAttached(t *testing.T) (*exec.Cmd, *os.File, *screen, *run) {
	t.Helper()
	r := newRun(t, "")
	cmd := exec.Command(tareBin, "pi", "--offline", "--project", t.TempDir())
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
	scr.waitFor(t, "tare-model", 1, time.Minute) // pi's footer: the editor is ready
	return cmd, tty, scr, r
}

func exitCode(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("tare did not exit within %s", within)
		return -1
	}
}

// TestAttachedCtrlCBelongsToTheAgent: in an attached room, Ctrl-C reaches the agent (pi
// clears its editor) and tare stays; a SIGTERM to tare then ends it and removes the room.
func TestAttachedCtrlCBelongsToTheAgent(t *testing.T) {
	cmd, tty, scr, r := startAttached(t)
	io.WriteString(tty, "hello from the test\r")
	scr.waitFor(t, "tare probe: recorded.", 1, time.Minute)

	io.WriteString(tty, "this line is cleared")
	scr.waitFor(t, "this line is cleared", 1, 30*time.Second)
	io.WriteString(tty, "\x03") // Ctrl-C: pi's, not tare's
	io.WriteString(tty, "second message\r")
	scr.waitFor(t, "tare probe: recorded.", 2, time.Minute)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd, 30*time.Second); code == 0 {
		t.Errorf("tare exited 0 after SIGTERM")
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind after SIGTERM: %v", left)
	}
}

// TestAttachedExitIsTheAgents: the agent's own exit (Ctrl-D in pi) ends tare with the
// agent's exit code and nothing left behind.
func TestAttachedExitIsTheAgents(t *testing.T) {
	cmd, tty, _, r := startAttached(t)
	io.WriteString(tty, "\x04")
	if code := exitCode(t, cmd, time.Minute); code != 0 {
		t.Errorf("tare exited %d after the agent exited 0", code)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestAttachedResizeReachesTheAgent: when the operator's terminal changes size, the agent in
// the room is told (SIGWINCH) and redraws for the new size, keeping its input line on screen.
// The room's command is in a session of its own, so the kernel's own SIGWINCH never reaches it.
func TestAttachedResizeReachesTheAgent(t *testing.T) {
	_, tty, scr, _ := startAttached(t)
	before := scr.count("tare-model")
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 20, Cols: 70}); err != nil {
		t.Fatal(err)
	}
	// pi redraws its footer (which names the model) only when it learns the new size.
	scr.waitFor(t, "tare-model", before+1, time.Minute)
}
