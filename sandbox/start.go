package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// minimalEnv is bwrap's own environment. bwrap's pid 1 inside the room keeps
// the environment bwrap was started with (readable as /proc/1/environ from
// inside), --clearenv notwithstanding, so it gets nothing of the caller's.
var minimalEnv = []string{"PATH=/usr/bin:/bin"}

// defaultGrace is the time between SIGTERM and SIGKILL when the context ends.
const defaultGrace = 3 * time.Second

// Proc is a running room. Call Wait exactly once the room is no longer
// needed: it reaps bwrap, stops the relays and removes the temp folder.
type Proc struct {
	cmd      *exec.Cmd
	dir      string
	relays   *hostRelays
	keepKeys bool     // Room.keepKeys
	lifeline *os.File // write end of the room's lifeline (nil without one)
	dirLock  *os.File // the lock on dir the room holds while it runs (lockRoomDir)
	strip    []string // host folders stripped of set-uid and set-gid once the room is gone (stripSetID)

	started chan error    // cmd.Start's result, from the locked goroutine
	done    chan struct{} // closed once bwrap has been reaped
	// init is a pidfd of the room's pid 1 (bwrap's child, from --info-fd), or -1;
	// initRead is closed once readInfo has set it.
	init     int
	initRead chan struct{}
	waitErr  error // cmd.Wait's error, set before done closes
	watch    sync.WaitGroup

	mu     sync.Mutex
	ctxErr error

	once sync.Once
	code int
	err  error
}

