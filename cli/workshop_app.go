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

	"tare/engine"
	"tare/tui"
	"tare/workshop"
)

// The app's workshop actions that start an agent are tare workshop commands: run and resume
// in a process of their own (a writer outlives the app and the ssh session), manual on the
// terminal pane's pty (it is the operator's session; it records terminal.log itself).

// WorkshopRun is tare workshop run EXP WRITER, detached; it returns once the writer runs.
func (e *appEngine) WorkshopRun(ctx context.Context, exp, writer, script string) error {
	return e.startWriter(ctx, exp, writer, "run", script)
}

// WorkshopResume is tare workshop resume EXP WRITER, detached.
func (e *appEngine) WorkshopResume(ctx context.Context, exp, writer, script string) error {
	return e.startWriter(ctx, exp, writer, "resume", script)
}

// WorkshopManual is the command line of tare workshop manual EXP WRITER for the terminal pane.
func (e *appEngine) WorkshopManual(exp, writer, script string) (*exec.Cmd, error) {
	args, err := e.writerArgs(exp, writer, "manual", script)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.exe, args...)
	cmd.Dir = e.project
	return cmd, nil
}

// The workshop's other commands are quick and need no agent: the app makes the workshop
// package's calls, as the command line does, on the experiment's folder.

// WorkshopCollect is tare workshop collect EXP WRITER.
func (e *appEngine) WorkshopCollect(ctx context.Context, exp, writer string) (*workshop.State, error) {
	x, err := workshop.Load(exp)
	if err != nil {
		return nil, err
	}
	return workshop.Collect(x, writer, nil)
}

// WorkshopRetryID is the first free id of the form WRITER-retry, WRITER-retry2...
func (e *appEngine) WorkshopRetryID(ctx context.Context, exp, writer string) (string, error) {
	x, err := workshop.Load(exp)
	if err != nil {
		return "", err
	}
	return x.RetryID(writer), nil
}

// WorkshopRetry is tare workshop retry EXP WRITER NEW_ID.
func (e *appEngine) WorkshopRetry(ctx context.Context, exp, writer, newID string) error {
	x, err := workshop.Load(exp)
	if err != nil {
		return err
	}
	_, err = workshop.Retry(x, writer, newID)
	return err
}

// WorkshopAnonymize is tare workshop anonymize EXP [--reseal].
func (e *appEngine) WorkshopAnonymize(ctx context.Context, exp string, reseal bool) (*workshop.Sealed, error) {
	x, err := workshop.Load(exp)
	if err != nil {
		return nil, err
	}
	return workshop.Anonymize(x, workshop.SealOptions{Reseal: reseal})
}

// WorkshopReport is tare workshop report EXP as a table: sizes withheld while sealed.
func (e *appEngine) WorkshopReport(ctx context.Context, exp string) (string, error) {
	x, err := workshop.Load(exp)
	if err != nil {
		return "", err
	}
	r, err := workshop.MakeReport(x, nil)
	if err != nil {
		return "", err
	}
	return r.Table(), nil
}

func (e *appEngine) writerArgs(exp, writer, verb, script string) ([]string, error) {
	if _, err := workshop.Load(exp); err != nil {
		return nil, err
	}
	args := []string{"workshop", verb, exp, writer}
	if script != "" {
		if !filepath.IsAbs(script) {
			script = filepath.Join(e.project, script) // the form's paths are the app's folder's
		}
		if _, err := os.Stat(script); err != nil {
			return nil, fmt.Errorf("script %s: %v; fix: give a model script (TOML), or leave it empty for the agent's provider", script, err)
		}
		args = append(args, "--script", script)
	}
	return args, nil
}

// startWriter starts the command detached and waits until the writer's state says it runs
// (its room was proven clean and started) or the command ended: a refusal is its last line.
func (e *appEngine) startWriter(ctx context.Context, exp, writer, verb, script string) error {
	args, err := e.writerArgs(exp, writer, verb, script)
	if err != nil {
		return err
	}
	l, err := engine.Launch(e.exe, e.cfg.StateDir, e.project, args...)
	if err != nil {
		return err
	}
	x, err := workshop.Load(exp)
	if err != nil {
		return err
	}
	for {
		if s, err := x.State(writer); err == nil && s.Status == workshop.StatusRunning && s.Alive() {
			return nil
		}
		if l.Exited() {
			if s, err := x.State(writer); err == nil && s.Status == workshop.StatusCompleted {
				return nil
			}
			// The command's refusal (or the failed run's result), whole.
			data, _ := os.ReadFile(l.Log)
			return errors.New(strings.TrimSpace(string(data)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// workshopDirs picks out the workshop experiments among tare watch's arguments: nil when
// none is one; an error when they mix experiments and run directories.
func workshopDirs(args []string) ([]string, error) {
	var exps []string
	for _, d := range args {
		if _, err := os.Stat(filepath.Join(d, "plan.json")); err == nil {
			exps = append(exps, d)
		}
	}
	if len(exps) > 0 && len(exps) != len(args) {
		return nil, errors.New("tare watch: give run directories or workshop experiments, not both")
	}
	return exps, nil
}

// watchWorkshop is tare watch EXP...: the app with the experiments in its Writers pane.
func watchWorkshop(ctx context.Context, exps []string, err error) error {
	if err != nil {
		return err
	}
	for _, d := range exps {
		if _, err := workshop.Load(d); err != nil {
			return err
		}
	}
	if !hasTerminal() {
		return fmt.Errorf("tare watch %s: the Writers pane needs a terminal; without one, tare workshop watch EXP prints what the writers do", exps[0])
	}
	cfg, eng, err := appSettings()
	if err != nil {
		return err
	}
	return tui.Run(ctx, tui.Options{StateDir: cfg.StateDir, Engine: eng, Agents: agentNameList(), Project: eng.project, Experiments: exps})
}
