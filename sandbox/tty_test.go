package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pty pair without making either side this process's
// controlling terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pts: %v", err)
	}
	return os.NewFile(uintptr(m), "ptmx"), s
}

// runTTYInspect runs Inspect in a room attached to a fresh pty (the pane's
// mode) and returns its view, written to the workspace.
func runTTYInspect(t *testing.T, mutate func([]string) []string) View {
	t.Helper()
	requireBwrap(t)
	ws := t.TempDir()
	master, slave := openPTY(t)
	r := rooted(Room{Workspace: ws, TTY: slave, Tare: testBinary(t), mutate: mutate})
	r.Argv = append([]string{TareBin}, append(InspectOptions{}.Args(), "--out", r.workDir()+"/tty.json")...)
	p, err := Start(t.Context(), r)
	slave.Close()
	if err != nil {
		master.Close()
		t.Fatalf("Start: %v", err)
	}
	// Drain the terminal until every holder of the slave is gone (EIO).
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	code, err := p.Wait()
	<-drained
	master.Close()
	if err != nil || code != 0 {
		t.Fatalf("tty room: exit %d, %v", code, err)
	}
	return readView(t, filepath.Join(ws, "tty.json"))
}

// TestRoomTTY (suite item 9): in a room whose stdio is a pty, TIOCSTI on
// that terminal fails with EPERM and /dev/tty does not open: --new-session
// leaves the room without a controlling terminal.
func TestRoomTTY(t *testing.T) {
	v := runTTYInspect(t, nil)
	report(t, "tty", checkTTY(v))
	sid, _ := unix.Getsid(0)
	t.Logf("TIOCSTI %s, /dev/tty %s (this test's getsid %d)", v.TIOCSTI, v.DevTTY, sid)
}

// TestRoomTTYForeignSession runs the two terminal tests again from a
// process whose session leader is outside its pid namespace, so getsid(0)
// is 0, as for a CI job or a container's process. A fresh pty is nobody's
// controlling terminal there too, and the room must still take it as its
// own: an earlier ownTerminal mistook the failed TIOCGSID (0) for "our
// session" and so left --new-session the only thing between the room and
// a controlling terminal.
func TestRoomTTYForeignSession(t *testing.T) {
	if os.Getenv("TARE_TEST_FOREIGN_SESSION") != "" {
		t.Skip("already inside the foreign session")
	}
	requireBwrap(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) not found: %v", err)
	}
	args := []string{"--pid", "--fork", "--mount-proc"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	args = append(args, testBinary(t), "-test.run", "^(TestRoomTTY|TestMutationNewSession)$", "-test.v", "-test.count=1")
	cmd := exec.CommandContext(t.Context(), unshare, args...)
	cmd.Env = append(os.Environ(), "TARE_TEST_FOREIGN_SESSION=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tty tests in a foreign session: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "getsid 0") {
		t.Fatalf("the child did not run with getsid 0:\n%s", out)
	}
	t.Logf("%s", out)
}
