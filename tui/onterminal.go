package tui

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/term"

	"tare/engine"
)

// OnTerminal is the operator's terminal (in, out) for an interactive agent (tare claude,
// tare workshop manual), or nil when in is not a terminal: the agent then gets pipes.
func OnTerminal(in, out *os.File) engine.Terminal {
	if !term.IsTerminal(int(in.Fd())) {
		return nil
	}
	return func(ctx context.Context, start func(tty *os.File) (engine.Process, error), tee io.Writer) (int, error) {
		if tee != nil {
			return runOnPty(ctx, in, io.MultiWriter(out, tee), start)
		}
		return runOnPty(ctx, in, out, start)
	}
}

// runOnPty runs the agent start starts on a new pty whose other end is copied to and from
// the caller's terminal, which is put in raw mode so every key (Ctrl-C included) reaches
// the agent.
func runOnPty(ctx context.Context, in *os.File, out io.Writer, start func(tty *os.File) (engine.Process, error)) (int, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return 0, fmt.Errorf("opening a pty: %v", err)
	}
	defer master.Close()
	if size, err := pty.GetsizeFull(in); err == nil {
		_ = pty.Setsize(master, size)
	}
	proc, err := start(slave)
	slave.Close() // the room holds its own copy
	if err != nil {
		return 0, err
	}
	state, err := term.MakeRaw(int(in.Fd()))
	if err == nil {
		defer func() { _ = term.Restore(int(in.Fd()), state) }()
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-winch:
				if size, err := pty.GetsizeFull(in); err == nil {
					_ = pty.Setsize(master, size)
					// The room's command runs in a session of its own (bwrap --new-session),
					// not the pty's, so the kernel signals nobody in the room: without this
					// the agent keeps drawing for the old size (its input line falls off a
					// shrunk screen, its lines stay cut on a grown one).
					_ = proc.Signal(syscall.SIGWINCH)
				}
			case <-done:
				return
			}
		}
	}()
	go func() { _, _ = io.Copy(master, in) }() // ends with the process: stdin has no deadline
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, master); close(copied) }()
	code, err := proc.Wait()
	<-copied // the pty's last output reaches the terminal before tare returns
	close(done)
	wg.Wait()
	return code, err
}