// Start runs the room: it makes a private temp folder (0700) holding the
// relay sockets, serves each relay's host side, writes the synthetic /etc
// files and Room.Files to memory files handed to bwrap as descriptors 3, 4
// ..., and bwrap's options to one more, which bwrap reads with --args (so
// its argv names no host path: see argsFile), marks every other descriptor
// of this process close-on-exec, and starts
// bwrap from a goroutine that holds its OS thread until bwrap is reaped (the
// parent-death signal bwrap arms is tied to the thread that forked,
// golang/go#27505).
//
// bwrap runs with PATH as its only variable. Without a TTY it gets its own
// process group (Setpgid), so a ^C meant for tare does not reach it directly. With Room.TTY it becomes the
// leader of a new session whose controlling terminal is that pty (Setsid +
// Setctty): closing the pty hangs up bwrap and so the room, and the pty is
// not tare's own terminal. Inside, --new-session puts the command in yet
// another session without a controlling terminal, which is what makes
// TIOCSTI fail with EPERM and /dev/tty with ENXIO; as a consequence the
// kernel sends no SIGWINCH into the room, so after resizing the pty call
// Signal(syscall.SIGWINCH).
//
// A SIGKILL of this process ends its rooms two ways: --die-with-parent
// (bwrap dies with the forking thread, the room's pid 1 with bwrap), and the
// lifeline: the room's command runs under `tare relay --lifeline FD`, FD
// being the read end of a pipe only this process can write to, and the
// relay ends the room when this process is gone. The lifeline covers the
// start of a room, before its pid 1 has armed its parent-death signal (see
// lifeline.go).
//
// When ctx ends, the room's command gets SIGTERM and, Room.Grace later,
// the room is killed. Every exit path removes the temp folder.
func Start(ctx context.Context, r Room) (*Proc, error) {
	if r.Tare == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("room: cannot find the tare binary (%v): set Room.Tare", err)
		}
		r.Tare = exe
	}
	if r.Helper == "" {
		r.Helper = FindHelper()
	}
	info, err := BwrapVersion(ctx, r.Bwrap)
	if err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	sweepRooms(r.TempDir)
	sweepStrandedOnce.Do(func() { sweepStranded() })
	dir, err := os.MkdirTemp(r.TempDir, fmt.Sprintf("%s%d-", roomPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("room: temp folder: %v: set Room.TempDir or TMPDIR to a writable folder", err)
	}
	p := &Proc{dir: dir, strip: r.stripRoots(), started: make(chan error, 1), done: make(chan struct{}), init: -1, initRead: make(chan struct{})}
	var files []*os.File
	started := false
	defer func() {
		for _, f := range files {
			f.Close() // bwrap holds its own copies
		}
		if !started {
			if p.lifeline != nil {
				p.lifeline.Close()
			}
			if p.relays != nil {
				p.relays.stop()
			}
			os.RemoveAll(dir)
			if p.dirLock != nil {
				p.dirLock.Close()
			}
		}
	}()
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("room: temp folder %s: %v", dir, err)
	}
	if p.dirLock, err = lockRoomDir(dir); err != nil {
		return nil, fmt.Errorf("room: temp folder %s: lock: %v", dir, err)
	}

	p.relays, err = listenRelays(dir, r.Relays, r.Log)
	if err != nil {
		return nil, err
	}
	p.relays.hosts = r.HostLog
	for _, d := range []struct {
		name string
		data []byte
	}{{"passwd", []byte(passwdData)}, {"group", []byte(groupData)}, {"hosts", []byte(hostsData)}} {
		f, err := dataFile(d.name, d.data, dir)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	for i, rf := range r.Files {
		f, err := dataFile("file"+strconv.Itoa(i), rf.Data, dir)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	filter, err := seccompFilter(r.seccompNoModes)
	if err != nil {
		return nil, err
	}
	f, err := dataFile("seccomp", filter, dir)
	if err != nil {
		return nil, err
	}
	files = append(files, f)
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("room: info pipe: %v", err)
	}
	files = append(files, infoW)
	defer func() {
		if !started {
			infoR.Close()
		}
	}()
	fds := SequentialFDs(len(r.Files))
	extra := append([]*os.File(nil), files...)
	if r.noLifeline {
		fds.Lifeline = 0
	} else {
		lr, lw, err := newLifeline()
		if err != nil {
			return nil, err
		}
		files = append(files, lr) // closed below once bwrap holds its copy
		p.lifeline = lw
		// bwrap also gets a read end of its info pipe, which `tare relay`
		// closes at once: with this process gone, bwrap's write to --info-fd
		// must not fail (EPIPE kills bwrap before it lets the room's pid 1 go
		// on, and that pid 1 would then wait for it forever).
		extra = append(extra, lr, infoR)
	}
	fds.Sock = dir
	fds.Version = info.Version
	fds.MaskProc = hostProcMasks()
	for _, p := range etcAllow {
		if r.Image != nil {
			break // an image room has the image's /etc, none of the host's
		}
		f, mode, err := etcCopy(p, dir)
		if err != nil {
			return nil, err
		}
		if f != nil {
			files = append(files, f)
			extra = append(extra, f)
			fds.Etc = append(fds.Etc, EtcFile{Path: p, FD: 2 + len(extra), Mode: mode})
		}
	}
	args, err := r.Args(fds)
	if err != nil {
		return nil, err
	}
	if r.block != nil {
		extra = append(extra, r.block)
		flag := r.blockFlag
		if flag == "" {
			flag = "--block-fd"
		}
		args = append([]string{flag, strconv.Itoa(2 + len(extra))}, args...)
	}
	if !r.argvOptions {
		opts, command, err := splitCommand(args, len(r.command(fds)))
		if err != nil {
			return nil, err
		}
		f, err := argsFile(opts, dir)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		extra = append(extra, f)
		args = append([]string{"--args", strconv.Itoa(2 + len(extra)), "--"}, command...)
	}

	cmd := &exec.Cmd{
		Path:       info.Path,
		Args:       append([]string{"bwrap"}, args...),
		Env:        minimalEnv,
		Dir:        "/",
		ExtraFiles: extra,
		WaitDelay:  2 * time.Second,
	}
	if r.bwrapEnv != nil {
		cmd.Env = r.bwrapEnv
	}
	// No Pdeathsig here: bwrap arms its own (--die-with-parent) just before
	// it releases the room's pid 1. Killed earlier, bwrap would leave pid 1
	// blocked forever on bwrap's go-ahead, an orphan no signal of ours
	// reaches; the few microseconds left between the two are sweepStranded's.
	attr := &syscall.SysProcAttr{}
	var stdinFrom, stdinTo *os.File // the caller's stdin file and the pipe the room reads
	if r.TTY != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = r.TTY, r.TTY, r.TTY
		if ownTerminal(r.TTY) {
			attr.Setpgid = true // never steal the operator's terminal from tare
		} else {
			attr.Setsid, attr.Setctty, attr.Ctty = true, true, 0
		}
	} else {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = r.Stdin, ownedWriter(r.Stdout), ownedWriter(r.Stderr)
		if r.fileStdio {
			cmd.Stdout, cmd.Stderr = r.Stdout, r.Stderr
		}
		if f, ok := r.Stdin.(*os.File); ok && !r.fileStdio {
			pr, pw, err := os.Pipe()
			if err != nil {
				return nil, fmt.Errorf("room: stdin pipe: %v", err)
			}
			files = append(files, pr) // bwrap holds its own copy
			cmd.Stdin = pr
			stdinFrom, stdinTo = f, pw
		}
		attr.Setpgid = true
	}
	cmd.SysProcAttr = attr
	p.cmd = cmd
	defer func() {
		if stdinTo != nil && !started {
			stdinTo.Close()
		}
	}()
	p.keepKeys = r.keepKeys

	if !r.keepFDs {
		if err := closeOnExecAll(); err != nil {
			return nil, fmt.Errorf("room: cannot mark inherited descriptors close-on-exec: %v", err)
		}
	}
	go p.run()
	if err := <-p.started; err != nil {
		fix := "run `tare doctor` to check bubblewrap"
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOEXEC):
			fix = installFix
		case r.TTY != nil && errors.Is(err, syscall.EPERM):
			fix = "the TTY is another session's controlling terminal: pass a freshly opened pty"
		}
		return nil, fmt.Errorf("room: start bwrap %s: %v: %s", info.Path, err, fix)
	}
	started = true
	if stdinTo != nil {
		// Not waited for: a read of tare's stdin may block until its writer is done. The
		// copy ends there, or at the first write after the room is gone (EPIPE).
		go func() {
			_, _ = io.Copy(stdinTo, stdinFrom)
			stdinTo.Close()
		}()
	}
	go p.readInfo(infoR)
	p.relays.serve()
	grace := r.Grace
	if grace <= 0 {
		grace = defaultGrace
	}
	p.watch.Add(1)
	go p.watchContext(ctx, grace)
	return p, nil
}

