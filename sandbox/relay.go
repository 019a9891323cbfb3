package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

// relaySignals are passed on from the relay to the command it started.
var relaySignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// RelayMain is `tare relay --listen 127.0.0.1:PORT=/run/tare/NAME.sock ...
// -- CMD ARGS`, run inside a room as its command. It binds every listener
// first (so the agent never races a missing port), then forwards each TCP
// connection to its unix socket, starts CMD with the same environment and
// stdio, passes SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGQUIT and SIGUSR1/2 on
// to it, and returns its exit code (128+n when it died of signal n; 127
// when it could not be started; 2 for a bad command line).
func RelayMain(args []string) int {
	listens, argv, err := parseRelayArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare relay: %v\n", err)
		return 2
	}
	for _, l := range listens {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tare relay: listen %s: %v: pick another Relay.Port\n", l.addr, err)
			return 2
		}
		go acceptTo(ln, l.sock)
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, relaySignals...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "tare relay: start %s: %v: check the command and the room's PATH\n", argv[0], err)
		if errors.Is(err, os.ErrPermission) {
			return 126
		}
		return 127
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	return exitCode(cmd.ProcessState, err)
}

func exitCode(st *os.ProcessState, err error) int {
	if st == nil {
		return 127
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

type relayListen struct{ addr, sock string }

func parseRelayArgs(args []string) ([]relayListen, []string, error) {
	var ls []relayListen
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 >= len(args) || args[i+1] == "" {
				return nil, nil, errors.New("no command after --: usage: tare relay --listen 127.0.0.1:PORT=/run/tare/NAME.sock ... -- CMD ARGS")
			}
			return ls, args[i+1:], nil
		case a == "--listen" || strings.HasPrefix(a, "--listen="):
			v, ok := strings.CutPrefix(a, "--listen=")
			if !ok {
				if i+1 >= len(args) {
					return nil, nil, errors.New("--listen needs a value: 127.0.0.1:PORT=/run/tare/NAME.sock")
				}
				i++
				v = args[i]
			}
			addr, sock, ok := strings.Cut(v, "=")
			if !ok || addr == "" || sock == "" {
				return nil, nil, fmt.Errorf("--listen %q: write it as 127.0.0.1:PORT=/run/tare/NAME.sock", v)
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return nil, nil, fmt.Errorf("--listen %q: %v: write the address as 127.0.0.1:PORT", v, err)
			}
			ls = append(ls, relayListen{addr, sock})
		default:
			return nil, nil, fmt.Errorf("unknown argument %q: usage: tare relay --listen 127.0.0.1:PORT=/run/tare/NAME.sock ... -- CMD ARGS", a)
		}
	}
	return nil, nil, errors.New("missing -- CMD: usage: tare relay --listen 127.0.0.1:PORT=/run/tare/NAME.sock ... -- CMD ARGS")
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
			pipe(c, io.Reader(c), u)
		}()
	}
}
