package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
)

// The app end to end: the real binary on a real terminal (a detached tmux session), driven
// by keys and read back from tmux's screen, as an operator would use it.

// tmuxPane is one program running in a detached tmux session on a tmux server of its own
// (its socket in the test's temp folder), so parallel tests never share a server and no
// socket is left behind. The pane stays after its program exits, so a test can read how it
// ended.
type tmuxPane struct {
	t      *testing.T
	socket string
	last   string // the last screen captured, printed when the test fails
}

// startTmux runs argv in a 160x48 tmux pane, in folder dir, and kills the tmux server when
// the test ends.
func startTmux(t *testing.T, dir string, argv ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed; fix: apt-get install tmux")
	}
	x := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	// A shell around the program prints its exit status on the pane; remain-on-exit keeps
	// the pane to read it.
	args := append([]string{"new-session", "-d", "-x", "160", "-y", "48", "-s", "e2e", "-c", dir,
		"/bin/sh", "-c", `"$@"; echo "[exited: $?]"`, "sh"}, argv...)
	args = append(args, ";", "set-option", "-t", "e2e", "remain-on-exit", "on")
	if out, err := x.cmd(args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last screen captured:\n%s", x.last)
		}
		x.kill()
	})
	return x
}

// kill stops the tmux server and what runs in it, and waits until the server is gone: its
// command line names what the pane was started with (the test's folders), so a check for
// leftover processes runs after it.
func (x *tmuxPane) kill() {
	out, err := x.cmd("display-message", "-p", "#{pid}").Output()
	_ = x.cmd("kill-server").Run()
	if err != nil {
		return // no server left
	}
	stat := "/proc/" + strings.TrimSpace(string(out)) + "/stat"
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(stat)
		if err != nil || strings.Contains(string(data), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	x.t.Errorf("the tmux server %s outlived kill-server by 10s", out)
}

func (x *tmuxPane) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-u", "-S", x.socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
	return cmd
}

// capture is the pane's screen now.
func (x *tmuxPane) capture() string {
	x.t.Helper()
	return x.captureFrom("0")
}

// captureFrom is the pane from line start ("-" is the start of its history) to its end.
func (x *tmuxPane) captureFrom(start string) string {
	x.t.Helper()
	out, err := x.cmd("capture-pane", "-p", "-S", start, "-t", "e2e").CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	x.last = string(out)
	return x.last
}

