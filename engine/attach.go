package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine/gitguard"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/room"
	"tare/modelserver"
	"tare/sandbox"
)

// AttachOptions says which agent to run attached, where, and against what.
type AttachOptions struct {
	Agent   agent.Agent
	Project string
	// Env is an environment folder whose image roots the room (--env; "": the host's); the
	// project is bound at the image's WORKDIR (and at /work, where the agent starts).
	Env    string
	Config *config.Config
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
	// Terminal, when set, runs the agent on the caller's terminal (keys, Ctrl-C included, go
	// to the agent); nil runs it on pipes to Stdin, Stdout and Stderr.
	Terminal Terminal
}

// Validate checks the options before anything is started, and makes the project's path
// absolute; a script puts the agent on tare's own model server (Offline). Every bad input is
// one line naming the flag and the fix.
func (o *AttachOptions) Validate() error {
	var err error
	if o.Project, err = probe.ProjectDir(o.Project, o.AllowDirty); err != nil {
		return err
	}
	if o.Env, err = checkEnv(o.Env); err != nil {
		return err
	}
	if o.Script != "" {
		o.Offline = true
		if _, err := modelserver.LoadScript(o.Script); err != nil {
			return err
		}
	}
	return nil
}

// ErrDirty is returned when the reading is not "tare: 0.00" and --allow-dirty was not given.
var ErrDirty = errors.New("not starting, because the room is not proven clean; fix what the reading names, or pass --allow-dirty")

// Attach probes the room, then runs the agent in it on the caller's Terminal (or on pipes)
// and returns the agent's exit code. Ctrl-C belongs to the agent;
// tare removes the room on every exit path, signals included.
func Attach(ctx context.Context, o AttachOptions) (int, error) {
	if err := o.Validate(); err != nil {
		return 0, err
	}
	if o.Stdin == nil {
		o.Stdin, o.Stdout, o.Stderr = os.Stdin, os.Stdout, os.Stderr
	}
	image, err := attachImage(ctx, o)
	if err != nil {
		return 0, err
	}
	reading, err := probe.Probe(ctx, probe.ProbeOptions{Agent: o.Agent, Project: o.Project, Config: o.Config, Progress: o.Stderr, HostNetwork: o.HostNetwork, AllowDirty: o.AllowDirty})
	if err != nil {
		return 0, err
	}
	fmt.Fprint(o.Stderr, journal.Printable(reading.Render())) // it names files of the project, whose names the agent chose
	if !reading.Zero() {
		if !o.AllowDirty {
			return 0, ErrDirty
		}
		fmt.Fprintf(o.Stderr, "tare: --allow-dirty given: running %s in a room whose reading is %q\n", o.Agent.Name(), reading.Verdict())
	}
	inst, err := room.FindAgent(o.Agent, o.Config, o.Project)
	if err != nil {
		return 0, err
	}
	// The room writes the real project: git on the host must not run what it leaves in .git.
	git, err := gitguard.New(ctx, o.Project, o.Config.Programs["git"])
	if err != nil {
		return 0, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		git.After(ctx, o.Stderr)
	}()
	p := room.Plan{Agent: o.Agent, Inst: inst, Config: o.Config, Workspace: o.Project, HostNet: o.HostNetwork, Login: o.Login && !o.Offline, Guard: git.Paths}
	p.Image = image
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
	box, setup, err := room.Build(p, upstream)
	if err != nil {
		return 0, err
	}
	box.Argv = append([]string{inst.Command}, o.Agent.AttachArgs(append(append(setup.Args, o.Config.Agents[o.Agent.Name()].Args...), o.Args...), o.Yolo)...)
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

	if o.Terminal == nil {
		// The room gets pipes sandbox.Start copies to and from these, never the files: the
		// reading just printed to o.Stderr must not be readable through /proc/1/fd/2.
		box.Stdin, box.Stdout, box.Stderr = o.Stdin, o.Stdout, o.Stderr
		return room.Run(ctx, box)
	}
	return runOnTerminal(ctx, o.Terminal, box, nil)
}

// Process is a started agent as a Terminal sees it: it can be signalled (a window-size
// change) and waited for.
type Process interface {
	Signal(os.Signal) error
	Wait() (int, error)
}

// Terminal runs an interactive agent on the caller's terminal. It calls start with the file
// the room is to get as its terminal (the other end of a pty it serves), copies between its
// terminal and that pty until the agent exits, also to tee when not nil (what the agent
// shows), and returns the agent's exit code. The engine knows nothing of terminals: the
// caller brings one (tui.OnTerminal).
type Terminal func(ctx context.Context, start func(tty *os.File) (Process, error), tee io.Writer) (int, error)

// runOnTerminal runs room on t.
func runOnTerminal(ctx context.Context, t Terminal, room sandbox.Room, tee io.Writer) (int, error) {
	return t(ctx, func(tty *os.File) (Process, error) {
		room.TTY = tty
		proc, err := sandbox.Start(ctx, room)
		if err != nil {
			return nil, err // not a nil *sandbox.Proc in a non-nil Process
		}
		return proc, nil
	}, tee)
}

// attachImage is the image the attached room is rooted in (--env), built or found in the
// cache before anything starts; nil for the host's.
func attachImage(ctx context.Context, o AttachOptions) (*sandbox.Image, error) {
	e, err := buildEnv(ctx, o.Env, o.Config, o.Stderr)
	if err != nil || e == nil {
		return nil, err
	}
	return roomOf(ctx, *e, o.Config)
}
