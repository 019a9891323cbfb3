package capsule

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// needRooms skips t under -short: it starts a bubblewrap room. Without -short a missing
// bwrap still fails the test.
func needRooms(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a bwrap room; skipped under -short")
	}
}

// TestSnapInRoom runs `tare snap` where it runs for real: inside a bubblewrap room as uid
// 1000, the workspace bound at /work and the store at /tare-run, fed the hook JSON on stdin
// (this test binary plays the tare binary at /opt/tare/tare). The room's argv follows
// SANDBOX.md in the parts that matter here (user namespace, bind mounts, read-only root).
func TestSnapInRoom(t *testing.T) {
	needRooms(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatalf("bwrap not found (%v): install it with `apt-get install bubblewrap`", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	write(t, filepath.Join(ws, "hello.txt"), "hello\n", 0o644)
	write(t, filepath.Join(ws, "bin/run"), "#!/bin/sh\n", 0o755)
	if err := os.Mkdir(filepath.Join(ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../hello.txt", filepath.Join(ws, "bin/link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	// In the room: the first snap from the hook input, an edit, a second snap with --id.
	script := `/opt/tare/tare --store /tare-run --work /work &&
echo changed >> /work/hello.txt && mkdir /work/made-in-room &&
/opt/tare/tare --store /tare-run --work /work --id toolu_second </dev/null && id -u`
	cmd := exec.Command(bwrap,
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
		"--hostname", "room", "--uid", "1000", "--gid", "1000", "--cap-drop", "ALL",
		"--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "TARE_TEST_SNAPMAIN", "1",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
		"--proc", "/proc", "--dev", "/dev",
		"--ro-bind", self, "/opt/tare/tare",
		"--bind", ws, "/work", "--chdir", "/work", "--bind", store, "/tare-run",
		"--remount-ro", "/",
		"--", "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	hook, err := os.ReadFile("testdata/claude_posttooluse.json")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = bytes.NewReader(hook)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("room: %v\nstdout %q\nstderr %q", err, stdout.String(), stderr.String())
	}
	if strings.TrimSpace(stdout.String()) != "1000" || stderr.Len() > 0 {
		t.Fatalf("stdout %q (want only the uid, 1000: tare snap prints nothing), stderr %q", stdout.String(), stderr.String())
	}

	s, err := Open(store)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("capsules %+v, %v", list, err)
	}
	if list[0].Name() != "0000-toolu_7b03aaba8f5d4b33b0e2edfd" || list[1].Name() != "0001-toolu_second" {
		t.Fatalf("capsules %s, %s", list[0].Name(), list[1].Name())
	}
	if len(list[1].Unreadable) != 1 || list[1].Unreadable[0].Path != "pipe" {
		t.Fatalf("unreadable %+v", list[1].Unreadable)
	}
	changes, err := s.Diff(list[0], list[1])
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, string(c.Kind)+" "+c.Path)
	}
	if strings.Join(got, ", ") != "modified hello.txt, added made-in-room" {
		t.Fatalf("diff %v", got)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	if err := s.Restore(context.Background(), list[1], dest); err != nil {
		t.Fatal(err)
	}
	want := scan(t, ws)
	delete(want, "pipe")
	sameTree(t, want, scan(t, dest))
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}
