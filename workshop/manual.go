package workshop

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"tare/engine"
)

// Manual runs a writer by hand: its agent attached on the operator's terminal t (nil: there
// is none, and the writer is refused), its messages on out, in the same
// room an auto writer gets (proven clean first, input and START.md read-only), the terminal
// recorded to records/ID/terminal.log. This tare's own process identity is recorded while
// it runs, so a second launch is refused while the first lives. The writer is collected when
// the agent exits; its declared outputs decide, as for any writer.
func Manual(ctx context.Context, e *Exp, id string, o RunOptions, t engine.Terminal, out io.Writer) (*State, error) {
	s, unlock, err := e.idle(id, "launch it twice")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s.Status != StatusPrepared {
		return nil, fmt.Errorf("writer %s is %s; collect its evidence, or retry it as a new writer", id, s.Status)
	}
	srv, err := startScripts(e, o)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	work, rec := e.Work(id), e.Record(id)
	inst, err := engine.FindWriterAgent(s.Config.Agent, o.Config, e.Root)
	if err != nil {
		return nil, fmt.Errorf("writer %s: %v", id, err)
	}
	verdict, err := engine.ProbeWriterRoom(ctx, s.Config.Agent, work, o.Config, nil)
	if err != nil {
		return nil, fmt.Errorf("writer %s: not started: %v", id, err)
	}
	up, err := srv.upstream(id)
	if err != nil {
		return nil, err
	}
	sessions := filepath.Join(rec, "session")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(rec, "terminal.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	now := time.Now().UTC()
	s.Status, s.StartedAt, s.Manual, s.ProbeVerdict = StatusRunning, &now, true, verdict
	s.PID, s.Identity = os.Getpid(), processIdentity(os.Getpid())
	if err := e.saveState(id, s); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "workshop: %s by hand in a room proven clean (%s); tell it to read /work/START.md; exit the agent when done\r\n", id, verdict)
	code, argv, err := engine.RunManualWriter(ctx, engine.WriterOptions{Agent: s.Config.Agent, Model: s.Config.Model, Args: append(effortArgs(s.Config.Agent, s.Config.Effort), s.Config.Args...),
		Workspace: work, ReadOnly: []string{"input", "START.md"}, Env: o.Env, Sessions: sessions, Upstream: up, Config: o.Config}, inst, t, log)
	ended := time.Now().UTC()
	s.EndedAt, s.PID, s.Identity, s.Exit = &ended, 0, "", &code
	if err != nil {
		s.Status, s.Error = StatusFailed, "not started: "+err.Error()
		_ = e.saveState(id, s)
		return s, fmt.Errorf("writer %s: %v", id, err)
	}
	if err := writeJSON(filepath.Join(rec, "receipt.json"), engine.WriterEnd{Argv: argv, Version: inst.Version, Exit: code}); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(rec, "launch.json"), map[string]any{"argv": argv, "agent_version": inst.Version,
		"model_server": up != "", "probe": verdict, "manual": true, "workspace": work}); err != nil {
		return nil, err
	}
	if err := e.saveState(id, s); err != nil {
		return nil, err
	}
	return collectLocked(e, id, nil)
}
