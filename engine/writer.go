package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/room"
	"tare/engine/run"
	"tare/sandbox"
)

// WriterOptions is one headless agent session in a room over a folder of the caller's: the
// workshop's writers (tare workshop run). The folder is the room's /work; ReadOnly are paths
// below it the room sees read-only (the frozen input and the writer's START.md).
type WriterOptions struct {
	Agent string
	// Model is the model the agent asks for; empty leaves the agent's default.
	Model string
	// Args are extra arguments for the agent's command line.
	Args      []string
	Workspace string
	ReadOnly  []string
	// Env is the environment image the writer's room is rooted in (--env; nil: the host's),
	// the workspace at its WORKDIR; a node finds it by digest or builds it from its folder.
	Env *run.Env
	// Sessions is a host folder bound at the agent's session root, so the session outlives the
	// room and a later resume finds it.
	Sessions string
	Prompt   string
	// Resume, when set, continues this session id (found below Sessions) with Prompt.
	Resume string
	// Upstream is tare's model server ("host:port"); empty reaches the real provider through
	// tare's proxy with the agent's login copy.
	Upstream string
	Timeout  time.Duration
	// ExitGrace is how long a writer that answered is given to exit (WriterExitGrace if 0).
	ExitGrace time.Duration
	Config    *config.Config
	// Events and Stderr are files created for the agent's stdout and stderr; neither may exist.
	Events, Stderr string
	// Started is called with the room's process id and the agent's command line once it runs.
	Started func(pid int, argv []string)
}

// WriterEnd is how a writer's session ended, as its own stream and exit tell.
type WriterEnd struct {
	Argv      []string            `json:"argv"`
	Version   string              `json:"agent_version,omitempty"`
	Exit      int                 `json:"exit"`
	TimedOut  bool                `json:"timed_out,omitempty"`
	Error     string              `json:"error,omitempty"`
	SessionID string              `json:"session_id,omitempty"`
	Answer    string              `json:"answer,omitempty"`
	Usage     journal.Usage       `json:"usage"`
	Stop      *agent.ProviderStop `json:"provider_stop,omitempty"`
	Models    []agent.ModelUsage  `json:"models,omitempty"`
	Requests  int                 `json:"requests,omitempty"`
	Peak      int64               `json:"peak_request,omitempty"`
	Declared  []string            `json:"declared,omitempty"`
	// Answered is set when the writer answered and did not exit, and tare stopped it.
	Answered *AnsweredStop `json:"stopped_after_answer,omitempty"`
}

// FindWriterAgent locates an agent's CLI as tare's runs do, refusing one inside the folders.
func FindWriterAgent(name string, cfg *config.Config, folders ...string) (agent.Install, error) {
	a, err := agent.ByName(name)
	if err != nil {
		return agent.Install{}, err
	}
	return room.FindAgent(a, cfg, folders...)
}

// ProbeWriterRoom proves the room an agent would get over workspace clean, as every run of
// tare does before it starts one, stores the reading for the app, and refuses a reading that is
// not "tare: 0.00".
func ProbeWriterRoom(ctx context.Context, name, workspace string, cfg *config.Config, progress io.Writer) (string, error) {
	a, err := agent.ByName(name)
	if err != nil {
		return "", err
	}
	reading, err := probe.Probe(ctx, probe.ProbeOptions{Agent: a, Project: workspace, Config: cfg, Progress: progress})
	if err != nil {
		return "", err
	}
	_ = probe.StoreReading(cfg.StateDir, reading)
	if !reading.Zero() {
		return reading.Verdict(), fmt.Errorf("%s: %s; %v", name, reading.Verdict(), ErrDirty)
	}
	return reading.Verdict(), nil
}

// Writers runs the workshop's writers' sessions where --on says: here, or one Slurm job each
// (Cluster). The workshop holds it and never asks which; a writer's drafts, session, stdout
// and stderr land in the same places either way.
type Writers interface {
	// RunWriter runs writer id's session to its end, as the package's RunWriter does here.
	// An error means it did not run; how the agent, or Slurm, ended it is in WriterEnd.
	// placed hears a job's place on a cluster (pending, running on a node, finished).
	RunWriter(ctx context.Context, id string, o WriterOptions, inst agent.Install, placed func(journal.Placed)) (WriterEnd, error)
}

