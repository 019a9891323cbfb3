package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildHelper builds tare-room (./cmd/tare-room), as scripts/setup does beside tare: static.
func buildHelper(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), HelperName)
	cmd := exec.Command("go", "build", "-o", bin, "tare/cmd/tare-room")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build tare-room: %v\n%s", err, out)
	}
	return bin
}

// TestRelayRunsFromHelper: with Room.Helper, the room's command runs under tare-room's
// relay (bound read-only at HelperBin), lifeline and relays included, not under tare.
func TestRelayRunsFromHelper(t *testing.T) {
	requireBwrap(t)
	var out, errb bytes.Buffer
	r := Room{Workspace: t.TempDir(), Tare: testBinary(t), Helper: buildHelper(t), Stdout: &out, Stderr: &errb,
		Relays: []Relay{{Port: 18931, Upstream: "127.0.0.1:9"}},
		Argv:   []string{"/bin/sh", "-c", `tr '\0' ' ' </proc/$PPID/cmdline; echo`}}
	p, err := Start(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait()
	if err != nil || code != 0 {
		t.Fatalf("room: exit %d, %v: %s", code, err, errb.String())
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(line, HelperBin+" relay --lifeline ") || !strings.Contains(line, " --owner "+Owner()+" ") ||
		!strings.Contains(line, " --listen 127.0.0.1:18931=") {
		t.Fatalf("the room's command runs under %q, want %s relay with its lifeline, owner and listener", line, HelperBin)
	}
}

// TestHelperOlderThanTareIsNotUsed: a tare-room older than the running tare (bin/tare
// rebuilt, bin/tare-room not) is passed over, so rooms never run a relay that may not speak
// this tare's command line; one built after it is used.
func TestHelperOlderThanTareIsNotUsed(t *testing.T) {
	exe := testBinary(t)
	helper := buildHelper(t)
	if !sameBuild(exe, helper) {
		t.Fatal("a tare-room built after the running binary is passed over")
	}
	st, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	old := st.ModTime().Add(-time.Minute)
	if err := os.Chtimes(helper, old, old); err != nil {
		t.Fatal(err)
	}
	if sameBuild(exe, helper) {
		t.Fatal("a tare-room older than the running binary is used")
	}
}
