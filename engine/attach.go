package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"tare/agent"
	"tare/config"
	"tare/modelserver"
	"tare/sandbox"
)

// AttachOptions says which agent to run attached, where, and against what.
type AttachOptions struct {
	Agent   agent.Agent
	Project string
	Config  *config.Config
	// Args go to the agent after its own interactive arguments.
	Args []string
	// AllowDirty starts the agent even when the reading is not "tare: 0.00".
	AllowDirty bool
	// Yolo skips the agent's permission prompts; the room stays.
	Yolo bool
	// Offline points the agent at tare's own model server instead of its real provider.
	Offline bool
	// Script is the model server's script when Offline (empty: probe mode).
	Script string
	// Login places the agent's login copy in the room (real provider only).
	Login bool
	// HostNetwork shares the host's network (an explicit opt-in, shown in the reading).
	HostNetwork bool
	// Stdin, Stdout and Stderr default to the process's own.
	Stdin, Stdout, Stderr *os.File
}

// ErrDirty is returned when the reading is not "tare: 0.00" and --allow-dirty was not given.
var ErrDirty = errors.New("not starting, because the room is not proven clean; fix what the reading names, or pass --allow-dirty")

// Attach probes the room, then runs the agent in it on the caller's terminal (through a pty
// when stdin is a terminal) and returns the agent's exit code. Ctrl-C belongs to the agent;
// tare removes the room on every exit path, signals included.
func Attach(ctx context.Context, o AttachOptions) (int, error) {
	if o.Stdin == nil {
		o.Stdin, o.Stdout, o.Stderr = os.Stdin, os.Stdout, os.Stderr
	}
	reading, err := Probe(ctx, ProbeOptions{Agent: o.Agent, Project: o.Project, Config: o.Config, Progress: o.Stderr, HostNetwork: o.HostNetwork, AllowDirty: o.AllowDirty})
	if err != nil {
		return 0, err
	}
	fmt.Fprint(o.Stderr, Printable(reading.Render())) // it names files of the project, whose names the agent chose
	if !reading.Zero() {
		if !o.AllowDirty {
			return 0, ErrDirty
		}
		fmt.Fprintf(o.Stderr, "tare: --allow-dirty given: running %s in a room whose reading is %q\n", o.Agent.Name(), reading.Verdict())
	}
	inst, err := findAgent(o.Agent, o.Config, o.Project)
	if err != nil {
		return 0, err
	}
	// The room writes the real project: git on the host must not run what it leaves in .git.
	git, err := guardGit(ctx, o.Project)
	if err != nil {
		return 0, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		git.after(ctx, o.Stderr)
	}()
	p := plan{agent: o.Agent, inst: inst, cfg: o.Config, workspace: o.Project, hostNet: o.HostNetwork, login: o.Login && !o.Offline, guard: git.paths}
	upstream := ""
	if o.Offline {
		opts := modelserver.Options{}
		if o.Script != "" {
			s, err := modelserver.LoadScript(o.Script)
			if err != nil {
				return 0, err
			}
			opts.Script = s
		}
		srv, err := modelserver.New(opts)
		if err != nil {
			return 0, err
		}
		if err := srv.Start("127.0.0.1:0"); err != nil {
			return 0, err
		}
		defer srv.Close()
		upstream = srv.Addr()
	}
	room, setup, err := buildRoom(p, upstream, nil)
	if err != nil {
		return 0, err
	}
	room.Argv = append([]string{inst.Command}, o.Agent.AttachArgs(append(append(setup.args, o.Config.Agents[o.Agent.Name()].Args...), o.Args...), o.Yolo)...)
	// The probe read a room pointed at tare's model server; the run's room differs in what
	// it declares (the login copy, the way out), so say exactly what this one holds.
	fmt.Fprintf(o.Stderr, "tare: starting %s in a room that declares:\n", o.Agent.Name())
	for _, d := range setup.Declared {
		fmt.Fprintf(o.Stderr, "  declared  %s\n", d)
	}

	// Ctrl-C is the agent's: tare must not die of it and take the room away mid-turn.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)

	if !term.IsTerminal(int(o.Stdin.Fd())) {
		// The room gets pipes sandbox.Start copies to and from these, never the files: the
		// reading just printed to o.Stderr must not be readable through /proc/1/fd/2.
		room.Stdin, room.Stdout, room.Stderr = o.Stdin, o.Stdout, o.Stderr
		return runRoom(ctx, room)
	}
	return runOnPty(ctx, room, o.Stdin, o.Stdout)
}

// runOnPty runs the room on a new pty whose other end is copied to and from the caller's
// terminal, which is put in raw mode so every key (Ctrl-C included) reaches the agent.
func runOnPty(ctx context.Context, room sandbox.Room, in, out *os.File) (int, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return 0, fmt.Errorf("opening a pty: %v", err)
	}
	defer master.Close()
	if size, err := pty.GetsizeFull(in); err == nil {
		_ = pty.Setsize(master, size)
	}
	room.TTY = slave
	proc, err := sandbox.Start(ctx, room)
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
