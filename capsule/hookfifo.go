package capsule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The hook's fast path: the agent's hook command line talks to the watcher with shell
// builtins only, so a step costs the shell the agent starts anyway and the capsule, not the
// start of a Go program (2-3 ms here, most of a step). Over a folder of FIFOs beside the
// watcher's socket (hookDir):
//
//	req      the hook writes "SLOT PID\n" (PID: its shell, $$)
//	cSLOT    a slot is claimed by creating this file exclusively (set -C; > cSLOT)
//	rSLOT    the watcher writes "ok\n" here once the capsule is on disk
//	pid      the watcher's pid, so a hook can tell a watcher that is gone
//
// The hook's JSON is on its shell's stdin, which dash would read a byte per system call
// (25 ms for 30 kB). The watcher reads it itself with Go's decoder, as tare snap would, from
// the shell's fd 9 (hookInputFile): the shell copies its stdin there first, as `read`
// itself moves fd 0 to the slot's FIFO while it waits. Claude Code, Codex, pi and Gemini CLI
// all run a hook's command line with `sh -c` (Codex: $SHELL -lc), so the line is POSIX sh. Anything that fails sends the hook to tare snap (HookCommand), which
// asks the socket, then walks.
//
// What the watcher reads here is written by the agent's processes and treated as hostile:
// a request is one bounded line, its slot in range, its PID not the watcher's own (whose
// descriptors the agent could not reach itself), the input read with a deadline and a size
// bound;
// a slot is served once at a time, and garbage costs a line thrown away. All of it is inside
// the room: the host's store is never written from here (the host imports the staged
// capsules and checks every object, Import), so a hostile agent can at worst spoil its own
// run's capsules, which it could already do by writing the staging store.

// hookSlots is how many hooks can wait for a capsule at once (parallel tool calls).
const hookSlots = 16

// Bounds on what a request can make the watcher wait for (variables for tests): the hook's
// input on its stdin, and the hook reading its answer before its slot is freed anyway.
var (
	hookReadTimeout = 10 * time.Second
	hookRelease     = 10 * time.Second
)

// hookInputFD is where the hook's shell keeps a copy of its stdin for the watcher to read.
const hookInputFD = 9

// hookDir is the FIFO folder of the watcher serving socket.
func hookDir(socket string) string { return socket + ".d" }

// hookLine is the shell a hook runs before falling back to tare snap: claim a slot, ask,
// wait for "ok". Builtins only ([ read printf true exit); it prints nothing. The slot's
// FIFO is opened for reading before asking: the watcher holds it open for writing, so if
// the watcher dies the read ends (EOF) and the hook falls back instead of waiting for ever;
// a watcher gone before (its pid no longer in /proc) is not asked at all.
func hookLine(dir string) string {
	slots := make([]string, hookSlots)
	for i := range slots {
		slots[i] = strconv.Itoa(i)
	}
	return "d=" + shellQuote(dir) + `; exec 9<&0; if [ -p "$d/req" ] && read -r w <"$d/pid" && [ -d "/proc/$w" ]; then set -C; ` +
		"for i in " + strings.Join(slots, " ") + `; do if true 2>/dev/null >"$d/c$i"; then ` +
		`{ printf '%s %s\n' "$i" "$$" 1<>"$d/req" && read -r a && [ "$a" = ok ] && exit 0; } <"$d/r$i"; break; fi; done; fi; `
}

// hookServer serves the FIFO folder of one watcher.
type hookServer struct {
	dir   string
	req   *os.File
	slots [hookSlots]*os.File // opened read-write: a write never blocks on a missing reader
	busy  [hookSlots]bool
	mu    sync.Mutex
	wg    sync.WaitGroup
	snap  func(id string) error
}

// serveHooks makes dir and serves hooks in it until the returned stop, taking each capsule
// with snap.
func serveHooks(dir string, snap func(id string) error) (stop func(), err error) {
	_ = os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hook folder %s: %w", dir, err)
	}
	h := &hookServer{dir: dir, snap: snap}
	fail := func(err error) (func(), error) {
		h.close()
		return nil, err
	}
	open := func(name string) (*os.File, error) {
		p := filepath.Join(dir, name)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			return nil, fmt.Errorf("hook folder %s: mkfifo %s: %w", dir, name, err)
		}
		return os.OpenFile(p, os.O_RDWR|unix.O_NONBLOCK, 0)
	}
	if h.req, err = open("req"); err != nil {
		return fail(err)
	}
	for i := range h.slots {
		if h.slots[i], err = open("r" + strconv.Itoa(i)); err != nil {
			return fail(err)
		}
	}
	// Written last: a hook takes this path only once everything is in place.
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fail(fmt.Errorf("hook folder %s: %w", dir, err))
	}
	h.wg.Add(1)
	go h.loop()
	return func() {
		_ = os.Remove(filepath.Join(dir, "pid"))
		h.req.SetReadDeadline(time.Now()) // ends loop
		h.wg.Wait()
		h.close()
	}, nil
}

func (h *hookServer) close() {
	if h.req != nil {
		h.req.Close()
	}
	for _, f := range h.slots {
		if f != nil {
			f.Close()
		}
	}
	_ = os.RemoveAll(h.dir)
}