// run starts and reaps bwrap from one locked OS thread: bwrap's parent-death
// signal fires when the forking thread exits, so that thread must live as
// long as bwrap.
//
// Before the fork the thread joins a fresh, empty session keyring, which
// bwrap and the room inherit instead of the caller's: otherwise the room
// can read every key of the operator's login session (keyctl on
// KEY_SPEC_SESSION_KEYRING), payloads included. Credentials are per
// thread, so the thread is never unlocked: it ends with this goroutine and
// takes its keyring with it.
func (p *Proc) run() {
	runtime.LockOSThread()
	if !p.keepKeys {
		if err := joinFreshKeyring(); err != nil {
			p.started <- err
			return
		}
	}
	if err := p.cmd.Start(); err != nil {
		p.started <- err
		return
	}
	p.started <- nil
	p.waitErr = p.cmd.Wait()
	close(p.done)
}

func (p *Proc) watchContext(ctx context.Context, grace time.Duration) {
	defer p.watch.Done()
	select {
	case <-p.done:
		return
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.ctxErr = ctx.Err()
	p.mu.Unlock()
	_ = p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.Kill()
	}
}

// Pid is bwrap's process id on the host.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Refused lists the CONNECT targets the room's proxies turned away, in order.
func (p *Proc) Refused() []string { return p.relays.refusedList() }

// Signal delivers sig to the room's command (the relay when the room has
// relays, which passes it on). Before the command exists, or after it is
// gone, it goes to bwrap's process group, which for SIGTERM ends the room.
func (p *Proc) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("room: signal %v is not a syscall.Signal", sig)
	}
	select {
	case <-p.done:
		return os.ErrProcessDone
	default:
	}
	if pid := p.commandPid(); pid > 0 {
		return syscall.Kill(pid, s)
	}
	return syscall.Kill(-p.cmd.Process.Pid, s)
}

// Kill ends the room at once: SIGKILL to the room's pid 1 (the kernel then
// kills every process of the room) and to bwrap's process group.
func (p *Proc) Kill() error {
	select {
	case <-p.done:
		return os.ErrProcessDone
	default:
	}
	for _, pid := range children(p.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("room: kill bwrap %d: %w", p.cmd.Process.Pid, err)
	}
	return nil
}

