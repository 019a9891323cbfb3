// Package roomrelay is the relay every room's command starts under (`tare relay` and
// `tare-room relay`): it watches tare's lifeline, serves the room's TCP listeners onto the
// host's unix sockets, and starts the command. It runs at the start of every room, before the
// agent, so it is its own package with no more imports than it needs: tare-room links it
// without the host side of package sandbox (net/http, TLS, x509, debug/*), whose package
// initialisers and pages every room start would otherwise pay for.
package roomrelay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// relaySignals are passed on from the relay to the command it started.
var relaySignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Main is `tare relay [--lifeline FD] --listen 127.0.0.1:PORT=/run/tare/NAME.sock
// ... -- CMD ARGS`, run inside a room as its command. It first makes itself
// non-dumpable and closes every descriptor it inherited but the lifeline, so
// CMD sees only 0, 1 and 2 and cannot reach the relay's.
// With --lifeline it checks that tare is still there, and ends the whole
// room the moment tare is gone (see watchLifeline). It binds every listener
// (so the agent never races a missing port), then forwards each TCP
// connection to its unix socket, starts CMD with the same environment and
// stdio, passes SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGQUIT and SIGUSR1/2 on
// to it, and returns its exit code (128+n when it died of signal n; 127
// when it could not be started; 2 for a bad command line; 137 when tare was
// gone).
func Main(args []string) int {
	ra, err := parseRelayArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare relay: %v\n", err)
		return 2
	}
	// Nothing in the room may open this process's descriptors through
	// /proc/2/fd (the lifeline above all: see lifeline.go).
	if err := NotDumpable(); err != nil {
		fmt.Fprintf(os.Stderr, "tare relay: %v\n", err)
		return 2
	}
	if err := closeInherited(ra.lifeline); err != nil {
		fmt.Fprintf(os.Stderr, "tare relay: %v\n", err)
		return 2
	}
	if ra.lifeline > 0 {
		err := watchLifeline(ra.lifeline, func() {
			endRoom()
			os.Exit(128 + int(syscall.SIGKILL))
		})
		if errors.Is(err, errLifelineCut) {
			fmt.Fprintf(os.Stderr, "tare relay: %v: the room ends before %s starts\n", err, ra.argv[0])
			return 128 + int(syscall.SIGKILL)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tare relay: %v\n", err)
			return 2
		}
	}
	for _, l := range ra.listens {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tare relay: listen %s: %v: pick another Relay.Port\n", l.addr, err)
			return 2
		}
		go acceptTo(ln, l.sock)
	}

	argv := ra.argv
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, relaySignals...)
	pid, err := startCommand(argv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare relay: start %s: %v: check the command and the room's PATH\n", argv[0], err)
		if errors.Is(err, os.ErrPermission) {
			return 126
		}
		return 127
	}
	// The command is this process's child, unreaped until wait returns, so its pid cannot
	// name another process while signals are passed on; done stops them before it is reaped.
	var mu sync.Mutex
	done := false
	go func() {
		for s := range sigs {
			mu.Lock()
			if !done {
				_ = syscall.Kill(pid, s.(syscall.Signal))
			}
			mu.Unlock()
		}
	}()
	ws, err := waitCommand(pid, func() {
		mu.Lock()
		done = true
		mu.Unlock()
	})
	signal.Stop(sigs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare relay: wait for %s: %v\n", argv[0], err)
		return 127
	}
	return exitCode(ws)
}

// startCommand starts argv with this process's environment, working folder and stdio (0, 1
// and 2 only: everything else this process holds is close-on-exec by now). It calls
// syscall.ForkExec, not os/exec: os/exec's first start in a process forks a throwaway child to
// check that pidfds work, one more process in every room's start.
func startCommand(argv []string) (int, error) {
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return 0, err
	}
	pid, err := syscall.ForkExec(bin, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return 0, &os.PathError{Op: "fork/exec", Path: bin, Err: err}
	}
	return pid, nil
}

// waitCommand waits for pid to end without reaping it first (waitid with WNOWAIT), calls
// ending, then reaps it: ending runs while the pid still belongs to the ended command.
func waitCommand(pid int, ending func()) (syscall.WaitStatus, error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		break
	}
	ending()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return ws, err
	}
}

// NotDumpable takes this process out of reach of the room's other processes. They all
// share its uid, so the kernel lets any of them open its /proc/PID/mem (read and write) and
// its descriptors through /proc/PID/fd unless it is not dumpable; seccomp's ban on ptrace
// and process_vm_* does not cover those files. Every tare process that runs beside the agent
// calls it first. It holds until the process execs: a command it starts is dumpable again.
func NotDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make this process non-dumpable (PR_SET_DUMPABLE): %v", err)
	}
	return nil
}

