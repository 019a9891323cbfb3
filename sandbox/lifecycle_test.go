package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Suite item 8: SIGKILL of tare kills the whole tree; background jobs die
// when the room's command exits; a timeout leaves no orphans. Processes are
// found by a unique marker in their command line, polled with a deadline.

// dieDeadline bounds how long a room may outlive what ended it.
const dieDeadline = 3 * time.Second

// jobsScript starts a background job and a foreground one, each renamed
// MARKER-bg / MARKER-fg, and optionally exits on its own with code 7 once
// the background job is running.
func jobsScript(marker string, exit bool) []string {
	s := fmt.Sprintf(`(exec -a %[1]s-bg sleep 1000) & pid=$!
until tr '\0' ' ' </proc/$pid/cmdline | grep -q '^%[1]s-bg'; do :; done
`, marker)
	if exit {
		s += "exit 7\n"
	} else {
		s += fmt.Sprintf("exec -a %s-fg sleep 1000\n", marker)
	}
	return []string{"/bin/bash", "-c", s}
}

// childMain runs in a test child process (see TestMain).
func childMain(mode string) int {
	switch mode {
	case "churn":
		return churnMain()
	case "lifecycle":
		// Start a room with jobs, say so, and wait to be killed.
		marker := os.Getenv(markerEnv)
		r := Room{Workspace: os.Getenv(wsEnv), Argv: jobsScript(marker, false)}
		if root := os.Getenv(imageEnv); root != "" {
			r.Image = &Image{Root: root, WorkDir: "/app"}
		}
		for _, m := range strings.Split(os.Getenv(mutateEnv), ",") {
			switch m {
			case "":
			case "die-with-parent":
				r.mutate = removeSeq("--die-with-parent")
			case "lifeline":
				r.noLifeline = true
			case "setup-window":
				// Hold the room's setup until this process is gone: the pipe's
				// write end is close-on-exec, so bwrap's read sees EOF then.
				hold, release, err := os.Pipe()
				if err != nil {
					fmt.Println("error", err)
					return 1
				}
				defer release.Close()
				r.block = hold
			default:
				fmt.Println("error: unknown mutation", m)
				return 2
			}
		}
		p, err := Start(context.Background(), r)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		if r.block != nil {
			// Wait until bwrap has let the room's pid 1 go on and pid 1 is
			// done with the setup, held at --block-fd. bwrap's own
			// window before that is sweepStranded's (TestStrandedRoomIsSwept).
			<-p.initRead
			for deadline := time.Now().Add(10 * time.Second); !roomSetUp(p.Pid()); {
				if time.Now().After(deadline) {
					fmt.Println("error: the room's pid 1 never finished its setup")
					return 1
				}
				time.Sleep(time.Millisecond)
			}
		}
		fmt.Println("started", p.Pid())
		p.Wait()
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown test child mode", mode)
	return 2
}

// roomSetUp reports whether bwrap's child, the room's pid 1, is done setting
// the room up: it drops its last capability (CapEff in its status, readable
// by any uid) just before it would wait at --block-fd.
func roomSetUp(bwrap int) bool {
	for _, c := range children(bwrap) {
		if procStatus(c)["CapEff"] == "0000000000000000" {
			return true
		}
	}
	return false
}

// procsNamed reports whether a process whose argv[0] is name exists.
func procsNamed(name string) bool {
	for _, pid := range markerProcs(name) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.HasPrefix(string(b), name+"\x00") {
			return true
		}
	}
	return false
}