// commandPid is the host pid of the room's command: the child of bwrap's
// pid 1 whose pid inside the room is 2 (pid 1 also adopts orphans).
func (p *Proc) commandPid() int {
	for _, init := range children(p.cmd.Process.Pid) {
		for _, c := range children(init) {
			if innerPid(c) == 2 {
				return c
			}
		}
	}
	return 0
}

// innerPid is pid's number in its own pid namespace (the last NSpid field).
func innerPid(pid int) int {
	f := strings.Fields(procStatus(pid)["NSpid"])
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[len(f)-1])
	return n
}

// Wait waits for the room to end and returns the command's exit code
// (128+n when it died of signal n). It strips set-uid, set-gid and file
// capabilities from what the room could write (stripSetID), stops the relays
// and removes the temp folder. The error is non-nil when the context ended the room (wrapping
// ctx.Err()) or when bwrap could not be waited for.
func (p *Proc) Wait() (int, error) {
	p.once.Do(p.finish)
	return p.code, p.err
}

func (p *Proc) finish() {
	<-p.done
	p.watch.Wait()
	p.waitInit()
	var stripErr error
	for _, root := range p.strip {
		if _, err := stripSetID(root); err != nil && stripErr == nil {
			stripErr = err
		}
	}
	if p.lifeline != nil {
		p.lifeline.Close()
	}
	p.relays.stop()
	rmErr := os.RemoveAll(p.dir)
	p.dirLock.Close()

	p.code = -1
	if st := p.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Exited():
				p.code = ws.ExitStatus()
			case ws.Signaled():
				p.code = 128 + int(ws.Signal())
			}
		}
	}
	p.mu.Lock()
	ctxErr := p.ctxErr
	p.mu.Unlock()
	var exitErr *exec.ExitError
	switch {
	case ctxErr != nil:
		p.err = fmt.Errorf("room stopped: %w", ctxErr)
	case p.waitErr != nil && !errors.As(p.waitErr, &exitErr):
		p.err = fmt.Errorf("room: wait for bwrap: %w", p.waitErr)
	case rmErr != nil:
		p.err = fmt.Errorf("room: remove temp folder: %w", rmErr)
	case stripErr != nil:
		p.err = stripErr
	}
}

// readInfo reads the JSON bwrap writes to --info-fd once the room's pid 1 exists and opens a
// pidfd on that pid 1 while bwrap, its parent, still holds it. The pipe ends when bwrap does.
func (p *Proc) readInfo(r *os.File) {
	defer close(p.initRead)
	defer r.Close()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if json.NewDecoder(r).Decode(&info) != nil || info.ChildPid <= 0 {
		return
	}
	if fd, err := unix.PidfdOpen(info.ChildPid, 0); err == nil {
		p.init = fd
	}
	_, _ = io.Copy(io.Discard, r)
}

// waitInit waits, after bwrap is reaped, for the room's pid 1 to be gone too. bwrap reports
// the command's exit as soon as pid 1 hands it over, so pid 1 (killed by its parent-death
// signal, and with it every process of the room) may outlive bwrap by a moment; Wait
// promises that nothing of the room is left.
func (p *Proc) waitInit() {
	<-p.initRead
	if p.init < 0 {
		return
	}
	defer unix.Close(p.init)
	fds := []unix.PollFd{{Fd: int32(p.init), Events: unix.POLLIN}}
	for deadline := time.Now().Add(initGrace); time.Now().Before(deadline); {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1)
		if n > 0 || (err != nil && err != unix.EINTR) {
			return
		}
	}
}

// initGrace bounds waitInit: pid 1 has a parent-death SIGKILL, so it is gone in
// milliseconds; the bound only keeps a kernel oddity from hanging Wait.
const initGrace = 5 * time.Second

// children lists the child pids of pid, from /proc/PID/task/*/children when
// the kernel has it, else by scanning every /proc/*/stat.
func children(pid int) []int {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	var out []int
	found := false
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	if found {
		return out
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid(n) == pid {
			out = append(out, n)
		}
	}
	return out
}

