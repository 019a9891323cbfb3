package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tare/sandbox/roomrelay"
)

// The test binary is also the tare binary inside the rooms it starts
// (Room.Tare = os.Executable()): TestMain runs roomrelay.Main, InspectMain or a
// test child when called that way, so the real code runs in real rooms.

const (
	childEnv  = "TARE_SANDBOX_TEST_CHILD"  // set: this process is a test child (lifecycle)
	markerEnv = "TARE_SANDBOX_TEST_MARKER" // the unique marker of a lifecycle child's room
	mutateEnv = "TARE_SANDBOX_TEST_MUTATE" // a mutation the lifecycle child applies
	wsEnv     = "TARE_SANDBOX_TEST_WS"     // the lifecycle child's workspace
	imageEnv  = "TARE_SANDBOX_TEST_IMAGE"  // the image root the lifecycle child roots its room in
)

// canaryEnvKey is set in this test process and must never reach a room.
const canaryEnvKey = "TARE_CANARY_SECRET"

var canaryEnvValue = "canary-env-" + randHex(8)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "relay":
			os.Exit(roomrelay.Main(os.Args[2:]))
		case "inspect":
			os.Exit(InspectMain(os.Args[2:]))
		case "check-bwrap":
			// Inside a room: report what CheckBwrap says about the bwrap there.
			if _, err := CheckBwrap(context.Background(), ""); err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
			fmt.Println("ok")
			os.Exit(0)
		}
	}
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Setenv(canaryEnvKey, canaryEnvValue)
	code := m.Run()
	removeImageRoot()
	os.Exit(code)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// testBinary is this test binary, bound at TareBin in every test room.
func testBinary(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("os.Executable: %v", err)
	}
	return exe
}

// needRooms skips t under -short: it starts bwrap rooms, seconds each on a busy machine.
func needRooms(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts bwrap rooms; skipped under -short")
	}
}

// requireBwrap is where a test that starts rooms begins: it skips under -short (needRooms),
// and otherwise fails (never skips) when bubblewrap is missing.
func requireBwrap(t testing.TB) {
	t.Helper()
	needRooms(t)
	if _, err := FindBwrap(""); err != nil {
		t.Fatalf("%v (the sandbox tests run real rooms)", err)
	}
}

// inspectRun is one room running Inspect.
type inspectRun struct {
	View    View
	Code    int
	Stderr  string
	Refused []string
	Log     string
}

// runInspect runs Inspect with o inside room r (Argv is replaced) and
// returns the decoded View. The room's stdout carries the JSON.
func runInspect(t testing.TB, r Room, o InspectOptions) inspectRun {
	t.Helper()
	requireBwrap(t)
	if r.Tare == "" {
		r.Tare = testBinary(t)
	}
	r.Argv = append([]string{TareBin}, o.Args()...)
	var stdout, stderr, log bytes.Buffer
	r.Stdout, r.Stderr = &stdout, &stderr
	if r.Log == nil {
		r.Log = &log
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, r)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	code, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v (stderr: %s)", err, stderr.String())
	}
	run := inspectRun{Code: code, Stderr: stderr.String(), Refused: p.Refused(), Log: log.String()}
	if code != 0 {
		t.Fatalf("inspect in the room exited %d: %s", code, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), &run.View); err != nil {
		t.Fatalf("decode the room's view: %v\nstdout: %q\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return run
}

// openCanaryFD opens a file without O_CLOEXEC, as C code or a careless
// syscall would: the descriptor must not reach the room.
func openCanaryFD(t *testing.T, path string) int {
	t.Helper()
	low, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open canary fd: %v", err)
	}
	// Above the descriptors Start hands bwrap (ExtraFiles from 3 on), which would replace
	// it in bwrap's table and hide the leak the sweep is there to stop.
	fd, err := unix.FcntlInt(uintptr(low), unix.F_DUPFD, 100)
	syscall.Close(low)
	if err != nil {
		t.Fatalf("dup canary fd: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// markerProcs lists the host pids (other than this one) whose command line
// holds marker.
func markerProcs(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	self := os.Getpid()
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// waitGone polls until no process holds marker or the deadline passes, and
// returns the survivors with their command lines.
func waitGone(marker string, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		pids := markerProcs(marker)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var s []string
			for _, pid := range pids {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				s = append(s, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(b), "\x00", " ")))
			}
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killMarker ends every process holding marker (cleanup after a mutation
// that lets a room outlive its parent).
func killMarker(marker string) {
	for _, pid := range markerProcs(marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// runRoom starts r (Tare defaults to this test binary) and returns the
// command's exit code.
func runRoom(t *testing.T, r Room) int {
	t.Helper()
	requireBwrap(t)
	if r.Tare == "" {
		r.Tare = testBinary(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, r)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	code, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return code
}

// readView decodes a View that Inspect wrote with --out.
func readView(t *testing.T, path string) View {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read view: %v", err)
	}
	var v View
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode view %s: %v", path, err)
	}
	return v
}
