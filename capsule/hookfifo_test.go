package capsule

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHookStartsNoProgram: the hook's command line gets its capsule from the watcher with
// shell builtins alone. The tare-room it would fall back to does not exist here, so a hook
// that started it would fail.
func TestHookStartsNoProgram(t *testing.T) {
	ws, storeDir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "one\n", 0o644)
	s, err := Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	snap(t, s, ws, "start")
	socket := filepath.Join(t.TempDir(), "snap.sock")
	stop, err := serveSnaps(storeDir, "", ws, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	hook := HookCommand(filepath.Join(t.TempDir(), "no-tare-room"), storeDir, "", ws, socket)
	for i := range 3 {
		write(t, filepath.Join(ws, "a.txt"), fmt.Sprintf("change %d\n", i), 0o644)
		runHook(t, hook, fmt.Sprintf("toolu_%d", i))
	}
	checkLast(t, s, ws, "toolu_2")
}

// TestHookFIFORefusesGarbage: the request FIFO is written by the agent's processes, so the
// watcher reads it as hostile. Overlong lines, lines that are not "SLOT PID", slots out of
// range, the watcher's own pid, a slot asked for twice, a pid whose input never comes and a
// slot stuffed with junk neither crash nor block it: a real hook right after gets its
// capsule.
func TestHookFIFORefusesGarbage(t *testing.T) {
	defer func(r, l time.Duration) { hookReadTimeout, hookRelease = r, l }(hookReadTimeout, hookRelease)
	hookReadTimeout, hookRelease = 2*time.Second, 2*time.Second
	ws, storeDir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "one\n", 0o644)
	s, err := Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	snap(t, s, ws, "start")
	socket := filepath.Join(t.TempDir(), "snap.sock")
	stop, err := serveSnaps(storeDir, "", ws, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := hookDir(socket)

	// A process whose fd 9 is a pipe nothing is ever written to.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	silent := exec.Command("sleep", "30")
	silent.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, nil, r}
	if err := silent.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer func() { silent.Process.Kill(); silent.Wait() }()

	req, err := os.OpenFile(filepath.Join(dir, "req"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer req.Close()
	for _, g := range []string{
		strings.Repeat("7", 100000) + "\n", // overlong
		"\x00\xff garbage\n", "1\n", "1 2 3\n", "-1 500\n", "16 500\n", "x 500\n", "3 1\n",
		fmt.Sprintf("4 %d\n", os.Getpid()), // the watcher itself
		fmt.Sprintf("5 %d\n5 %d\n", silent.Process.Pid, silent.Process.Pid),
		"no newline at all",
	} {
		if _, err := req.WriteString(g); err != nil {
			t.Fatal(err)
		}
	}
	junk, err := os.OpenFile(filepath.Join(dir, "r0"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk.WriteString("not an answer\n")
	junk.Close()
	if _, err := req.WriteString("\n"); err != nil { // ends "no newline at all"
		t.Fatal(err)
	}

	hook := HookCommand(filepath.Join(t.TempDir(), "no-tare-room"), storeDir, "", ws, socket)
	write(t, filepath.Join(ws, "a.txt"), "changed\n", 0o644)
	t0 := time.Now()
	// Slot 0 holds junk: this hook reads it, falls back and fails (there is no tare-room);
	// the next takes slot 1, and once the junk is cleared slot 0 works again.
	_ = exec.Command("/bin/sh", "-c", hook).Run()
	runHook(t, hook, "toolu_after_garbage")
	if d := time.Since(t0); d > hookReadTimeout {
		t.Fatalf("the hook after the garbage took %s: the watcher waited for it", d)
	}
	checkLast(t, s, ws, "toolu_after_garbage")
}

// runHook runs hook as an agent does, with id's hook input on stdin, and fails on output.
func runHook(t *testing.T, hook, id string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", hook)
	cmd.Stdin = strings.NewReader(`{"hook_event_name":"PostToolUse","tool_use_id":"` + id + `","tool_response":{"stdout":"` + strings.Repeat("x", 100000) + `"}}` + "\n")
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("hook for %s: %v: %s", id, err, out)
	}
}

// checkLast checks that the store's last capsule is id, taken by the watcher, and is the
// workspace as a full walk sees it.
func checkLast(t *testing.T, s *Store, ws, id string) {
	t.Helper()
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	last := list[len(list)-1]
	full, err := openStore(t).Snap(context.Background(), ws, "full")
	if err != nil {
		t.Fatal(err)
	}
	if last.ID != id || last.Walk != "dirty" || last.Root != full.Root {
		t.Fatalf("last capsule %s (walk %s, root %s), want %s by the watcher with root %s", last.Name(), last.Walk, last.Root, id, full.Root)
	}
}

// TestHookFallsBackWhenTheWatcherDied: a watcher killed leaves its FIFOs behind; a hook then
// does not wait for an answer that cannot come but takes the capsule with tare snap.
func TestHookFallsBackWhenTheWatcherDied(t *testing.T) {
	bin := buildHelper(t)
	ws, dir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "one\n", 0o644)
	base, stage, sock := filepath.Join(dir, "store"), filepath.Join(dir, "stage"), filepath.Join(dir, "snap.sock")
	s, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	snap(t, s, ws, "start")
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	watch := exec.Command(bin, "snap-watch", "--store", stage, "--base", base, "--work", ws, "--socket", sock, "--", "sleep", "60")
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(filepath.Join(hookDir(sock), "pid")); err != nil; _, err = os.Stat(filepath.Join(hookDir(sock), "pid")) {
		if time.Now().After(until) {
			t.Fatal("the watcher made no FIFOs")
		}
		time.Sleep(10 * time.Millisecond)
	}
	watch.Process.Kill()
	watch.Wait()
	write(t, filepath.Join(ws, "a.txt"), "two\n", 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", HookCommand(bin, stage, base, ws, sock))
	cmd.Stdin = strings.NewReader(`{"hook_event_name":"PostToolUse","tool_use_id":"toolu_after"}`)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("hook with its watcher dead: %v: %s", err, out)
	}
	st, err := OpenStage(stage, base)
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	full, err := openStore(t).Snap(context.Background(), ws, "full")
	if err != nil {
		t.Fatal(err)
	}
	if last := list[len(list)-1]; last.ID != "toolu_after" || last.Root != full.Root {
		t.Fatalf("last capsule %s (root %s), want toolu_after with root %s", last.Name(), last.Root, full.Root)
	}
}

// TestHookRefusesAThread: a request naming a thread of another process whose fd 9 is a FIFO
// nobody writes (held open for reading, non-blocking) neither blocks the watcher nor keeps
// its room from ending: the /proc path opened that FIFO blocking, forever, and stop waited.
func TestHookRefusesAThread(t *testing.T) {
	defer func(r, l time.Duration) { hookReadTimeout, hookRelease = r, l }(hookReadTimeout, hookRelease)
	hookReadTimeout, hookRelease = 2*time.Second, 2*time.Second
	ws, storeDir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "one\n", 0o644)
	s, err := Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	snap(t, s, ws, "start")
	socket := filepath.Join(t.TempDir(), "snap.sock")
	stop, err := serveSnaps(storeDir, "", ws, socket)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	idle := exec.Command(os.Args[0])
	idle.Env = append(os.Environ(), "TARE_TEST_IDLE=1")
	idle.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, nil, held} // fd 9
	if err := idle.Start(); err != nil {
		t.Fatal(err)
	}
	held.Close()
	defer func() { idle.Process.Kill(); idle.Wait() }()
	tid := 0
	for deadline := time.Now().Add(10 * time.Second); tid == 0 && time.Now().Before(deadline); {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", idle.Process.Pid))
		for _, e := range tasks {
			if n, _ := strconv.Atoi(e.Name()); n != 0 && n != idle.Process.Pid {
				tid = n
			}
		}
		if tid == 0 {
			runtime.Gosched()
		}
	}
	if tid == 0 {
		t.Fatal("the idle process started no thread")
	}
	req, err := os.OpenFile(filepath.Join(hookDir(socket), "req"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer req.Close()
	if _, err := fmt.Fprintf(req, "15 %d\n", tid); err != nil {
		t.Fatal(err)
	}
	// A hook after it: once it has its capsule, the watcher has taken the request before it.
	write(t, filepath.Join(ws, "a.txt"), "changed\n", 0o644)
	runHook(t, HookCommand(filepath.Join(t.TempDir(), "no-tare-room"), storeDir, "", ws, socket), "toolu_after_thread")
	checkLast(t, s, ws, "toolu_after_thread")
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(hookReadTimeout + hookRelease + 5*time.Second):
		t.Fatalf("the watcher did not stop: a request naming thread %d holds it", tid)
	}
}