func ppid(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// statFields are the fields of /proc/PID/stat after the command name, from the
// state (field 3) on; nil when pid is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// The command name may hold spaces and parentheses: fields start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// ownedWriter hides an *os.File behind a plain io.Writer, so that os/exec gives the room a
// pipe it made and copies that pipe to the file. The file itself must never reach the room:
// a descriptor of a file is reopened through /proc/self/fd/N (or /proc/1/fd/N, bwrap's) from
// inside, read from offset 0, which shows everything tare (or a shell's >>) wrote there
// before, or written anew. Two hidden copies of one file compare equal, so a room whose
// stdout and stderr are one file gets one pipe, as it would have one file.
func ownedWriter(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		return struct{ io.Writer }{f}
	}
	return w
}

// splitCommand splits a bwrap argv into its options and the command after the "--" that
// ends them; n is the command's length (the options may hold a "--" of their own, as the
// value of a variable).
func splitCommand(args []string, n int) (opts, command []string, err error) {
	i := len(args) - n - 1
	if i < 0 || args[i] != "--" {
		return nil, nil, fmt.Errorf("room: bwrap argv has no \"--\" before its %d-word command: this is a bug in tare", n)
	}
	return args[:i], args[i+1:], nil
}

// argsFile holds bwrap's options, NUL-separated, for `bwrap --args FD`. bwrap's argv, which
// every process of the room reads as /proc/1/cmdline (the room's pid 1 is a fork of bwrap),
// then carries no host path: the workspace, the runtime, the tare binary and the socket
// folder are named only in this file, which bwrap reads and closes before the room starts,
// and in pid 1's memory, which the room cannot read (initMem).
func argsFile(opts []string, dir string) (*os.File, error) {
	var b strings.Builder
	for _, o := range opts {
		if strings.IndexByte(o, 0) >= 0 {
			return nil, fmt.Errorf("room: bwrap option %q holds a NUL byte: remove it from the path or value it comes from", o)
		}
		b.WriteString(o)
		b.WriteByte(0)
	}
	return dataFile("args", []byte(b.String()), dir)
}

// dataFile holds data in an anonymous memory file (an unlinked temp file in
// dir when memfd is unavailable), rewound for bwrap to read.
func dataFile(name string, data []byte, dir string) (*os.File, error) {
	var f *os.File
	if fd, err := unix.MemfdCreate("tare-"+name, unix.MFD_CLOEXEC); err == nil {
		f = os.NewFile(uintptr(fd), "memfd:tare-"+name)
	} else {
		tf, err := os.CreateTemp(dir, "data-")
		if err != nil {
			return nil, fmt.Errorf("room: data file for %s: %v", name, err)
		}
		os.Remove(tf.Name())
		f = tf
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("room: data file for %s: %v", name, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("room: data file for %s: %v", name, err)
	}
	return f, nil
}

// closeOnExecAll marks every descriptor above 2 close-on-exec, so that
// bwrap, which closes nothing, passes only 0, 1, 2 and the ExtraFiles it
// consumes into the room. Go opens its own files close-on-exec; this catches
// descriptors opened by C code, by syscall.Open without O_CLOEXEC, or
// inherited from tare's own parent.
func closeOnExecAll() error {
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			continue // the descriptor ReadDir itself used, now closed
		}
		if flags&unix.FD_CLOEXEC == 0 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownTerminal reports whether tty is the controlling terminal of this
// process's session: then bwrap must not take it over. A terminal that is
// nobody's controlling terminal (TIOCGSID fails, as on a fresh pty) is not
// ours, even where getsid says 0 because our session leader lives outside
// this pid namespace (a container's process, a CI job).
func ownTerminal(tty *os.File) bool {
	rc, err := tty.SyscallConn()
	if err != nil {
		return false
	}
	var sid int
	var ioErr error
	if err := rc.Control(func(fd uintptr) { sid, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGSID) }); err != nil || ioErr != nil {
		return false
	}
	own, err := unix.Getsid(0)
	return err == nil && sid > 0 && sid == own
}

// joinFreshKeyring gives the calling thread a new anonymous session
// keyring. A kernel without keyrings (ENOSYS) has nothing to leak, and
// where a seccomp filter already refuses keyctl (EPERM: tare itself in a
// room, or in a container) the room inherits that filter with the rest.
func joinFreshKeyring() error {
	_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if e != 0 && e != unix.ENOSYS && e != unix.EPERM {
		return fmt.Errorf("a fresh session keyring: %v (a full key quota: raise kernel.keys.maxkeys)", e)
	}
	return nil
}
