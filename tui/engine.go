package tui

import (
	"context"
	"errors"
	"os/exec"
	"time"

	"tare/engine/journal"
	"tare/workshop"
)

// Engine is what the app asks of tare's engine. Each method is the call the command line
// makes for the same action, so the app never does anything the CLI cannot. The app calls
// them from commands, never from Update; ctx ends with the app (or the ssh session), so an
// implementation must hand long work to a process or goroutine of the engine's own: a run
// started, resumed or retried here keeps going after the app is gone.
type Engine interface {
	// Probe takes a new reading of agent in the app's project, as `tare probe AGENT` does,
	// and stores it at <state>/probes/<agent>-<hash>.json (see probe.Summary); the app shows
	// it from there.
	Probe(ctx context.Context, agent string) error
	// Resume continues a crashed run (no process owns it and it has no report), as
	// `tare resume DIR` would. It returns once the run is continuing.
	Resume(ctx context.Context, runDir string) error
	// Retry reruns a failed tail of a run.
	Retry(ctx context.Context, runDir, tailID string) error
	// Delete removes a run's folder (journal, report, capsules, tails); it refuses a run a
	// process still owns.
	Delete(ctx context.Context, runDir string) error
	// Kill stops a running tail; the engine journals its end, with how the operator said
	// the kill counts in the rate.
	Kill(ctx context.Context, runDir, tailID string, as journal.KillAs) error
	// StartCalibrate starts `tare calibrate` with the form's values and returns the new
	// run's directory once its journal exists.
	StartCalibrate(ctx context.Context, c Calibrate) (runDir string, err error)
	// CapsuleDiff is what a tail changed in its workspace, as a unified diff (a tail keeps no
	// capsule per tool call; for the recorded trail, "original", what step changed), as
	// engine.TailChanges makes it. Its first line says what is compared.
	CapsuleDiff(ctx context.Context, runDir, tailID string, step int) (string, error)
	// Alive reports whether a process still owns the run (it is live, not crashed). It is
	// called about once a second per unfinished run, off the UI goroutine: keep it cheap.
	Alive(runDir string) bool
	// Attach is the command that runs an agent attached, as `tare AGENT` does; the app starts
	// it on a pty in its terminal pane.
	Attach(req AttachRequest) (*exec.Cmd, error)

	WorkshopEngine
}

// WorkshopEngine is what the Writers pane asks: one call per workshop command, as `tare
// workshop VERB EXP WRITER` makes it. A writer started here runs in a process of its own, so
// it outlives the app and the ssh session.
type WorkshopEngine interface {
	// WorkshopRun runs one writer as `tare workshop run EXP WRITER [--script F]` does, in a
	// process of its own; it returns once the writer runs, or with the refusal whole.
	WorkshopRun(ctx context.Context, exp, writer, script string) error
	// WorkshopResume continues a writer a quota wall stopped, as `tare workshop resume`, in a
	// process of its own; it returns once the writer runs again, or with the refusal.
	WorkshopResume(ctx context.Context, exp, writer, script string) error
	// WorkshopManual is the command that runs `tare workshop manual EXP WRITER`: the app
	// starts it on a pty in its terminal pane, and it records the writer's terminal.log.
	WorkshopManual(exp, writer, script string) (*exec.Cmd, error)
	// WorkshopCollect archives and checks a writer's drafts, as `tare workshop collect`, and
	// returns its state after: a missing or short output fails it, with the reason.
	WorkshopCollect(ctx context.Context, exp, writer string) (*workshop.State, error)
	// WorkshopRetryID is the id a retry of writer would be staged under (workshop's RetryID):
	// the app names it before the operator confirms.
	WorkshopRetryID(ctx context.Context, exp, writer string) (string, error)
	// WorkshopRetry stages newID in writer's seat, as `tare workshop retry EXP WRITER NEW_ID`;
	// writer stays on record.
	WorkshopRetry(ctx context.Context, exp, writer, newID string) error
	// WorkshopAnonymize seals the completed drafts under letters, as `tare workshop
	// anonymize`; reseal shuffles a sealed experiment again, keeping the old key.
	WorkshopAnonymize(ctx context.Context, exp string, reseal bool) (*workshop.Sealed, error)
	// WorkshopReport is the experiment's report as `tare workshop report` prints it: while
	// the drafts are sealed and their reading not recorded, nothing pairs a letter with a
	// writer.
	WorkshopReport(ctx context.Context, exp string) (string, error)
}

// AttachRequest is what the attach form collects for `tare AGENT`.
type AttachRequest struct {
	Agent string
	// Offline points the agent at tare's own model server (--offline): no account or
	// network needed. Script is the server's model script (--script); empty, it gives the
	// probe's replies.
	Offline bool
	Script  string
}

// Calibrate is what the new-run form collects for `tare calibrate`.
type Calibrate struct {
	Prompt string
	// Sides are the agents compared, each as the --side flag takes it: "claude --model haiku".
	Sides []string
	Check string
	// CheckTimeout is how long a tail's check may run (--check-timeout); 0: tare's default.
	CheckTimeout time.Duration
	Runs         int
	Jobs         int
	Project      string
	// Script, when set, is a model script: every side talks to tare's own model server
	// replaying it instead of its provider (`tare calibrate --script`), so a run needs no
	// account or network.
	Script string
}

// errReadOnly is what an action says when the app has no engine (a watcher of journals only).
var errReadOnly = errors.New("this app only watches journals (it was started without an engine); run the action from the command line")
