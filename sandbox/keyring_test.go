package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel keyrings, a leak SANDBOX.md lists under identity: bwrap
// passes the caller's session keyring into the room, so a key the operator's
// login session holds (a token, a Kerberos ticket) could be read with
// keyctl, payload and all, and /proc/keys lists every key of the same uid.
// The room has three defences: a fresh session keyring (Start joins one on
// the thread that forks bwrap), the seccomp filter refusing keyctl, and
// /proc/keys masked. The test plants a canary key in a session keyring of
// its own and runs the room from a child process that holds it.

const canaryKeyEnv = "TARE_TEST_CANARY_KEY"

// TestRoomKeyring runs TestKeyringInChild in a child process whose session
// keyring holds a canary key. The keyring is anonymous and joined only by a
// locked thread that ends with this test: the operator's own session keyring
// is never touched.
func TestRoomKeyring(t *testing.T) {
	if os.Getenv(canaryKeyEnv) != "" {
		t.Skip("already the child")
	}
	requireBwrap(t)
	desc := fmt.Sprintf("tare-canary-key-%d", time.Now().UnixNano())
	type result struct {
		out []byte
		err error
	}
	ch := make(chan result, 1)
	exe := testBinary(t)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its keyring
		if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
			ch <- result{err: fmt.Errorf("join a fresh session keyring: %v", e)}
			return
		}
		if _, err := unix.AddKey("user", desc, []byte("tare-canary-payload"), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
			ch <- result{err: fmt.Errorf("add the canary key: %v", err)}
			return
		}
		cmd := exec.Command(exe, "-test.run", "^TestKeyringInChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), canaryKeyEnv+"="+desc)
		out, err := cmd.CombinedOutput()
		ch <- result{out, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("keyring tests in the child: %v\n%s", r.err, r.out)
	}
	if !strings.Contains(string(r.out), "--- PASS: TestKeyringInChild") {
		t.Fatalf("the child did not run TestKeyringInChild:\n%s", r.out)
	}
	t.Logf("%s", r.out)
}

// TestKeyringInChild is TestRoomKeyring's child half: the control first
// (this process sees the canary both ways), then the room and its
// mutations.
func TestKeyringInChild(t *testing.T) {
	desc := os.Getenv(canaryKeyEnv)
	if desc == "" {
		t.Skip("run by TestRoomKeyring, from a session keyring holding a canary key")
	}
	keys, res := readSessionKeys()
	if !holdsKey(keys, desc) {
		t.Fatalf("control: keyctl here does not see the canary (%s): %v", res, keys)
	}
	if !holdsKey(readLines("/proc/keys"), desc) {
		t.Fatalf("control: /proc/keys here does not list the canary")
	}
	both := func(a []string) []string { return removeFlag("--seccomp")(a) }
	cases := []struct {
		name     string
		apply    func(r *Room)
		wantLeak bool
	}{
		{"the room", nil, false},
		{"without --seccomp: the fresh keyring holds alone", func(r *Room) { r.mutate = both }, false},
		{"without --seccomp or the fresh keyring", func(r *Room) { r.mutate, r.keepKeys = both, true }, true},
		{"without the /proc/keys mask", func(r *Room) {
			r.mutate = removeSeq("--ro-bind", "/dev/null", "/proc/keys")
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Room{Workspace: t.TempDir()}
			if c.apply != nil {
				c.apply(&r)
			}
			v := runInspect(t, r, InspectOptions{}).View
			var leaks []string
			if holdsKey(v.SessionKeys, desc) {
				leaks = append(leaks, "keyctl reads it in the session keyring")
			}
			if holdsKey(v.ProcKeys, desc) {
				leaks = append(leaks, "/proc/keys lists it")
			}
			if c.wantLeak && len(leaks) == 0 {
				t.Fatalf("the canary key stayed out (keyctl %s, %d keys, /proc/keys %d lines): this defence is not what holds it", v.Keyctl, len(v.SessionKeys), len(v.ProcKeys))
			}
			if !c.wantLeak && len(leaks) > 0 {
				t.Fatalf("the canary key reached the room: %s", strings.Join(leaks, "; "))
			}
			t.Logf("keyctl %s, session keys %v, /proc/keys lines %d, leaks %v", v.Keyctl, v.SessionKeys, len(v.ProcKeys), leaks)
		})
	}
}

func holdsKey(lines []string, desc string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, desc) })
}