// keys sends tmux key names (Enter, Tab, Escape, C-u, q...).
func (x *tmuxPane) keys(keys ...string) {
	x.t.Helper()
	if out, err := x.cmd(append([]string{"send-keys", "-t", "e2e"}, keys...)...).CombinedOutput(); err != nil {
		x.t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

// text types s as it is.
func (x *tmuxPane) text(s string) {
	x.t.Helper()
	if out, err := x.cmd("send-keys", "-t", "e2e", "-l", s).CombinedOutput(); err != nil {
		x.t.Fatalf("tmux send-keys -l %q: %v\n%s", s, err, out)
	}
}

// waitFor polls the screen until ok accepts it, failing after within (the test then
// prints the last screen).
func (x *tmuxPane) waitFor(what string, within time.Duration, ok func(screen string) bool) string {
	x.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := x.capture()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText waits until every one of subs is on the screen.
func (x *tmuxPane) waitText(within time.Duration, subs ...string) string {
	x.t.Helper()
	return x.waitFor(fmt.Sprintf("%q", subs), within, func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	})
}

// exited waits until the pane's program has exited and returns its exit status, which the
// wrapping shell prints. (tmux 3.3 sometimes leaves a pane's process unreaped, so
// #{pane_dead_status} cannot be relied on: about one exit in three never gets one.)
func (x *tmuxPane) exited(within time.Duration) int {
	x.t.Helper()
	before := x.last
	deadline := time.Now().Add(within)
	for {
		// With history: tmux's "Pane is dead" line can scroll the status off the screen.
		s := x.captureFrom("-")
		if m := exitLine.FindStringSubmatch(s); m != nil {
			status := -1
			fmt.Sscan(m[1], &status)
			x.last = before // the screen before the exit says more when a later check fails
			return status
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("waited %s for the program to exit; the pane:\n%s", within, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exitLine is what the shell around a pane's program prints when it exits.
var exitLine = regexp.MustCompile(`\[exited: (\d+)\]`)

// line is the first line of screen holding sub, or "".
func line(screen, sub string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// stateDir is where tare keeps this run's state: $XDG_STATE_HOME/tare.
func (r *run) stateDir() string { return filepath.Join(r.home, ".local", "state", "tare") }

// onlyRun is the one run directory below the state directory.
func onlyRun(t *testing.T, r *run) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(r.stateDir(), "calibrate", "*"))
	if len(dirs) != 1 {
		t.Fatalf("want one run in %s, have %v", r.stateDir(), dirs)
	}
	return dirs[0]
}

// tailRow is a row of the run view's tails table: "┃> b-0      b       – failed ...".
var tailRow = regexp.MustCompile(`┃([> ]) ([ab]-\d+)\s+([ab])\s+\S+\s+(\w+)\s`)

// tallyRow is a side's line in the run view's pass-rate pane: "│a pi   ···━━●━━··   1/2  50% ...".
var tallyRow = regexp.MustCompile(`│([ab]) (\w+)\s+([·━●]+)\s+(\d+)/(\d+)\s+(\d+%)\s`)

// TestAppInTmux: on a fresh state, the app shows its home; the new-run form starts a
// calibrate of the demo offline (two sides, two runs each); the run appears in Runs and
// finishes; the run view shows its tails passed or failed with the pass-rate bars; a tail
// view shows the tail's check; q quits. The detached tare calibrate the app started ends on
// its own with its journal closed, leaving no process and no room folder behind.
func TestAppInTmux(t *testing.T) {
	start := time.Now()
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	env := append(r.env(), "TERM=tmux-256color", "PAGER=less")
	// The app starts in this checkout, as the other tests run tare: the agent CLIs are found
	// in its agents/ folder.
	wd := repoDir()
	x := startTmux(t, wd, append(append([]string{"env", "-i"}, env...), tareBin)...)

	x.waitText(10*time.Second, "Probes", "Runs", "no runs yet; n starts one", "pi ")

	// The form: prompt, sides, check, runs, jobs, project, script.
	x.keys("n")
	x.waitText(5*time.Second, "New run · calibrate", "> prompt")
	x.text(demo.Task)
	x.keys("Tab")
	x.text("pi; codex")
	x.keys("Tab")
	x.text(demo.Check)
	x.keys("Tab", "C-u")
	x.text("2m") // the check's timeout
	x.keys("Tab", "C-u")
	x.text("2")
	x.keys("Tab", "C-u")
	x.text("2")
	x.keys("Tab", "C-u")
	x.text(paths.Project)
	x.keys("Tab")
	x.text(paths.Script)
	form := x.waitText(5*time.Second, "> script  "+paths.Script)
	for label, want := range map[string]string{"prompt": demo.Task, "sides": "pi; codex", "check": demo.Check,
		"timeout": "2m", "runs": "2", "jobs": "2", "project": paths.Project} {
		if l := line(form, "  "+label+" "); !strings.Contains(l, " "+want+" ") {
			t.Fatalf("the form's %s field is %q, want %q", label, l, want)
		}
	}
	x.keys("Enter") // on the last field: starts the run

	// The app opens the new run; back home, it is listed in Runs and finishes there.
	x.waitText(30*time.Second, "started project-", "Tails of project-")
	dir := onlyRun(t, r)
	name := filepath.Base(dir)
	x.keys("Escape")
	x.waitText(5*time.Second, "Probes", "Runs", name)
	home := x.waitFor("the run to finish in Runs", 2*time.Minute, func(s string) bool {
		l := line(s, name)
		return strings.Contains(l, " done ") && strings.Contains(l, "4/0/4")
	})
	t.Logf("run finished in the Runs pane after %s: %s", time.Since(start).Round(time.Second), strings.Join(strings.Fields(line(home, name)), " "))

	// The detached tare calibrate closed its journal and is gone, with its rooms.
	events := readEvents(dir)
	if len(events) == 0 || events[len(events)-1].RunFinished == nil {
		t.Fatalf("the journal of %s does not end with run_finished (%d events)", dir, len(events))
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(processesWith(r.stateDir())) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes naming the state directory outlive the run: %v", processesWith(r.stateDir()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := journal.Replay(name, events)
	// Each tail said when its check started, before its verdict (the app's "checking").
	for id := range st.Tails {
		checking, finished := -1, -1
		for i, e := range events {
			if e.TailChecking != nil && e.TailChecking.ID == id {
				checking = i
			}
			if e.TailFinished != nil && e.TailFinished.ID == id {
				finished = i
			}
		}
		if checking < 0 || checking > finished {
			t.Errorf("tail %s: no tail_checking event before its tail_finished", id)
		}
	}

	// The run: its four tails, each passed or failed as the journal says, and a pass-rate bar
	// per side that counts what the journal counts.
	x.keys("Enter")
	screen := x.waitFor("the run view with its four tails", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "Pass rate") && strings.Contains(s, "Tails of "+name) && len(tailRow.FindAllString(s, -1)) == 4
	})
	selected := ""
	for _, m := range tailRow.FindAllStringSubmatch(screen, -1) {
		id, status := m[2], m[4]
		if status != "passed" && status != "failed" {
			t.Errorf("tail %s shows %q, want passed or failed", id, status)
		}
		if tl := st.Tails[id]; tl == nil || string(tl.Status) != status {
			t.Errorf("tail %s shows %q; the journal has %+v", id, status, tl)
		}
		if m[1] == ">" {
			selected = id
		}
	}
	passed := map[string]int{}
	for _, tl := range st.Tails {
		if tl.Status == "passed" {
			passed[tl.Side]++
		}
	}
	bars := tallyRow.FindAllStringSubmatch(screen, -1)
	if len(bars) != 2 {
		t.Fatalf("want a pass-rate line per side, found %d", len(bars))
	}
	for _, m := range bars {
		side, agentName, bar, pass, done := m[1], m[2], m[3], m[4], m[5]
		if want := map[string]string{"a": "pi", "b": "codex"}[side]; agentName != want {
			t.Errorf("side %s is %s, want %s", side, agentName, want)
		}
		if pass != fmt.Sprint(passed[side]) || done != "2" {
			t.Errorf("side %s shows %s/%s passed; the journal has %d/2", side, pass, done, passed[side])
		}
		if strings.Count(bar, "●") != 1 || !strings.Contains(bar, "━") {
			t.Errorf("side %s's bar %q lacks its rate (●) or its interval (━)", side, bar)
		}
	}
	if selected == "" {
		t.Fatal("no tail is selected")
	}

	// The selected tail: its header, its check result as the journal has it, its tool calls.
	x.keys("Enter")
	tl := st.Tails[selected]
	x.waitText(10*time.Second, "tail "+selected+" · side "+tl.Side, "check: "+string(tl.Status)+" — "+tl.Detail, "Tool calls", "sh greet.sh")

	// Its detail pane: the last call (selected) as the agent's stream has it, and the tail's end.
	x.waitText(10*time.Second, "Detail · step 3", "input    sh greet.sh", "output", "agent    agent exit 0", "check ")
	// Its changes, in a pane small enough to scroll: d opens them with the keys, j scrolls.
	if out, err := x.cmd("resize-window", "-t", "e2e", "-x", "160", "-y", "20").CombinedOutput(); err != nil {
		t.Fatalf("tmux resize-window: %v\n%s", err, out)
	}
	x.keys("d")
	x.waitText(10*time.Second, "Changes of tail "+selected, "what tail "+selected+" changed", "--- a/greet.sh")
	x.keys("j") // one key per send: tmux writes "j","j" as one read, which is the key "jj"
	x.waitFor("the changes scrolled", 5*time.Second, func(s string) bool {
		return !strings.Contains(s, "what tail "+selected+" changed") && strings.Contains(s, "--- a/greet.sh")
	})
	x.keys("Escape") // closes the changes
	x.waitText(5*time.Second, "Detail · step 3")
	// o opens the tail's result, stderr and stream in $PAGER (less here); q there returns.
	x.keys("o")
	x.waitText(10*time.Second, `"agent_exit"`, "result.json")
	x.keys("q")
	x.waitText(10*time.Second, "Detail · step 3", "Tool calls")
	if out, err := x.cmd("resize-window", "-t", "e2e", "-x", "160", "-y", "48").CombinedOutput(); err != nil {
		t.Fatalf("tmux resize-window: %v\n%s", err, out)
	}
	x.keys("Escape")
	x.waitText(5*time.Second, "Pass rate", "Tails of "+name)
	x.keys("q")
	if code := x.exited(10 * time.Second); code != 0 {
		t.Errorf("the app exited %d after q", code)
	}
	x.kill()
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	t.Logf("the whole flow took %s", time.Since(start).Round(time.Second))
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving is a running tare serve.
type serving struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	addr string
	done chan struct{}
	err  error
}

func (s *serving) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// startServe starts tare serve on a free loopback port, trying another port when the one
// picked was taken in between, and returns once it listens. It is stopped with the test.
func startServe(t *testing.T, r *run, authorized string) *serving {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		s := &serving{log: &syncBuffer{}, addr: addr, done: make(chan struct{})}
		s.cmd = exec.Command(tareBin, "serve", "--ssh", addr, "--authorized-keys", authorized)
		s.cmd.Env = r.env()
		s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { s.err = s.cmd.Wait(); close(s.done) }()
		t.Cleanup(func() {
			if !s.exited() {
				_ = s.cmd.Process.Kill()
				<-s.done
			}
			if t.Failed() {
				t.Logf("tare serve on %s said:\n%s", addr, s.log.String())
			}
		})
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(s.log.String(), "listening on "+addr) {
			if s.exited() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tare serve did not listen on %s within 15s:\n%s", addr, s.log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !s.exited() {
			return s
		}
		if !strings.Contains(s.log.String(), "address already in use") {
			t.Fatalf("tare serve --ssh %s exited: %v\n%s", addr, s.err, s.log.String())
		}
		t.Logf("port of %s was taken meanwhile; trying another", addr)
	}
	t.Fatal("tare serve found no free port in 5 tries")
	return nil
}

// sshArgs are the OpenSSH client's arguments for key: no user config, no known hosts kept,
// only this key offered.
func sshArgs(key, port string) []string {
	return []string{"-F", "/dev/null", "-i", key, "-p", port, "-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"}
}

func sshKey(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", filepath.Base(path), "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen (fix: apt-get install openssh-client): %v\n%s", err, out)
	}
}

// TestServeOverSSH: tare serve over a real ssh connection from the OpenSSH client on a real
// terminal. An authorized key gets the app on the same state (a run made before is listed);
// quitting the session leaves the server serving; a key not in the authorized file is
// refused; SIGINT stops the server.
func TestServeOverSSH(t *testing.T) {
	start := time.Now()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatal("the OpenSSH client is not installed; fix: apt-get install openssh-client")
	}
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	cal := r.tare(t, "calibrate", demo.Task, "--side", "pi", "--runs", "1", "--jobs", "1",
		"--check", demo.Check, "--project", paths.Project, "--script", paths.Script)
	if cal.code != 0 {
		t.Fatalf("tare calibrate exited %d:\n%s", cal.code, cal.stderr)
	}
	name := filepath.Base(onlyRun(t, r))
	t.Logf("run %s made in %s", name, time.Since(start).Round(time.Second))

	keys := t.TempDir()
	good, stranger := filepath.Join(keys, "operator"), filepath.Join(keys, "stranger")
	sshKey(t, good)
	sshKey(t, stranger)
	pub, err := os.ReadFile(good + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(keys, "authorized_keys")
	if err := os.WriteFile(authorized, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, r, authorized)
	_, port, _ := net.SplitHostPort(srv.addr)

	// The operator's session: the app on the same state.
	argv := append(append([]string{"env", "-i", "PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "TERM=tmux-256color", "LANG=C.UTF-8",
		"ssh", "-tt"}, sshArgs(good, port)...), "127.0.0.1")
	x := startTmux(t, r.home, argv...)
	screen := x.waitText(20*time.Second, "Probes", "Runs", name)
	if l := line(screen, name); !strings.Contains(l, "calibrate") || !strings.Contains(l, " done ") || !strings.Contains(l, "1/0/1") {
		t.Errorf("the run's row is %q, want a finished calibrate of one tail", l)
	}
	x.keys("q")
	if code := x.exited(10 * time.Second); code != 0 {
		t.Errorf("ssh exited %d after q in the app", code)
	}
	x.kill()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(srv.log.String(), "session ended") {
		if time.Now().After(deadline) {
			t.Fatal("tare serve did not log the session's end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if srv.exited() {
		t.Fatalf("tare serve ended with the session: %v", srv.err)
	}

	// A key that is not authorized is refused (and the server is still there to refuse it).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deny := exec.CommandContext(ctx, "ssh", append(append(sshArgs(stranger, port), "-o", "BatchMode=yes"), "127.0.0.1", "true")...)
	deny.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "LANG=C.UTF-8"}
	out, err := deny.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Errorf("ssh with a key not authorized: %v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(string(out), "Permission denied") {
		t.Errorf("ssh with a key not authorized did not say Permission denied:\n%s", out)
	}
	if srv.exited() {
		t.Fatalf("tare serve ended after refusing a key: %v", srv.err)
	}

	// SIGINT stops the server, cleanly.
	stopped := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.done:
	case <-time.After(15 * time.Second):
		t.Fatal("tare serve did not exit within 15s of SIGINT")
	}
	if srv.err != nil {
		t.Errorf("tare serve exited with %v after SIGINT", srv.err)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	t.Logf("tare serve stopped %s after SIGINT; the whole test took %s", time.Since(stopped).Round(time.Millisecond), time.Since(start).Round(time.Second))
}