// checkParentKilled starts a child test process that runs a room with a
// foreground and a background job, SIGKILLs the child once both jobs run
// (with the "setup-window" mutation: while the room is still being set up),
// and returns the room processes still alive after dieDeadline.
func checkParentKilled(t *testing.T, mutation string) []string {
	t.Helper()
	requireBwrap(t)
	marker := "tare-life-" + randHex(6)
	t.Cleanup(func() { killMarker(marker) })
	cmd := exec.Command(testBinary(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=lifecycle", markerEnv+"="+marker, wsEnv+"="+t.TempDir(), mutateEnv+"="+mutation)
	if testImage != nil {
		cmd.Env = append(cmd.Env, imageEnv+"="+testImage.Root)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "started") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", line)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(mutation, "setup-window") && (!procsNamed(marker+"-bg") || !procsNamed(marker+"-fg")) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the room's jobs never showed up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The room's pid 1 is watched by pid too, not only by the marker: killed during its
	// setup, it carries no marker until it runs the room's command, so a first look could
	// find nothing yet and call the room gone while it is about to go on without tare.
	var pid int
	fmt.Sscanf(strings.TrimPrefix(line, "started "), "%d", &pid)
	room := children(pid)
	if strings.Contains(mutation, "setup-window") {
		// tare's death takes bwrap with it and releases the room's setup at the same time;
		// the room's pid 1 outlives both only when bwrap is gone before pid 1 goes on (it
		// then arms --die-with-parent against its new parent). Under load the other order
		// came first and the room died with bwrap, lifeline or not: bwrap goes first here.
		syscall.Kill(pid, syscall.SIGKILL)
		for deadline := time.Now().Add(10 * time.Second); !reparentedFrom(room, pid); {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the room's pid 1 %v was never reparented after its bwrap %d was killed", room, pid)
			}
			time.Sleep(time.Millisecond)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	return waitGonePids(marker, room, dieDeadline)
}

// reparentedFrom reports whether every pid of pids (gone ones aside) has a parent other
// than bwrap.
func reparentedFrom(pids []int, bwrap int) bool {
	for _, p := range pids {
		if pp := procStatus(p)["PPid"]; pp == strconv.Itoa(bwrap) {
			return false
		}
	}
	return true
}

// waitGonePids is waitGone that also waits for pids (a room's pid 1) to be gone; those
// still alive at the deadline are survivors too.
func waitGonePids(marker string, pids []int, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		var alive []string
		for _, p := range pids {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); err == nil && !zombie(string(b)) {
				c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
				alive = append(alive, fmt.Sprintf("%d %q", p, strings.ReplaceAll(string(c), "\x00", " ")))
			}
		}
		if len(alive) == 0 {
			return waitGone(marker, time.Until(deadline))
		}
		if time.Now().After(deadline) {
			return append(alive, waitGone(marker, 0)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombie reports whether a /proc/PID/stat line is a process that has exited and waits to
// be reaped: it holds nothing and runs nothing.
func zombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// checkBackgroundJobs runs a room whose command starts a background job and
// exits 7; it returns the processes left behind after dieDeadline.
func checkBackgroundJobs(t *testing.T, mutate func([]string) []string) []string {
	t.Helper()
	marker := "tare-bg-" + randHex(6)
	t.Cleanup(func() { killMarker(marker) })
	code := runRoom(t, rooted(Room{Workspace: t.TempDir(), Argv: jobsScript(marker, true), mutate: mutate}))
	if code != 7 {
		t.Errorf("room exited %d, want 7", code)
	}
	return waitGone(marker, dieDeadline)
}

func TestLifecycleParentKilled(t *testing.T) {
	if s := checkParentKilled(t, ""); len(s) > 0 {
		t.Errorf("room processes survived tare's SIGKILL: %v", s)
	}
}

// TestLifecycleKilledDuringSetup: tare killed while bwrap is still setting
// the room up, before the room's pid 1 has armed its parent-death signal
// (the window a kill -9 of a calibrate hit in CI): the room never runs.
func TestLifecycleKilledDuringSetup(t *testing.T) {
	if s := checkParentKilled(t, "setup-window"); len(s) > 0 {
		t.Errorf("room processes survived tare's SIGKILL during the room's setup: %v", s)
	}
}

func TestLifecycleBackgroundJobs(t *testing.T) {
	if s := checkBackgroundJobs(t, nil); len(s) > 0 {
		t.Errorf("background jobs survived the room's command: %v", s)
	}
}

// TestLifecycleTimeout: when the context ends, the command gets SIGTERM
// (exit 143), the room ends within the grace period, Wait reports the
// deadline, and no process and no temp folder remain.
func TestLifecycleTimeout(t *testing.T) {
	requireBwrap(t)
	marker := "tare-timeout-" + randHex(6)
	t.Cleanup(func() { killMarker(marker) })
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	p, err := Start(ctx, Room{Workspace: t.TempDir(), TempDir: tmp, Tare: testBinary(t), Grace: time.Second, Argv: jobsScript(marker, false)})
	if err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait()
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait error %v, want context.DeadlineExceeded", err)
	}
	if code != 128+15 {
		t.Errorf("exit code %d, want 143 (SIGTERM reached the command)", code)
	}
	if took > 500*time.Millisecond+time.Second+time.Second {
		t.Errorf("room took %v to stop", took)
	}
	if s := waitGone(marker, dieDeadline); len(s) > 0 {
		t.Errorf("orphans after the timeout: %v", s)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("temp root holds %v", ents)
	}
}

// TestLifecycleKillAfterGrace: a command that ignores SIGTERM is killed
// once the grace period after the context's end is over.
func TestLifecycleKillAfterGrace(t *testing.T) {
	requireBwrap(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close() // Start copies the room's output into it until Wait returns
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Start(ctx, Room{Workspace: t.TempDir(), Tare: testBinary(t), Grace: 300 * time.Millisecond, Stdout: pw,
		Argv: []string{"/bin/bash", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"}})
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(pr).ReadString('\n'); line != "ready\n" {
		p.Kill()
		t.Fatalf("room said %q", line)
	}
	start := time.Now()
	cancel()
	code, err := p.Wait()
	if !errors.Is(err, context.Canceled) || code != 128+9 {
		t.Errorf("Wait = %d, %v; want 137 and context.Canceled", code, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("room ended %v after the cancel, want just after the 300ms grace", took)
	}
}

// TestStartHygiene: after Start/Wait, and after a Start that fails once
// its temp folder exists, the temp root is empty and bwrap is gone.
func TestStartHygiene(t *testing.T) {
	requireBwrap(t)
	tmp := t.TempDir()
	p, err := Start(t.Context(), Room{Workspace: t.TempDir(), TempDir: tmp, Tare: testBinary(t), Argv: []string{"true"},
		Relays: []Relay{{Port: 9999, Upstream: "127.0.0.1:9"}}, Files: []File{{Path: HomeDir + "/x", Data: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("temp root holds %v after Wait", ents)
	}
	if left := markerProcs(tmp); len(left) > 0 {
		t.Errorf("processes of the room (bwrap was %d) remain after Wait: %v", pid, left)
	}

	// A socket path too long to bind: Start fails after making its folder.
	long := filepath.Join(tmp, strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = Start(t.Context(), Room{Workspace: t.TempDir(), TempDir: long, Tare: testBinary(t), Argv: []string{"true"},
		Relays: []Relay{{Port: 9999, Upstream: "127.0.0.1:9"}}})
	if err == nil || !strings.Contains(err.Error(), "relay for port 9999") || !strings.Contains(err.Error(), "TempDir") {
		t.Errorf("Start with an unbindable socket: %v", err)
	}
	if ents, _ := os.ReadDir(long); len(ents) != 0 {
		t.Errorf("temp root holds %v after a failed Start", ents)
	}
}

// TestStaleRoomFoldersAreSwept: the temp folder of a room whose tare was SIGKILLed (its pid
// gone) is removed by the next room started there; a live tare's folder is left alone.
func TestStaleRoomFoldersAreSwept(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("%s%d-123", roomPrefix, dead.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("%s%d-456", roomPrefix, os.Getppid()))
	// A running room of a tare in another pid namespace sharing this temp folder: its pid
	// means nothing here (the dead one's, as reused pids or a container make it), its lock
	// is held.
	foreign := filepath.Join(tmp, fmt.Sprintf("%s%d-789", roomPrefix, dead.Process.Pid))
	for _, d := range []string{stale, live, foreign} {
		if err := os.MkdirAll(filepath.Join(d, "sock"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := lockRoomDir(foreign)
	if err != nil {
		t.Fatal(err)
	}
	sweepRooms(tmp)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead tare's room folder is still there")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live tare's room folder was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, "sock")); err != nil {
		t.Errorf("a running room's folder was removed while it held its lock: %v", err)
	}
	lock.Close()
	sweepRooms(tmp)
	if _, err := os.Stat(foreign); !os.IsNotExist(err) {
		t.Errorf("a folder whose room is gone (pid dead, lock free) is still there")
	}
}

// TestRunningRoomHoldsItsFolderLock: a room holds its temp folder's lock from Start until
// it is waited for, so no sweep can take its sockets away while it runs.
func TestRunningRoomHoldsItsFolderLock(t *testing.T) {
	needRooms(t)
	tmp := t.TempDir()
	p, err := Start(t.Context(), Room{Workspace: t.TempDir(), TempDir: tmp, Tare: testBinary(t), Argv: []string{"sleep", "30"},
		Relays: []Relay{{Port: 9999, Upstream: "127.0.0.1:9"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	defer p.Kill()
	if l, err := lockRoomDir(p.dir); err == nil {
		l.Close()
		t.Fatalf("a running room's folder lock could be taken")
	}
}

// strandRoom starts a room held in bwrap's setup and kills its bwrap, as a tare killed at
// that moment leaves it; it returns the room's pid 1, waiting for its go-ahead forever. With
// helper, the room's relay runs from that tare-room.
func strandRoom(t *testing.T, marker, helper string, mutate func([]string) []string) int {
	t.Helper()
	t.Cleanup(func() { killMarker(marker) })
	hold, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release.Close() })
	noUserns := removeSeq("--disable-userns") // bwrap refuses it beside --userns-block-fd
	p, err := Start(context.Background(), Room{Workspace: t.TempDir(), Tare: testBinary(t), Helper: helper,
		Argv: []string{"/bin/sh", "-c", "exec -a " + marker + " sleep 1000"}, block: hold, blockFlag: "--userns-block-fd",
		mutate: func(a []string) []string { return mutate(noUserns(a)) }})
	if err != nil {
		t.Fatal(err)
	}
	<-p.initRead
	pid1 := children(p.Pid())
	if len(pid1) != 1 {
		t.Fatalf("bwrap %d has children %v, want the room's pid 1", p.Pid(), pid1)
	}
	// Kill bwrap as a dead tare would leave it: Wait, which would end pid 1 too, comes
	// only at the test's end.
	t.Cleanup(func() { p.Wait() })
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	return pid1[0]
}

// TestStrandedRoomIsSwept: a room's pid 1 stranded in bwrap's setup is taken for stranded
// only once it has waited strandedAge, and then swept; a stranded room of another tare
// binary (another install, or another package's tests running beside this one) is left to
// its own tare, which may be holding it there on purpose.
func TestStrandedRoomIsSwept(t *testing.T) {
	requireBwrap(t)
	marker := "tare-stranded-" + randHex(6)
	helper := buildHelper(t) // first: the rooms below must not age past strandedAge
	pid1 := strandRoom(t, marker, "", func(a []string) []string { return a })
	// A room whose relay runs from tare-room is one of ours too.
	helped := "tare-stranded-helper-" + randHex(6)
	pid1h := strandRoom(t, helped, helper, func(a []string) []string { return a })
	foreign := "tare-foreign-" + randHex(6)
	other := strandRoom(t, foreign, "", func(a []string) []string {
		i := slices.Index(a, "--owner")
		if i < 0 {
			panic("mutation: no --owner in argv")
		}
		a[i+1] = "another-binary"
		return a
	})
	if stranded(pid1) {
		t.Fatalf("pid %d, stranded %v ago, is already taken for stranded (strandedAge %v)", pid1, age(pid1), strandedAge)
	}
	setStrandedAge(t, 0) // this test's rooms are stranded on purpose, a moment ago
	for _, pid := range []int{pid1, pid1h} {
		if !stranded(pid) {
			t.Fatalf("pid %d is not taken for a stranded room (comm %q, status %v)", pid, comm(pid), procStatus(pid))
		}
	}
	if stranded(other) {
		t.Fatalf("pid %d, stranded by another tare binary, is taken for one of ours", other)
	}
	got := sweepStranded()
	if !slices.Contains(got, pid1) || !slices.Contains(got, pid1h) {
		t.Fatalf("sweepStranded killed %v, not the stranded pids 1 %d and %d", got, pid1, pid1h)
	}
	if slices.Contains(got, other) {
		t.Fatalf("sweepStranded killed %d, another tare binary's room", other)
	}
	for _, m := range []string{marker, helped} {
		if s := waitGone(m, dieDeadline); len(s) > 0 {
			t.Fatalf("the stranded room %s survived the sweep: %v", m, s)
		}
	}
	if !slices.Contains(markerProcs(foreign), other) {
		t.Fatalf("another binary's stranded room (pid %d) is gone", other)
	}
}

// setStrandedAge lets this test process sweep rooms stranded just now; other
// processes keep the default and leave them alone.
func setStrandedAge(t *testing.T, d time.Duration) {
	old := strandedAge
	strandedAge = d
	t.Cleanup(func() { strandedAge = old })
}
