package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func textServer(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", name, r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

func hostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// waitGoroutines polls until the goroutine count is back to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, had %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRoomRelays (suite item 6): the room reaches a host loopback service
// only through its relay; the CONNECT proxy tunnels to the allowed
// "provider" and refuses another loopback server (403 and a log line) and
// plain-HTTP proxying; direct connects to both fail; the room has only lo
// and no route. After Wait no relay goroutine and no temp folder remain.
func TestRoomRelays(t *testing.T) {
	w := newWorld(t)
	upstream := textServer(t, "upstream")
	provider := textServer(t, "provider")
	other := textServer(t, "other")
	tmp := t.TempDir()
	var log strings.Builder
	before := runtime.NumGoroutine()
	r := Room{
		Workspace: w.ws,
		TempDir:   tmp,
		Log:       &log,
		Relays: []Relay{
			{Port: 8080, Upstream: hostOf(upstream)},
			{Port: 3128, Allow: []string{hostOf(provider)}},
		},
	}
	o := InspectOptions{
		Fetch: []string{
			"http://127.0.0.1:8080/hello",
			"http://" + hostOf(provider) + "/v1/messages via 127.0.0.1:3128",
			"http://" + hostOf(other) + "/ via 127.0.0.1:3128",
			"http://" + hostOf(provider) + "/v1/messages plain 127.0.0.1:3128",
		},
		Connect: []string{hostOf(provider), hostOf(other), hostOf(upstream), w.tcp},
	}
	run := runInspect(t, r, o)
	v := run.View
	want := []struct {
		status int
		body   string
	}{{200, "upstream /hello"}, {200, "provider /v1/messages"}, {403, "not in this room's allow-list"}, {403, "plain-HTTP proxying is refused"}}
	for i, f := range v.Fetch {
		if f.Status != want[i].status || !strings.Contains(f.Body, want[i].body) {
			t.Errorf("fetch %q: %d %q (%s), want %d %q", f.Spec, f.Status, f.Body, f.Err, want[i].status, want[i].body)
		}
	}
	for _, c := range v.Connect {
		if c.OK {
			t.Errorf("direct connect to host %s succeeded", c.Target)
		}
	}
	report(t, "network", checkNetwork(v, w))
	// Behind the relay (pid 2) the command still has only 0, 1, 2, the
	// declared env, and pid 1's env is the minimal one.
	report(t, "fds", checkFDs(v))
	report(t, "env", checkEnv(v, r, w))
	report(t, "pids", checkPIDs(v, w))
	if !strings.Contains(log.String(), "refused CONNECT "+hostOf(other)) {
		t.Errorf("no log line for the refused CONNECT; log: %q", log.String())
	}
	if !slices.Contains(run.Refused, hostOf(other)) {
		t.Errorf("Refused() = %v, want it to hold %s", run.Refused, hostOf(other))
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("temp root holds %d entries after Wait", len(ents))
	}
	waitGoroutines(t, before)
}

// TestSignalThroughRelay: Proc.Signal reaches the room's command through
// the in-room relay (SIGWINCH, then SIGTERM), and the exit code comes back.
func TestSignalThroughRelay(t *testing.T) {
	requireBwrap(t)
	up := textServer(t, "up")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := Room{
		Workspace: t.TempDir(),
		Tare:      testBinary(t),
		Relays:    []Relay{{Port: 8080, Upstream: hostOf(up)}},
		Stdout:    pw,
		Argv:      []string{"/bin/bash", "-c", `trap 'echo winch' WINCH; trap 'exit 42' TERM; echo ready; while :; do :; done`},
	}
	p, err := Start(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(pr)
	expect := func(s string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != s {
			p.Kill()
			t.Fatalf("room said %q (%v), want %q", lines.Text(), lines.Err(), s)
		}
	}
	expect("ready")
	if err := p.Signal(syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	expect("winch")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait()
	if err != nil || code != 42 {
		t.Errorf("Wait = %d, %v; want 42 from the trap", code, err)
	}
	pw.Close() // Start copies the room's output into it until Wait returns
	io.Copy(io.Discard, pr)
	if err := p.Signal(syscall.SIGTERM); err != os.ErrProcessDone {
		t.Errorf("Signal after Wait = %v, want os.ErrProcessDone", err)
	}
}