// maxHookRequest bounds a request line ("15 4194304\n" is 11 bytes).
const maxHookRequest = 32

// loop reads requests until the request FIFO's deadline is set by stop.
func (h *hookServer) loop() {
	defer h.wg.Done()
	r := bufio.NewReaderSize(h.req, 64)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// Too long to be a request: throw it away up to its end.
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			return // the deadline stop set, or the FIFO closed
		}
		slot, pid, ok := parseHookRequest(line)
		if !ok {
			continue
		}
		h.mu.Lock()
		taken := h.busy[slot]
		h.busy[slot] = true
		h.mu.Unlock()
		if taken {
			continue // a second request for a slot in use is not a hook's
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.serve(slot, pid)
		}()
	}
}

// parseHookRequest reads "SLOT PID\n".
func parseHookRequest(line []byte) (slot, pid int, ok bool) {
	if len(line) > maxHookRequest {
		return 0, 0, false
	}
	f := strings.Fields(string(line))
	if len(f) != 2 {
		return 0, 0, false
	}
	slot, err1 := strconv.Atoi(f[0])
	pid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || slot < 0 || slot >= hookSlots || pid <= 1 || pid == os.Getpid() {
		return 0, 0, false
	}
	return slot, pid, true
}

// serve takes the capsule for the hook whose shell is pid, answers on its slot, and frees
// the slot once the answer was read.
func (h *hookServer) serve(slot, pid int) {
	answer := "error\n"
	// A request naming no hook's shell (a thread, the watcher) is answered as a failed hook,
	// which falls back to tare snap.
	if isOtherProcess(pid) {
		if id, err := readHookInput(pid); err == nil && h.snap(id) == nil {
			answer = "ok\n"
		}
	}
	f := h.slots[slot]
	// Bounded: a slot the agent stuffed with garbage up to the pipe's size gets no answer.
	_ = f.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = f.Write([]byte(answer))
	h.release(slot)
}

// release waits (bounded) until the slot's answer was read, empties the slot of anything
// left in it and frees it for the next hook.
func (h *hookServer) release(slot int) {
	// Through the raw descriptor, which stays non-blocking (Fd would make it blocking).
	rc, err := h.slots[slot].SyscallConn()
	if err == nil {
		for deadline := time.Now().Add(hookRelease); time.Now().Before(deadline); {
			var n int
			_ = rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) // TIOCINQ is FIONREAD
			if err != nil || n == 0 {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		_ = rc.Control(func(fd uintptr) {
			var junk [512]byte
			for {
				if n, err := unix.Read(int(fd), junk[:]); n <= 0 || err != nil {
					return
				}
			}
		})
	}
	_ = os.Remove(filepath.Join(h.dir, "c"+strconv.Itoa(slot)))
	h.mu.Lock()
	h.busy[slot] = false
	h.mu.Unlock()
}

// readHookInput reads the tool-use id from the hook input on fd 9 of process pid,
// bounded in time and size (the process and what its fd 9 is are the agent's choice).
func readHookInput(pid int) (string, error) {
	fd, err := hookInputFile(pid)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var in hookInput
	r := &pollReader{fd: fd, deadline: time.Now().Add(hookReadTimeout)}
	if err := json.NewDecoder(io.LimitReader(r, maxHookInput)).Decode(&in); err != nil {
		return "", err
	}
	if in.ToolUseID == "" {
		return "", fmt.Errorf("the hook input (event %q) has no tool_use_id", in.Event)
	}
	return in.ToolUseID, nil
}

// hookInputFile gets the hook shell's fd 9. Node and Bun give a child's stdin as a unix
// socket, which /proc/PID/fd cannot open: pidfd_getfd takes a copy of the descriptor (the
// watcher is the agent's parent, so even Yama's ptrace_scope 1 lets it). A pipe can also be
// opened through /proc, where pidfd_getfd is missing (Linux before 5.6).
func hookInputFile(pid int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		fd, err := unix.PidfdGetfd(pidfd, hookInputFD, 0)
		unix.Close(pidfd)
		if err == nil {
			return fd, nil
		}
	}
	// O_NONBLOCK: opening a FIFO nobody writes blocks in the kernel, beyond any deadline
	// (a process may hold one at fd 9 on purpose). Poll and read then wait to the deadline.
	return unix.Open("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(hookInputFD), unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
}

// isOtherProcess reports whether pid is a process of its own, the leader of its thread
// group, and not of the watcher's: a request names a hook's shell, never a thread (pidfd_open
// refuses one, and the /proc fallback would read that thread group's fd 9) nor the watcher.
func isOtherProcess(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			tgid, err := strconv.Atoi(strings.TrimSpace(v))
			return err == nil && tgid == pid && tgid != os.Getpid()
		}
	}
	return false
}

// pollReader reads fd until deadline without changing its flags: the descriptor is shared
// with the hook's shell (and what it runs after), which must find it as it was.
type pollReader struct {
	fd       int
	deadline time.Time
}

func (r *pollReader) Read(p []byte) (int, error) {
	for {
		left := time.Until(r.deadline)
		if left <= 0 {
			return 0, fmt.Errorf("the hook input did not come within %s", hookReadTimeout)
		}
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return 0, err
		}
		n, err = unix.Read(r.fd, p)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