// closeInherited closes every descriptor above 2 this process inherited
// (those without close-on-exec: Go opens its own with it), but keep, so the
// command sees only 0, 1 and 2 (and bwrap's info pipe stays out of reach).
func closeInherited(keep int) error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list inherited descriptors: %v", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 || fd == keep {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
	return nil
}

// exitCode is the command's exit code, 128+n when it died of signal n.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

type relayListen struct{ addr, sock string }

// relayArgs is a parsed `tare relay` command line.
type relayArgs struct {
	lifeline int // 0 = none
	listens  []relayListen
	argv     []string
}

const relayUsage = "usage: tare relay [--lifeline FD] [--owner ID] --listen 127.0.0.1:PORT=/run/tare/NAME.sock ... -- CMD ARGS"

// flagValue returns the value of flag name at args[*i] (as "--name=V" or "--name V"),
// advancing *i past a separate value; ok is false when args[*i] is another flag.
func flagValue(args []string, i *int, name string) (v string, ok bool, err error) {
	a := args[*i]
	if v, ok := strings.CutPrefix(a, name+"="); ok {
		return v, true, nil
	}
	if a != name {
		return "", false, nil
	}
	if *i+1 >= len(args) {
		return "", true, fmt.Errorf("%s needs a value: %s", name, relayUsage)
	}
	*i++
	return args[*i], true, nil
}

func parseRelayArgs(args []string) (relayArgs, error) {
	var ra relayArgs
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			if i+1 >= len(args) || args[i+1] == "" {
				return relayArgs{}, errors.New("no command after --: " + relayUsage)
			}
			ra.argv = args[i+1:]
			return ra, nil
		}
		if v, ok, err := flagValue(args, &i, "--lifeline"); ok {
			if err != nil {
				return relayArgs{}, err
			}
			fd, err := strconv.Atoi(v)
			if err != nil || fd < 3 {
				return relayArgs{}, fmt.Errorf("--lifeline %q: give the descriptor number (3 or more) of the lifeline's read end", v)
			}
			ra.lifeline = fd
			continue
		}
		if _, ok, err := flagValue(args, &i, "--owner"); ok {
			// The owner is read from /proc/PID/cmdline by a later tare's sweep; the relay
			// itself has no use for it.
			if err != nil {
				return relayArgs{}, err
			}
			continue
		}
		v, ok, err := flagValue(args, &i, "--listen")
		if err != nil {
			return relayArgs{}, err
		}
		if !ok {
			return relayArgs{}, fmt.Errorf("unknown argument %q: %s", args[i], relayUsage)
		}
		addr, sock, ok := strings.Cut(v, "=")
		if !ok || addr == "" || sock == "" {
			return relayArgs{}, fmt.Errorf("--listen %q: write it as 127.0.0.1:PORT=/run/tare/NAME.sock", v)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return relayArgs{}, fmt.Errorf("--listen %q: %v: write the address as 127.0.0.1:PORT", v, err)
		}
		ra.listens = append(ra.listens, relayListen{addr, sock})
	}
	return relayArgs{}, errors.New("missing -- CMD: " + relayUsage)
}

func acceptTo(ln net.Listener, sock string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", sock)
			if err != nil {
				fmt.Fprintf(os.Stderr, "tare relay: %s: %v\n", sock, err)
				return
			}
			defer u.Close()
			Pipe(c, io.Reader(c), u)
		}()
	}
}

// closeWriter is a connection that can half-close (TCP and unix sockets).
type closeWriter interface{ CloseWrite() error }

// Pipe copies a (read through ar, which may hold bytes already buffered
// from a) to b and b to a until both directions end, passing each EOF on as
// a half-close so request/response protocols finish cleanly.
func Pipe(a net.Conn, ar io.Reader, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		halfClose(io.Copy(b, ar))(a, b)
	}()
	go func() {
		defer wg.Done()
		halfClose(io.Copy(a, b))(b, a)
	}()
	wg.Wait()
}

// halfClose ends one direction of a pipe from src to dst: a clean EOF is
// passed on as a half-close of dst; an error tears down both connections so
// the other direction cannot block forever.
func halfClose(_ int64, err error) func(src, dst net.Conn) {
	return func(src, dst net.Conn) {
		if cw, ok := dst.(closeWriter); ok && err == nil {
			cw.CloseWrite()
			return
		}
		src.Close()
		dst.Close()
	}
}