// OpenWriters is where the writers of --on on run, refused before anything is written or
// submitted when on is not a backend or Slurm could not run a writer.
func OpenWriters(ctx context.Context, on string, cfg *config.Config) (Writers, error) {
	if err := CheckOn(on); err != nil {
		return nil, err
	}
	if on != OnSlurm {
		return localWriters{}, nil
	}
	c, err := OpenCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// localWriters runs writers in this process's rooms, where nothing is ever placed.
type localWriters struct{}

func (localWriters) RunWriter(ctx context.Context, _ string, o WriterOptions, inst agent.Install, _ func(journal.Placed)) (WriterEnd, error) {
	return RunWriter(ctx, o, inst)
}

// RunWriter runs one writer's session in a room to its end and reads its stream. An error
// means the room could not be built or started; how the agent itself ended is in WriterEnd.
func RunWriter(ctx context.Context, o WriterOptions, inst agent.Install) (WriterEnd, error) {
	a, err := agent.ByName(o.Agent)
	if err != nil {
		return WriterEnd{}, err
	}
	image, err := envImage(ctx, o.Env, o.Config, nil)
	if err != nil {
		return WriterEnd{}, err
	}
	p := room.Plan{Agent: a, Inst: inst, Config: o.Config, Workspace: o.Workspace, Guard: o.ReadOnly, Sessions: o.Sessions,
		Login: o.Upstream == "", Model: o.Model, Image: image}
	var placed []byte
	if o.Resume != "" {
		if placed, err = room.ReadSession(a, o.Sessions, o.Resume); err != nil {
			return WriterEnd{}, fmt.Errorf("resuming session %s: %v", o.Resume, err)
		}
	}
	box, setup, err := room.Build(p, o.Upstream)
	if err != nil {
		return WriterEnd{}, err
	}
	args := append(append(setup.Args, o.Config.Agents[a.Name()].Args...), o.Args...)
	if o.Resume != "" {
		box.Argv = append([]string{inst.Command}, a.ResumeArgs(o.Resume, o.Prompt, args)...)
	} else {
		box.Argv = append([]string{inst.Command}, a.RunArgs(o.Prompt, args)...)
	}
	end := WriterEnd{Argv: box.Argv, Version: inst.Version, Declared: setup.Declared}
	stdout, err := os.OpenFile(o.Events, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return end, err
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(o.Stderr, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return end, err
	}
	defer stderr.Close()
	box.Stdout, box.Stderr = stdout, stderr
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultAgentTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	actx, stopRoom := context.WithCancelCause(tctx)
	defer stopRoom(nil)
	proc, err := sandbox.Start(actx, box)
	if err != nil {
		return end, err
	}
	if o.Started != nil {
		o.Started(proc.Pid(), box.Argv)
	}
	grace := o.ExitGrace
	if grace <= 0 {
		grace = WriterExitGrace
	}
	watch := watchAnswer(a, o.Events, grace, stopRoom)
	end.Exit, err = proc.Wait()
	if watch.end() && errors.Is(context.Cause(actx), errAnswered) {
		end.Answered = &AnsweredStop{Grace: grace.Seconds(), Exit: end.Exit}
	} else if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		end.TimedOut = true
		end.Error = fmt.Sprintf("stopped at the timeout (%s); the partial draft is kept", timeout.Round(time.Second))
	} else if err != nil {
		end.Error = err.Error()
	}
	if r, perr := parseStreamFile(a, o.Events); perr == nil {
		end.SessionID, end.Answer = r.SessionID, r.Text
		u := runUsage(a, r, placed, o.Sessions)
		end.Models = runModels(a, r, u, placed, o.Sessions)
		end.Usage = usageOf(u, end.Models...)
		for _, m := range end.Models {
			for _, q := range m.Requests {
				end.Requests++
				if n := q.Input + q.CacheRead + q.CacheWrite; n > end.Peak {
					end.Peak = n
				}
			}
		}
		if r.IsError && end.Error == "" {
			end.Error = "agent error: " + run.Clip(r.Error, 200)
		}
	}
	if end.SessionID == "" && o.Resume != "" {
		end.SessionID = o.Resume
	}
	if stop, ok := streamStop(a, o.Events, o.Stderr); ok {
		end.Stop = &stop
	}
	return end, nil
}

// WriterSessionFile reads session id's file that agent name wrote below sessions (the host
// folder bound at its session root), following no symlink the room may have planted.
func WriterSessionFile(name, sessions, id string) ([]byte, error) {
	a, err := agent.ByName(name)
	if err != nil {
		return nil, err
	}
	return room.ReadSession(a, filepath.Clean(sessions), id)
}

// RunManualWriter runs a writer's agent interactive on the operator's terminal t, in the same
// room a headless writer gets, every byte it shows also written to log (the writer's
// terminal.log). It returns the agent's exit code.
func RunManualWriter(ctx context.Context, o WriterOptions, inst agent.Install, t Terminal, log io.Writer) (int, []string, error) {
	if t == nil {
		return 0, nil, errors.New("a manual writer needs a terminal: run tare workshop manual from one")
	}
	a, err := agent.ByName(o.Agent)
	if err != nil {
		return 0, nil, err
	}
	image, err := envImage(ctx, o.Env, o.Config, nil)
	if err != nil {
		return 0, nil, err
	}
	p := room.Plan{Agent: a, Inst: inst, Config: o.Config, Workspace: o.Workspace, Guard: o.ReadOnly, Sessions: o.Sessions,
		Login: o.Upstream == "", Model: o.Model, Image: image}
	box, setup, err := room.Build(p, o.Upstream)
	if err != nil {
		return 0, nil, err
	}
	// Permission prompts off, as for a headless writer: the room is the boundary.
	box.Argv = append([]string{inst.Command}, a.AttachArgs(append(append(setup.Args, o.Config.Agents[a.Name()].Args...), o.Args...), true)...)
	code, err := runOnTerminal(ctx, t, box, log)
	return code, box.Argv, err
}
