package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine"
	"tare/engine/journal"
	"tare/engine/probe"
	enginerun "tare/engine/run"
	"tare/tui"
)

// appEngine carries out the app's actions with the same calls the command line makes. What
// outlives the app (a run started, resumed or retried) is started as a tare process of its
// own, in a session of its own, so closing the app or dropping an ssh session never ends it.
type appEngine struct {
	cfg *config.Config
	exe string
	// project is where the app was started: probes and attached agents work there.
	project string
}

func newAppEngine(cfg *config.Config) (*appEngine, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return &appEngine{cfg: cfg, exe: exe, project: wd}, nil
}

// Probe takes a new reading, as tare probe does, and stores it for the probes pane.
func (e *appEngine) Probe(ctx context.Context, name string) error {
	a, err := agent.ByName(name)
	if err != nil {
		return err
	}
	r, err := probe.Probe(ctx, probe.ProbeOptions{Agent: a, Project: e.project, Config: e.cfg})
	if err != nil {
		return err
	}
	return probe.StoreReading(e.cfg.StateDir, r)
}

// Resume continues a crashed run in a process of its own, as tare resume DIR.
func (e *appEngine) Resume(ctx context.Context, dir string) error {
	if enginerun.Alive(dir) {
		return fmt.Errorf("%s is running in another tare: nothing to resume", dir)
	}
	return e.detach("resume", dir)
}

// Retry reruns a finished tail in a process of its own, as tare resume DIR --retry ID.
func (e *appEngine) Retry(ctx context.Context, dir, tail string) error {
	if enginerun.Alive(dir) {
		return fmt.Errorf("%s is still running; retry %s once it ends", dir, tail)
	}
	return e.detach("resume", dir, "--retry", tail)
}

// Delete removes a run's folder once no process owns it. The folder is first moved out of
// the runs' place (<state>/<command>/<name>/) in one rename, so a crash halfway leaves no
// half run for the app to list (a .deleting folder, at worst, to remove by hand).
func (e *appEngine) Delete(ctx context.Context, dir string) error {
	if enginerun.Alive(dir) {
		return fmt.Errorf("%s is live: it is deleted once no process owns it", dir)
	}
	state, err := filepath.Abs(e.cfg.StateDir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(state, dir)
	if err != nil || strings.Count(rel, string(filepath.Separator)) != 1 || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not a run of the state directory %s: only runs tare keeps there are deleted from the app", dir, state)
	}
	if _, err := os.Stat(filepath.Join(dir, journal.JournalFile)); err != nil {
		return fmt.Errorf("%s has no journal: not a run; delete it by hand if it is yours", dir)
	}
	gone := filepath.Join(state, "."+strings.ReplaceAll(rel, string(filepath.Separator), "-")+".deleting")
	if err := os.Rename(dir, gone); err != nil {
		return fmt.Errorf("delete %s: %v", dir, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("delete %s: %v; remove %s by hand", dir, err, gone)
	}
	return nil
}

// Kill asks the process running the tail to stop it, counted in the rate as the operator said.
func (e *appEngine) Kill(ctx context.Context, dir, tail string, as journal.KillAs) error {
	return enginerun.RequestKill(dir, tail, as)
}

// StartCalibrate starts tare calibrate with the form's values and returns the run's
// directory once its journal exists.
func (e *appEngine) StartCalibrate(ctx context.Context, c tui.Calibrate) (string, error) {
	// The form's paths are the app's folder's: "." names the run after that folder, not ".".
	project := c.Project
	if !filepath.IsAbs(project) {
		project = filepath.Join(e.project, project)
	}
	// The folder is made here, so its name is this run's alone; the run starts in it.
	dir, err := enginerun.MakeFreeDir(filepath.Join(e.cfg.StateDir, "calibrate"), project, time.Now())
	if err != nil {
		return "", err
	}
	args := []string{"calibrate", c.Prompt, "--project", project, "--out", dir,
		"--runs", fmt.Sprint(max(c.Runs, 1)), "--jobs", fmt.Sprint(max(c.Jobs, 1))}
	if c.Check != "" {
		args = append(args, "--check", c.Check)
	}
	if c.CheckTimeout > 0 {
		args = append(args, "--check-timeout", c.CheckTimeout.String())
	}
	if c.Script != "" {
		args = append(args, "--script", c.Script)
	}
	for _, s := range c.Sides {
		args = append(args, "--side", s)
	}
	l, err := engine.Launch(e.exe, e.cfg.StateDir, e.project, args...)
	if err == nil {
		err = l.WaitForJournal(ctx, dir, time.Minute)
	}
	if err != nil {
		os.Remove(dir) // empty unless the run started after all: then it is the run's
		return "", err
	}
	return dir, nil
}

// CapsuleDiff is what a tail changed (for the recorded trail: what step's tool call
// changed), as a unified diff with content.
func (e *appEngine) CapsuleDiff(ctx context.Context, dir, tail string, step int) (string, error) {
	return journal.TailChanges(ctx, dir, tail, step)
}

// Alive reports whether a process owns the run.
func (e *appEngine) Alive(dir string) bool { return enginerun.Alive(dir) }

// Attach is tare AGENT in the app's folder, for the terminal pane; offline, against tare's
// own model server and the form's script.
func (e *appEngine) Attach(req tui.AttachRequest) (*exec.Cmd, error) {
	if _, err := agent.ByName(req.Agent); err != nil {
		return nil, err
	}
	args := []string{req.Agent, "--project", e.project}
	if req.Offline {
		args = append(args, "--offline")
		if req.Script != "" {
			script := req.Script
			if !filepath.IsAbs(script) {
				script = filepath.Join(e.project, script) // the form's paths are the app's folder's
			}
			if _, err := os.Stat(script); err != nil {
				return nil, fmt.Errorf("script %s: %v; fix: give a model script (TOML), or leave it empty for the probe's replies", req.Script, err)
			}
			args = append(args, "--script", script)
		}
	}
	return exec.Command(e.exe, args...), nil
}

// detach starts tare with args in a session of its own and returns once it runs.
func (e *appEngine) detach(args ...string) error {
	_, err := engine.Launch(e.exe, e.cfg.StateDir, e.project, args...)
	return err
}

// errNoRun is returned by tare watch for a folder without a journal.
var errNoRun = errors.New("not a tare run directory (no journal.jsonl); fix: give a folder that tare calibrate made")
