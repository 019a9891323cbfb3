// Command tare starts coding agents in clean bubblewrap rooms, proves each room clean
// before the run, and measures what the agents do there.
//
// main.go is the command line and its wiring; the work happens in the packages below it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"tare/agent"
	"tare/config"
	"tare/demo"
	"tare/engine"
	"tare/engine/journal"
	"tare/engine/probe"
	enginerun "tare/engine/run"
	"tare/modelserver"
	"tare/prices"
	"tare/tui"

	"golang.org/x/term"
)

// exitError carries an exit code through cobra without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	// The in-room entry points run as /opt/tare/tare inside a room: before cobra and config.
	if code, ok := probe.InRoom(os.Args[1:]); ok {
		os.Exit(code)
	}
	// ctrl+c in line mode stops a run as SIGTERM does: its tails are stopped (Slurm jobs
	// cancelled) and tare resume runs them again. Later signals are absorbed too, so the
	// stop's clean-up (rooms, their folders) is never cut short; kill -9 is what ends tare
	// at once, and the run's state is built to survive it.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP, os.Interrupt)
	err := root().ExecuteContext(ctx)
	signalled := ctx.Err() != nil // before stop, which ends ctx too
	stop()
	var exit exitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(exit.code)
	case errors.As(err, &stoppedRun{}):
		// The operator stopped a run (ctrl+c in its view or in line mode, or a signal).
		fmt.Fprintf(os.Stderr, "tare: %v\n", err)
		os.Exit(130)
	case signalled && errors.Is(err, context.Canceled):
		// Not an error of the command's: the operator stopped it.
		fmt.Fprintln(os.Stderr, "tare: stopped by a signal; a run it stopped is finished with tare resume DIR")
		os.Exit(130)
	default:
		fmt.Fprintf(os.Stderr, "tare: %s\n", journal.Printable(err.Error()))
		os.Exit(2)
	}
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	// Go stamps a module version, or a pseudo-version naming the commit, when it knows one;
	// otherwise the commit (and whether the tree was modified) is all there is.
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "dev"
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v = s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "+dirty"
		}
	}
	return v
}

func root() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tare",
		Short: "Clean rooms for coding agents: zero the scale before you weigh",
		Long: `tare starts a coding agent (claude, codex, pi, agy) in a bubblewrap room that holds
nothing of yours: no global instructions, memories, MCP servers, skills or logins beyond the
one login copy it declares. Before every run it proves the room clean: "tare: 0.00", or each
leak with the file it came from.`,
		Version:           version(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		Args:              cobra.NoArgs,
		PersistentPreRunE: absoluteOut,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needTerminal(); err != nil {
				return err
			}
			cfg, eng, err := appSettings()
			if err != nil {
				return err
			}
			return tui.Run(cmd.Context(), tui.Options{StateDir: cfg.StateDir, Engine: eng, Agents: agentNameList(), Project: eng.project})
		},
	}
	cmd.PersistentFlags().BoolVar(&stayInView, "stay", false, "keep a command's live view open on the finished run, to browse it (q leaves)")
	cmd.SetVersionTemplate("tare {{.Version}}\n")
	cmd.AddCommand(probeCmd(), calibrateCmd(), resumeCmd(), recordCmd(), tailCmd(), cliffCmd(), swapCmd(), demoCmd(), watchCmd(), serveCmd(), modelServerCmd(), doctorCmd(), pricesCmd())
	cmd.AddCommand(judgeCmd(), judgeNoiseCmd())
	cmd.AddCommand(rerunCmd())
	cmd.AddCommand(workerCmd())
	cmd.AddCommand(gcCmd())
	cmd.AddCommand(workshopCmd())
	for _, a := range agent.All() {
		cmd.AddCommand(attachCmd(a))
	}
	return cmd
}

// stayInView is --stay: a command's live view stays on its finished run until q.
var stayInView bool

// absoluteOut makes a command's --out absolute before it runs: the run's folder is handed
// to rooms, workers and later commands, none of which start where the operator typed it (a
// relative --out made every tail "not started: Workspace is relative").
func absoluteOut(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags().Lookup("out")
	if f == nil || f.Value.Type() != "string" || f.Value.String() == "" || filepath.IsAbs(f.Value.String()) {
		return nil
	}
	abs, err := filepath.Abs(f.Value.String())
	if err != nil {
		return fmt.Errorf("--out %s: %v; fix: give an absolute path", f.Value.String(), err)
	}
	return f.Value.Set(abs)
}

// hasTerminal reports whether stdin and stdout are both a terminal, as the app needs.
func hasTerminal() bool {
	return term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
}

// errNoTerminal is the app's answer to a pipe or no terminal: what to use there instead.
var errNoTerminal = errors.New("the app needs a terminal (stdin and stdout); without one, tare watch DIR prints a run as plain lines, and tare probe, calibrate, cliff and swap print their reports")

// needTerminal refuses to start the app where it cannot draw: it would write screen codes
// into a pipe, or fail inside Bubble Tea with no terminal to read keys from.
func needTerminal() error {
	if !hasTerminal() {
		return errNoTerminal
	}
	return nil
}

// settings loads the config file; a bad file stops every command that reads it.
func settings() (*config.Config, error) {
	return config.Load(config.File())
}

// appSettings loads the config and the engine the app's actions use.
func appSettings() (*config.Config, *appEngine, error) {
	cfg, err := settings()
	if err != nil {
		return nil, nil, err
	}
	eng, err := newAppEngine(cfg)
	return cfg, eng, err
}

// projectDir resolves --project, refusing a path that is not a folder, and (unless
// allowDirty) a folder that is the host root, the operator's home or holds it: here, before
// anything is created or started.
func projectDir(p string, allowDirty bool) (string, error) {
	if p == "" {
		p = "."
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--project %s: %v", p, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--project %s: no such folder; fix: give the folder the agent should work in", p)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("--project %s: not a folder; fix: give the folder the agent should work in", p)
	}
	if !allowDirty {
		home, _ := os.UserHomeDir()
		if err := probe.CheckProject(abs, home); err != nil {
			return "", err
		}
	}
	return abs, nil
}

func agentArg(cmd *cobra.Command, args []string) (agent.Agent, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("%s: want one agent (%s)", cmd.CommandPath(), strings.Join(agentNameList(), ", "))
	}
	return agent.ByName(args[0])
}

func probeCmd() *cobra.Command {
	var project string
	var asJSON, allowDirty bool
	var requests string
	cmd := &cobra.Command{
		Use:   "probe AGENT",
		Short: `Prove the room clean: "tare: 0.00", each leak with its source, or "not proven (blind)"`,
		Long: `Starts AGENT in a room against tare's own model server in probe mode, records what reached
the model and what the room can see, and reads it for personal instructions, your home path,
MCP tools, skills, plugins, your account email and reach (host files, host loopback, other
hosts). A control twin in a planted dirty home must show each of these, or the reading is
"not proven (blind)". Exit 0 only on "tare: 0.00".`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: agentNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := agentArg(cmd, args)
			if err != nil {
				return err
			}
			dir, err := projectDir(project, allowDirty)
			if err != nil {
				return err
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			opts := probe.ProbeOptions{Agent: a, Project: dir, Config: cfg, Progress: os.Stderr, AllowDirty: allowDirty}
			if requests != "" {
				f, err := os.OpenFile(requests, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					return fmt.Errorf("--requests %s: %v", requests, err)
				}
				defer f.Close()
				opts.Requests = f
			}
			reading, err := probe.Probe(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if err := probe.StoreReading(cfg.StateDir, reading); err != nil {
				fmt.Fprintf(os.Stderr, "tare probe: the reading was not kept for the app: %v\n", err)
			}
			if asJSON {
				if err := reading.WriteJSON(os.Stdout); err != nil {
					return err
				}
			} else {
				fmt.Print(journal.Printable(reading.Render()))
			}
			if !reading.Zero() {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&project, "project", ".", "the project folder the agent would work in")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reading as JSON")
	cmd.Flags().StringVar(&requests, "requests", "", "write what reached the model in the clean room to this file (JSON lines)")
	cmd.Flags().BoolVar(&allowDirty, "allow-dirty", false, "probe even a project that is your home, holds it, or is / (refused otherwise)")
	return cmd
}

func attachCmd(a agent.Agent) *cobra.Command {
	var opts engine.AttachOptions
	var project string
	cmd := &cobra.Command{
		Use:   a.Name() + " [-- AGENT_ARGS...]",
		Short: "Probe, then run " + a.Name() + " attached in a clean room",
		Long: fmt.Sprintf(`Probes the room for %[1]s, then starts %[1]s in it on your terminal, working in --project
(bound at /work). Ctrl-C belongs to the agent. The room is removed on every exit.
By default %[1]s talks to its real provider through tare's proxy, which lets through only the
hosts in the config's network.allow; --offline points it at tare's own model server instead.`, a.Name()),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := projectDir(project, opts.AllowDirty)
			if err != nil {
				return err
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			if opts.Script != "" {
				opts.Offline = true
				if _, err := modelserver.LoadScript(opts.Script); err != nil {
					return err
				}
			}
			opts.Agent, opts.Project, opts.Config, opts.Args = a, dir, cfg, args
			opts.Terminal = tui.OnTerminal(os.Stdin, os.Stdout)
			code, err := engine.Attach(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&project, "project", ".", "the folder the agent works in (bound read-write at /work)")
	f.BoolVar(&opts.AllowDirty, "allow-dirty", false, `start even when the reading is not "tare: 0.00"`)
	f.BoolVar(&opts.Yolo, "yolo", false, "skip the agent's permission prompts (the room stays)")
	f.BoolVar(&opts.Offline, "offline", false, "talk to tare's own model server instead of the real provider")
	f.StringVar(&opts.Script, "script", "", "with --offline: the model server replays this script (TOML)")
	f.BoolVar(&opts.Login, "login", true, "place the agent's login copy in the room (real provider only)")
	f.BoolVar(&opts.HostNetwork, "network-host", false, "share the host's network (opt-in; shown in the reading)")
	return cmd
}

func calibrateCmd() *cobra.Command {
	var o engine.CalibrateOptions
	var asJSON bool
	var sides, prompts []string
	var project, promptFile string
	cmd := &cobra.Command{
		Use:   "calibrate [PROMPT] --side AGENT [--side AGENT...]",
		Short: "How often each side (an agent with its arguments) passes a task, with its 95% interval",
		Long: `Runs each side N times from a fresh start of the task, each in a clean room, scores each
finished workspace with --check (a shell command run in a room of its own: the workspace at
/work, a fresh home, none of your variables, no network, plus what config [check] names; exit
0 passes; a line "score N" is read as a judge's score), and reports each side's pass rate with its Wilson 95%
interval, times, tokens and cost. Without --check a run counts as finished when its agent exits
0, and every workspace is kept. The run directory holds the journal, recipe, usage and report;
tare resume DIR finishes a run a crash interrupted. --on slurm sends each tail to a Slurm
cluster as one job (config [cluster]; scripts/slurm-local starts one on this machine).
--until-separated (two sides) starts runs in pairs, one per side, until the sides' pass rates
are separated by an exact sequential test calibrated to --max-runs (looking after every pair
keeps its 5% error) or --max-runs per side have started; the report says when it stopped and
why, with 95% confidence sequences and no point estimate the stop biases. At the default
--max-runs 100 it separates 0.3 from 0.7 in nearly every sequence, 0.5 from 0.8 in 98%, 0.4
from 0.6 in 68%, 0.5 from 0.6 in 21%; --detect D says how many runs 80% power at D needs.`,
		Example: `  tare calibrate "Add a --verbose flag" --side "claude --model haiku" --side codex --check "go test ./..."
  tare calibrate "Add a --verbose flag" --side claude --side codex --check "go test ./..." --until-separated --max-runs 40
  tare calibrate --side claude --side-prompt "a=/ideate a todo app" --runs 5`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Prompt = args[0]
			}
			if promptFile != "" {
				if o.Prompt != "" {
					return fmt.Errorf("--prompt-file %s: a PROMPT was given too; fix: give one or the other", promptFile)
				}
				data, err := os.ReadFile(promptFile)
				if err != nil {
					return fmt.Errorf("--prompt-file %s: %v; fix: give the file that holds the task", promptFile, errors.Unwrap(err))
				}
				if o.Prompt = strings.TrimSpace(string(data)); o.Prompt == "" {
					return fmt.Errorf("--prompt-file %s: the file is empty; fix: write the task in it", promptFile)
				}
			}
			if err := separateFlags(cmd, o); err != nil {
				return err
			}
			var err error
			if o.Sides, err = engine.ParseSides(sides, prompts); err != nil {
				return err
			}
			if o.Project, err = projectDir(project, o.AllowDirty); err != nil {
				return err
			}
			if o.Config, err = settings(); err != nil {
				return err
			}
			o.Argv, o.Version = os.Args[1:], version()
			return calibrate(cmd.Context(), o, asJSON)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (each side's verdicts, rate, interval, no verdicts and retries with reasons, usage)")
	f.StringArrayVar(&sides, "side", nil, `an agent and its arguments, e.g. "claude --model haiku" (repeat for each side; keys a, b, c...)`)
	f.StringVar(&promptFile, "prompt-file", "", "read the task from this file instead of PROMPT")
	f.StringArrayVar(&prompts, "side-prompt", nil, `a side's own prompt, KEY=PROMPT, e.g. "b=/b:ideate a todo app"`)
	f.StringVar(&o.Check, "check", "", "shell command run in each finished workspace, in a room of its own (exit 0 passes)")
	f.DurationVar(&o.CheckTimeout, "check-timeout", engine.DefaultCheckTimeout, "a check running longer fails")
	checkOnHostFlag(cmd, &o.CheckOnHost)
	f.DurationVar(&o.AgentTimeout, "timeout", engine.DefaultAgentTimeout, "an agent running longer is stopped")
	f.IntVar(&o.Runs, "runs", 10, "fresh starts per side")
	f.IntVar(&o.Jobs, "jobs", 3, "runs at the same time")
	f.BoolVar(&o.Keep, "keep", false, "keep every run's finished workspace")
	f.StringVar(&project, "project", ".", "the project each run starts from")
	f.StringVar(&o.Out, "out", "", "run directory (default $XDG_STATE_HOME/tare/calibrate/<project>-<time>)")
	f.StringVar(&o.Script, "script", "", "every side talks to tare's own model server replaying this script, instead of its provider")
	f.Int64Var(&o.Seed, "seed", 0, "seed of the script's branch draws, to replay a run (default: a fresh one, shown in the report)")
	f.BoolVar(&o.AllowDirty, "allow-dirty", false, `run even when a reading is not "tare: 0.00"`)
	onFlag(cmd, &o.On)
	capFlags(cmd, &o.Caps)
	f.BoolVar(&o.UntilSeparated, "until-separated", false, "two sides: start runs in pairs until their pass rates are separated at 95% (exact sequential test calibrated to --max-runs) or --max-runs")
	f.IntVar(&o.MaxRuns, "max-runs", 100, "with --until-separated: the most runs started per side")
	f.Float64Var(&o.Detect, "detect", 0, "with --until-separated: the report says the --max-runs that separates pass rates this far apart with 80% power, e.g. 0.1")
	return cmd
}

// separateFlags refuses --runs beside --until-separated (the test decides how many), and
// --max-runs or --detect without it.
func separateFlags(cmd *cobra.Command, o engine.CalibrateOptions) error {
	switch {
	case o.UntilSeparated && cmd.Flags().Changed("runs"):
		return errors.New("--runs: --until-separated decides how many runs; fix: drop --runs, or bound the runs with --max-runs N")
	case !o.UntilSeparated && cmd.Flags().Changed("max-runs"):
		return errors.New("--max-runs: bounds --until-separated only; fix: add --until-separated, or give --runs N for a fixed number")
	case !o.UntilSeparated && cmd.Flags().Changed("detect"):
		return errors.New("--detect: sizes --until-separated only; fix: add --until-separated")
	}
	return nil
}

// calibrate runs a calibrate and shows it: the live run view when stdout is a terminal, one
// line per event on stderr otherwise; then the report on stdout.
func calibrate(ctx context.Context, o engine.CalibrateOptions, asJSON bool) error {
	warnCheckOnHost(o.CheckOnHost && o.Check != "")
	o.Bus = journal.NewBus()
	if o.Out == "" {
		o.Out = enginerun.FreeDir(filepath.Join(o.Config.StateDir, "calibrate"), o.Project, time.Now())
	}
	var report string
	err := showRun(ctx, o.Config, o.Out, o.Bus, func(ctx context.Context, lines bool) error {
		if lines {
			o.Progress = os.Stderr
		}
		var err error
		_, report, err = engine.Calibrate(ctx, o)
		return err
	})
	if _, serr := os.Stat(o.Out); serr == nil {
		fmt.Fprintf(os.Stderr, "tare calibrate: run directory %s (watch it with tare watch %s)\n", o.Out, o.Out)
	}
	if err != nil {
		return err
	}
	return printReport(o.Out, report, asJSON)
}

// printReport prints a run's report on stdout: its text, or report.json with asJSON.
func printReport(dir, text string, asJSON bool) error {
	if !asJSON {
		fmt.Print(journal.Printable(text))
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, engine.ReportFile))
	if os.IsNotExist(err) {
		// A judge-noise run's JSON report is its judgements.json.
		if judged, jerr := os.ReadFile(filepath.Join(dir, "judgements.json")); jerr == nil {
			data, err = judged, nil
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %v; the run has no JSON report (a run from an older tare): read report.txt", dir, err)
	}
	_, err = os.Stdout.Write(data)
	return err
}

// showRun runs a long command and shows it: the live run view of dir when stdout and stdin
// are a terminal (quitting it with ctrl+c stops the run, which tare resume finishes later; q
// leaves it running with plain lines), one line per event on stderr otherwise. run is told
// which, so it can print its own progress lines only where they do not break the view.
func showRun(ctx context.Context, cfg *config.Config, dir string, bus *journal.Bus, run func(ctx context.Context, lines bool) error) error {
	if !term.IsTerminal(int(os.Stdout.Fd())) || !term.IsTerminal(int(os.Stdin.Fd())) {
		stop := follow(ctx, bus)
		err := run(ctx, true)
		stop()
		return stopped(ctx, dir, err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	viewCtx, stopView := context.WithCancel(ctx)
	defer stopView()
	done := make(chan error, 1)
	returned := make(chan struct{}) // the view ends once the command has, not at the journal's first run_finished
	go func() {
		err := run(runCtx, false)
		if err != nil {
			stopView()
		}
		close(returned)
		done <- err
	}()
	eng, err := newAppEngine(cfg)
	if err != nil {
		stopRun()
		<-done
		return err
	}
	switch err := tui.LiveRun(viewCtx, tui.LiveOptions{Dir: dir, Bus: bus, Engine: eng, Done: returned, Stay: stayInView}); {
	case errors.Is(err, tui.ErrInterrupted):
		stopRun()
		<-done // whatever it ended with (a room "stopped: context canceled"), the operator stopped it
		return stoppedRun{dir}
	case err != nil && viewCtx.Err() == nil:
		// The view failed while the run goes on: say so, and follow the run in lines.
		fmt.Fprintf(os.Stderr, "tare: the live view ended: %v; the run goes on, one line per event from here\n", err)
		defer follow(ctx, bus)()
	}
	return stopped(ctx, dir, <-done)
}

// stoppedRun is a run the operator stopped (ctrl+c, or a signal): not an error of the
// command's, and its message says how to finish it, as a command to paste.
type stoppedRun struct{ dir string }

func (s stoppedRun) Error() string {
	if s.dir == "" {
		return "stopped; a run it stopped is finished with tare resume DIR"
	}
	return "stopped; what finished is kept, and the rest is finished with: tare resume " + quoteArgs([]string{s.dir})
}

// stopped is err, or stoppedRun when a signal ended ctx: the command's error is then the
// stop's doing (a room "stopped: context canceled", a tail cut short).
func stopped(ctx context.Context, dir string, err error) error {
	if err != nil && ctx.Err() != nil {
		return stoppedRun{dir}
	}
	return err
}

// follow prints a run's events as lines on stderr until stop is called.
func follow(ctx context.Context, bus *journal.Bus) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	sub := bus.Subscribe(ctx, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tui.PrintLines(ctx, sub.C(), os.Stderr) // stderr gone: nothing left to tell
	}()
	return func() {
		cancel() // the printer then prints what is still queued
		<-done
	}
}

func recordCmd() *cobra.Command {
	var o engine.RecordOptions
	var project, side string
	cmd := &cobra.Command{
		Use:   "record PROMPT [--side AGENT]",
		Short: "Run a task once in a clean room with a capsule after every tool call",
		Long: `Runs the task once, in a clean room, with a capsule of the workspace after every step (by the
agent's own post-tool hook), keeps its session, and lists the steps. tare tail DIR --step N then
continues it from any step in a fresh room, natively or by handoff to any agent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			sides, err := engine.ParseSides([]string{side}, nil)
			if err != nil {
				return err
			}
			if o.Project, err = projectDir(project, o.AllowDirty); err != nil {
				return err
			}
			if o.Config, err = settings(); err != nil {
				return err
			}
			if o.Script != "" {
				if _, err := modelserver.LoadScript(o.Script); err != nil {
					return err
				}
			}
			o.Prompt, o.Side, o.Argv, o.Version = args[0], sides[0], os.Args[1:], version()
			if o.Out == "" {
				o.Out = enginerun.FreeDir(filepath.Join(o.Config.StateDir, "record"), o.Project, time.Now())
			}
			warnCheckOnHost(o.CheckOnHost && o.Check != "")
			o.Bus = journal.NewBus()
			var dir string
			err = showRun(cmd.Context(), o.Config, o.Out, o.Bus, func(ctx context.Context, lines bool) error {
				if lines {
					o.Progress = os.Stderr
				}
				var err error
				dir, _, err = engine.Record(ctx, o)
				return err
			})
			if dir != "" {
				fmt.Fprintf(os.Stderr, "tare record: run directory %s (continue it with tare tail %s --step N)\n", dir, dir)
			}
			if err != nil {
				return err
			}
			report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
			fmt.Print(journal.Printable(string(report)))
			return err
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.Seed, "seed", 0, "seed of the script's branch draws, to replay a run (default: a fresh one, in recipe.json)")
	f.StringVar(&side, "side", "claude", "the agent and its arguments")
	f.StringVar(&project, "project", ".", "the project the run starts from")
	f.StringVar(&o.Check, "check", "", "shell command that scores the tails, in a room of its own (exit 0 passes)")
	f.DurationVar(&o.CheckTimeout, "check-timeout", engine.DefaultCheckTimeout, "a check running longer fails")
	checkOnHostFlag(cmd, &o.CheckOnHost)
	f.DurationVar(&o.AgentTimeout, "timeout", engine.DefaultAgentTimeout, "an agent running longer is stopped")
	f.StringVar(&o.Out, "out", "", "run directory (default $XDG_STATE_HOME/tare/record/<project>-<time>)")
	f.StringVar(&o.Script, "script", "", "talk to tare's own model server replaying this script")
	f.BoolVar(&o.AllowDirty, "allow-dirty", false, `run even when the reading is not "tare: 0.00"`)
	capFlags(cmd, &o.Caps)
	return cmd
}

func cliffCmd() *cobra.Command {
	var o engine.CliffOptions
	var project string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cliff AGENT PROMPT --check CMD [flags] [-- AGENT_ARGS]  |  cliff --run DIR",
		Short: "Find the step after which a failed run became lost",
		Long: `Records the task once (or takes a recording made earlier, --run DIR) and scores it with the
check. When it failed, cliff continues it from chosen steps in fresh rooms (native tails, --tails
at a time) and finds the step after which it was lost: the tool call after which tails stop
passing. It does not scan every step: it bisects on the pass rate and spends tails where the
answer is still uncertain, until the cliff is pinned ("cliff at step N (p=0.97 within one
step)": posterior 0.95 that the rate falls at one step within one step of N, against no change
and a steady decline, prior 1/3 each; both sides measured), a steady decline is that probable
("gradual decline: no single step"), the task shows itself beyond the model (the start's upper
95% bound below --gap-below: a model gap), or the budget is spent (the likeliest explanation,
naming a step only when it is one step). The report's first line says which. The default budget is a cap, not a price: a sharp
cliff like the demo's is pinned in 15-30 tails, but of synthetic cliffs (rates before 0.5-0.95,
after 0-0.3) 30 tails pin about 40% at 10 steps and 10% at 200 (README). Tails without a
verdict (provider errors, kills) spend budget but are left out of the rates. Run it again with
--run DIR and a bigger --budget to go on from the tails already spent.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.Run != "" {
				if len(args) > 0 {
					return fmt.Errorf("--run DIR analyses an earlier recording: give no AGENT or PROMPT with it")
				}
				return nil
			}
			if n := cmd.ArgsLenAtDash(); n >= 0 && n != 2 || n < 0 && len(args) != 2 {
				return fmt.Errorf("give AGENT and PROMPT (then -- and the agent's own arguments), or --run DIR")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Config, err = settings(); err != nil {
				return err
			}
			o.Argv, o.Version = os.Args[1:], version()
			if o.Run != "" {
				if o.Run, err = filepath.Abs(o.Run); err != nil {
					return err
				}
			} else {
				sides, err := engine.ParseSides([]string{args[0]}, nil)
				if err != nil {
					return err
				}
				o.Side = sides[0]
				o.Side.Args = append(o.Side.Args, args[2:]...)
				if o.Project, err = projectDir(project, o.AllowDirty); err != nil {
					return err
				}
				if o.Script != "" {
					if _, err := modelserver.LoadScript(o.Script); err != nil {
						return err
					}
				}
				o.Prompt = args[1]
				if o.Out == "" {
					o.Out = enginerun.FreeDir(filepath.Join(o.Config.StateDir, "cliff"), o.Project, time.Now())
				}
				warnCheckOnHost(o.CheckOnHost && o.Check != "")
			}
			return cliff(cmd.Context(), o, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Run, "run", "", "analyse a run recorded earlier (tare record) instead of recording one")
	f.IntVar(&o.Tails, "tails", 3, "tails a round starts from one step")
	f.IntVar(&o.Budget, "budget", 30, "tails in all")
	f.IntVar(&o.Jobs, "jobs", 3, "tails at the same time")
	f.Float64Var(&o.GapBelow, "gap-below", 0.2, "report a model gap when the start's upper 95% bound is below this")
	onFlag(cmd, &o.On)
	f.BoolVar(&asJSON, "json", false, "print the result as JSON instead of the report")
	f.StringVar(&project, "project", ".", "the project the run starts from")
	f.StringVar(&o.Check, "check", "", "shell command that scores a workspace, in a room of its own (exit 0 passes)")
	f.DurationVar(&o.CheckTimeout, "check-timeout", engine.DefaultCheckTimeout, "a check running longer fails")
	checkOnHostFlag(cmd, &o.CheckOnHost)
	f.DurationVar(&o.AgentTimeout, "timeout", engine.DefaultAgentTimeout, "an agent running longer is stopped")
	f.StringVar(&o.Out, "out", "", "run directory (default $XDG_STATE_HOME/tare/cliff/<project>-<time>)")
	f.StringVar(&o.Script, "script", "", "talk to tare's own model server replaying this script")
	f.Int64Var(&o.Seed, "seed", 0, "seed of the script's branch draws, to replay a run (default: a fresh one, in recipe.json)")
	f.BoolVar(&o.AllowDirty, "allow-dirty", false, `run even when the reading is not "tare: 0.00"`)
	capFlags(cmd, &o.Caps)
	return cmd
}

func tailCmd() *cobra.Command {
	var o engine.TailOptions
	var handoff string
	cmd := &cobra.Command{
		Use:   "tail DIR --step N [--handoff AGENT]",
		Short: "Continue a recorded run from a step in a fresh room, and score it",
		Long: `Continues the run recorded in DIR from the capsule of step N (0 is the project before the
run) in a fresh room: natively by default (the recorded agent's own session, cut after the
step, resumed with "Continue."), or by handoff to a fresh session of any agent given the trail
up to the step. The recording's check scores it, in a room of its own (on the host only if the
recording was made with --check-on-host, or with --check-on-host here); the tail is journaled
in DIR. A step none of whose tool calls left a capsule (record.json lists it under
"inherited") is refused unless --from-nearest starts the tail from the nearest earlier
capsule, which the tail then names.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := settings()
			if err != nil {
				return err
			}
			o.Dir, o.Config, o.How = args[0], cfg, "native"
			if handoff != "" {
				sides, err := engine.ParseSides([]string{handoff}, nil)
				if err != nil {
					return fmt.Errorf("--handoff: %v", err)
				}
				o.How, o.Agent, o.Args = "handoff", sides[0].Agent, sides[0].Args
			}
			warnRecordedCheck(o.Dir, o.CheckOnHost)
			o.Bus = journal.NewBus()
			var res journal.TailResult
			err = showRun(cmd.Context(), cfg, o.Dir, o.Bus, func(ctx context.Context, _ bool) error {
				var err error
				res, err = engine.Tail(ctx, o)
				return err
			})
			if err != nil {
				return err
			}
			from := fmt.Sprintf("step %d", res.Step)
			if res.CapsuleFrom != nil {
				from += fmt.Sprintf(" (no capsule of its own: started from step %d's)", *res.CapsuleFrom)
			}
			outcome := res.Status
			if res.Status == journal.StatusNoVerdict {
				outcome = "no verdict (" + res.Reason.Label() + ")"
			}
			fmt.Print(journal.Printable(fmt.Sprintf("tail %s from %s: %s (%s; %s)\n", res.ID, from, outcome, res.AgentExit, res.Check)))
			if res.Metered != nil {
				fmt.Print(journal.Printable("  " + res.Metered.Line() + "; hosts reached: " + filepath.Join(o.Dir, "tails", res.ID, engine.HostsFile) + "\n"))
			}
			if !res.Passed {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&o.Step, "step", 0, "the step whose capsule the tail continues (0: the project before the run)")
	cmd.Flags().StringVar(&handoff, "handoff", "", `continue by handoff to this agent, e.g. "codex"`)
	checkOnHostFlag(cmd, &o.CheckOnHost)
	cmd.Flags().BoolVar(&o.FromNearest, "from-nearest", false, "for a step with no capsule of its own, start from the nearest earlier one")
	capFlags(cmd, &o.Caps)
	return cmd
}

func resumeCmd() *cobra.Command {
	var retry []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resume DIR",
		Short: "Finish a run a crash interrupted, without repeating finished tails or judgements",
		Long: `Finishes a calibrate run that a crash or a kill interrupted: finished tails are kept as the
journal has them, tails that were running are rerun (their first attempt is kept beside them)
and the journal says so, tails never started are run, and the report is written. A run made
--on slurm re-attaches to the jobs still queued or running (and collects those that finished)
instead of starting those tails again.
--retry ID runs a finished tail again as a new attempt; every attempt stays on the record with
its cost, and the rate counts each tail's first attempt that counts: a failure, a tail over
budget or one killed and counted as failed is never replaced by its retry, so retrying cannot
raise the rate. A retry of a tail left out (a provider stop, a kill left out as an
infrastructure fault) counts, beside the attempt it follows.

For a recorded run (tare record), an interrupted recording is recorded again from the run's
start capsule (the first attempt kept as original.attempt-1), and a tail that was running
(tare tail) is marked interrupted, to be run again with tare tail.

For a judge-noise run, finished judgements are kept as the journal has them, a judgement that
was running here is judged again as a new attempt (the interrupted one stays on the record),
one whose Slurm job outlived tare is re-attached (its model served again) or collected, and
the report is written as judge-noise writes it (--json: its judgements.json). The page
folders must be as the run judged them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := settings()
			if err != nil {
				return err
			}
			warnRecordedCheck(args[0], false)
			bus := journal.NewBus()
			var report string
			err = showRun(cmd.Context(), cfg, args[0], bus, func(ctx context.Context, _ bool) error {
				var err error
				report, err = engine.Resume(ctx, engine.ResumeOptions{Dir: args[0], Config: cfg, Bus: bus, Retry: retry})
				return err
			})
			if err != nil {
				return err
			}
			return printReport(args[0], report, asJSON)
		},
	}
	cmd.Flags().StringArrayVar(&retry, "retry", nil, "run this finished tail again as a new attempt (repeat for several)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func watchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "watch DIR...",
		Short: "The app, following run directories (or workshop experiments) written by any tare process",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if exps, err := workshopDirs(args); exps != nil || err != nil {
				return watchWorkshop(cmd.Context(), exps, err)
			}
			for _, d := range args {
				if _, err := os.Stat(filepath.Join(d, journal.JournalFile)); err != nil {
					return fmt.Errorf("%s: %w", d, errNoRun)
				}
			}
			if !hasTerminal() {
				// A pipe, a log, CI: the events as plain lines, no screen codes.
				return tui.WatchLines(cmd.Context(), args, os.Stdout)
			}
			_, eng, err := appSettings()
			if err != nil {
				return err
			}
			return tui.Watch(cmd.Context(), args, tui.Options{Engine: eng})
		},
	}
}

func serveCmd() *cobra.Command {
	var o tui.ServeOptions
	cmd := &cobra.Command{
		Use:   "serve --ssh ADDR [--authorized-keys FILE]",
		Short: "The app over ssh, on the same state, for every operator whose key is authorized",
		Long: `Serves the app over ssh: each session gets its own app on the same state directory, with its
own renderer and colour profile. Only keys in the authorized-keys file get in (read at every
login). Runs belong to the engine's processes, so a dropped session never ends one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Addr == "" {
				return errors.New("--ssh ADDR: give the address to listen on, e.g. --ssh 127.0.0.1:2222")
			}
			cfg, eng, err := appSettings()
			if err != nil {
				return err
			}
			o.StateDir, o.Engine, o.Agents, o.Project = cfg.StateDir, eng, agentNameList(), eng.project
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return tui.Serve(ctx, o)
		},
	}
	home, _ := os.UserHomeDir()
	cmd.Flags().StringVar(&o.Addr, "ssh", "", "address to listen on, e.g. 127.0.0.1:2222")
	cmd.Flags().StringVar(&o.AuthorizedKeys, "authorized-keys", filepath.Join(home, ".ssh", "authorized_keys"), "only these keys get in")
	cmd.Flags().StringVar(&o.HostKey, "host-key", "", "the server's key (default: generated in the state directory)")
	return cmd
}

// cliff runs a cliff analysis and shows it: the live run view on a terminal, lines on stderr
// otherwise; then the report (or the result as JSON) on stdout.
func cliff(ctx context.Context, o engine.CliffOptions, asJSON bool) error {
	watch := o.Out
	if o.Run != "" {
		watch = o.Run
	}
	o.Bus = journal.NewBus()
	return analysis(ctx, o.Config, watch, o.Bus, asJSON, func(ctx context.Context, progress io.Writer) (string, any, error) {
		o.Progress = progress
		dir, res, err := engine.Cliff(ctx, o)
		if dir != "" {
			fmt.Fprintf(os.Stderr, "tare cliff: run directory %s (go on with tare cliff --run %s --budget N)\n", dir, dir)
		}
		return dir, res, err
	})
}

// analysis runs one analysis under showRun and prints what it found: the report.txt it
// wrote, or its result as JSON.
func analysis(ctx context.Context, cfg *config.Config, watch string, bus *journal.Bus, asJSON bool,
	run func(ctx context.Context, progress io.Writer) (string, any, error)) error {
	var dir string
	var res any
	err := showRun(ctx, cfg, watch, bus, func(ctx context.Context, lines bool) error {
		var progress io.Writer
		if lines {
			progress = os.Stderr
		}
		var err error
		dir, res, err = run(ctx, progress)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	fmt.Print(journal.Printable(string(report)))
	return err
}

func demoCliffCmd() *cobra.Command {
	var o engine.CliffOptions
	var side string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cliff",
		Short: "Find where a failed run of tare's demo was lost, offline",
		Long: fmt.Sprintf(`Extracts tare's demo project with its cliff script (the agent fixes greet.sh, runs it, then
tidies up; one time in seven the tidying undoes the fix, at step %d) and runs tare cliff on a
recording that took that branch (--seed %d), against tare's own model server. The report's
first line should begin "cliff at step %d", with the posterior it was pinned on.`, demo.CliffStep, demo.CliffSeed, demo.CliffStep),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Config, err = settings(); err != nil {
				return err
			}
			sides, err := engine.ParseSides([]string{side}, nil)
			if err != nil {
				return err
			}
			name := enginerun.DirName("demo", time.Now())
			paths, err := demo.Extract(filepath.Join(o.Config.StateDir, "demo", name))
			if err != nil {
				return err
			}
			o.Side, o.Out = sides[0], filepath.Join(o.Config.StateDir, "cliff", name)
			o.Prompt, o.Check, o.Project, o.Script = demo.Task, demo.Check, paths.Project, paths.CliffScript
			o.CheckTimeout, o.AgentTimeout = time.Minute, 10*time.Minute
			o.Argv, o.Version = os.Args[1:], version()
			return cliff(cmd.Context(), o, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&side, "side", "claude", "the agent, as for tare cliff")
	f.Int64Var(&o.Seed, "seed", demo.CliffSeed, "seed of the model script's branch draws")
	f.IntVar(&o.Tails, "tails", 3, "tails a round starts from one step")
	f.IntVar(&o.Budget, "budget", 30, "tails in all")
	f.IntVar(&o.Jobs, "jobs", 3, "tails at the same time")
	f.Float64Var(&o.GapBelow, "gap-below", 0.2, "report a model gap when the start's upper 95% bound is below this")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON instead of the report")
	return cmd
}

func swapCmd() *cobra.Command {
	var o engine.SwapOptions
	var project, a, b, aArgs, bArgs, cuts string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "swap PROMPT --check CMD [--a claude] [--b codex] [--cuts 0,0.5,1] [flags]",
		Short: "Was it the workspace or the agent? Swap workspaces between two agents' runs",
		Long: `Each agent (--a, --b) makes an original run of the task. At each cut (a fraction of that run's
steps) each agent continues each workspace: its own natively and by handoff, the other's by
handoff (--handoff trail: the written steps so far; workspace: the files alone), --tails times
each, in fresh rooms, scored by the check. Per cut the report gives the table of pass rates and
three effects, each the mean of two differences weighed equally: the state effect (whose
workspace, per continuing agent), the model effect (which agent continues, per workspace) and
the handoff cost (an agent on its own workspace, natively against by handoff, per agent). It
says in words which are distinguishable from zero, 95% family-wise: each effect's interval is
Bonferroni-corrected over every effect it calls. A cut at step 0 is a control: both workspaces
are the untouched project, so its state effect is shown and never called; its model and handoff
effects are called (agent a against b from the same start). Each agent makes one original, so
every effect is about these two runs' workspaces, not the agents' runs in general; with
--originals N each agent makes N, the k-th pair is swapped as one swap, and each effect is the
mean over the pairs with an interval over them, which speaks of the agents. Beside a
non-call the report gives the smallest effect the cells could have called; --detect D sizes
--tails so that a real effect of D is called with 80% power.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Config, err = settings(); err != nil {
				return err
			}
			if o.Cuts, err = engine.ParseCuts(cuts); err != nil {
				return err
			}
			sides, err := engine.ParseSides([]string{strings.TrimSpace(a + " " + aArgs), strings.TrimSpace(b + " " + bArgs)}, nil)
			if err != nil {
				return err
			}
			o.A, o.B = sides[0], sides[1]
			if o.Detect != 0 && cmd.Flags().Changed("tails") {
				return errors.New("--detect sizes --tails: give one of them, not both")
			}
			if o.Originals < 1 {
				return fmt.Errorf("--originals %d: give at least 1 original run per agent", o.Originals)
			}
			if o.Project, err = projectDir(project, o.AllowDirty); err != nil {
				return err
			}
			if o.Script != "" {
				if _, err := modelserver.LoadScript(o.Script); err != nil {
					return err
				}
			}
			o.Prompt, o.Argv, o.Version = args[0], os.Args[1:], version()
			if o.Out == "" {
				o.Out = enginerun.FreeDir(filepath.Join(o.Config.StateDir, "swap"), o.Project, time.Now())
			}
			warnCheckOnHost(o.CheckOnHost && o.Check != "")
			return swap(cmd.Context(), o, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&a, "a", "claude", "the first agent")
	f.StringVar(&b, "b", "codex", "the second agent")
	f.StringVar(&aArgs, "a-args", "", "the first agent's own arguments")
	f.StringVar(&bArgs, "b-args", "", "the second agent's own arguments")
	f.StringVar(&cuts, "cuts", "0,0.5,1", "where to swap: fractions of each original run's steps, increasing")
	f.IntVar(&o.Tails, "tails", 3, "tails per cut, workspace, agent and way of continuing")
	f.IntVar(&o.Originals, "originals", 1, "original runs per agent: 1 speaks of the two originals' workspaces; N pairs of originals, of the agents")
	f.Float64Var(&o.Detect, "detect", 0, "size --tails to call a real effect of this size (a difference of pass rates, like 0.5) with 80% power")
	f.IntVar(&o.Jobs, "jobs", 3, "tails at the same time")
	f.StringVar(&o.Handoff, "handoff", "trail", "what a handoff gives the other agent: trail or workspace")
	onFlag(cmd, &o.On)
	f.BoolVar(&asJSON, "json", false, "print the result as JSON instead of the report")
	f.StringVar(&project, "project", ".", "the project the runs start from")
	f.StringVar(&o.Check, "check", "", "shell command that scores a workspace, in a room of its own (exit 0 passes)")
	f.DurationVar(&o.CheckTimeout, "check-timeout", engine.DefaultCheckTimeout, "a check running longer fails")
	checkOnHostFlag(cmd, &o.CheckOnHost)
	f.DurationVar(&o.AgentTimeout, "timeout", engine.DefaultAgentTimeout, "an agent running longer is stopped")
	f.StringVar(&o.Out, "out", "", "run directory (default $XDG_STATE_HOME/tare/swap/<project>-<time>)")
	f.StringVar(&o.Script, "script", "", "talk to tare's own model server replaying this script")
	f.Int64Var(&o.Seed, "seed", 0, "seed of the script's branch draws (original k of a draws seed+2k, of b seed+2k+1)")
	f.BoolVar(&o.AllowDirty, "allow-dirty", false, `run even when a reading is not "tare: 0.00"`)
	return cmd
}

// swap runs a swap analysis and shows it, as cliff does.
func swap(ctx context.Context, o engine.SwapOptions, asJSON bool) error {
	o.Bus = journal.NewBus()
	return analysis(ctx, o.Config, o.Out, o.Bus, asJSON, func(ctx context.Context, progress io.Writer) (string, any, error) {
		o.Progress = progress
		dir, res, err := engine.Swap(ctx, o)
		if dir != "" {
			fmt.Fprintf(os.Stderr, "tare swap: run directory %s\n", dir)
		}
		return dir, res, err
	})
}

func demoSwapCmd() *cobra.Command {
	var o engine.SwapOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "swap",
		Short: "Swap workspaces between claude's and codex's runs of tare's demo, offline",
		Long: fmt.Sprintf(`Extracts tare's demo project with its swap script (the agent fixes greet.sh and one time in
five adds a settings file that breaks it for good) and runs tare swap on it with claude and
codex against tare's own model server (--seed %d: original a adds the file, original b does
not), at cuts 0 (a control: both workspaces the untouched project) and 1 (the end of each
run). Both agents follow one script, so at the last cut the report shows a state effect and no
model effect. Two cuts, not the three of tare swap's default: each cut past step 0 adds three
calls to correct for (the control two), and with three tails a cell the demo's state effect
stands out of the intervals corrected for five calls, not always of those corrected for eight.`, demo.SwapSeed),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Config, err = settings(); err != nil {
				return err
			}
			name := enginerun.DirName("demo", time.Now())
			paths, err := demo.Extract(filepath.Join(o.Config.StateDir, "demo", name))
			if err != nil {
				return err
			}
			o.A, o.B, o.Out = journal.Side{Agent: "claude"}, journal.Side{Agent: "codex"}, filepath.Join(o.Config.StateDir, "swap", name)
			o.Prompt, o.Check, o.Project, o.Script = demo.Task, demo.Check, paths.Project, paths.SwapScript
			o.Cuts, o.Handoff = []float64{0, 1}, "trail"
			o.CheckTimeout, o.AgentTimeout = time.Minute, 10*time.Minute
			o.Argv, o.Version = os.Args[1:], version()
			return swap(cmd.Context(), o, asJSON)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.Seed, "seed", demo.SwapSeed, "seed of the model script's branch draws")
	f.IntVar(&o.Tails, "tails", 3, "tails per cut, workspace, agent and way of continuing")
	f.IntVar(&o.Jobs, "jobs", 3, "tails at the same time")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON instead of the report")
	return cmd
}

func demoCmd() *cobra.Command {
	var o engine.CalibrateOptions
	var sides []string
	var pair string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Calibrate two agents (claude and codex, or --sides) on tare's demo project and model: no account needed",
		Long: `Extracts the demo experiment that ships with tare (a small project, a task, a check and a
model script with a branch) into the state directory and runs tare calibrate on it, every side
talking to tare's own model server. Every run draws the branch on its own, as calls to a real
model would; --seed fixes the draws (the default seed shows rates strictly between 0 and 1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Config, err = settings(); err != nil {
				return err
			}
			if pair != "" {
				if cmd.Flags().Changed("side") {
					return fmt.Errorf("--sides and --side both given: use one of them")
				}
				if sides, err = demoSides(pair); err != nil {
					return err
				}
			}
			if o.Sides, err = engine.ParseSides(sides, nil); err != nil {
				return err
			}
			name := enginerun.DirName("demo", time.Now())
			paths, err := demo.Extract(filepath.Join(o.Config.StateDir, "demo", name))
			if err != nil {
				return err
			}
			o.Out = filepath.Join(o.Config.StateDir, "calibrate", name)
			o.Prompt, o.Check, o.Project, o.Script = demo.Task, demo.Check, paths.Project, paths.Script
			o.CheckTimeout, o.AgentTimeout = time.Minute, 10*time.Minute
			o.Argv, o.Version = os.Args[1:], version()
			return calibrate(cmd.Context(), o, false)
		},
	}
	cmd.Flags().StringArrayVar(&sides, "side", []string{"claude", "codex"}, "a side, as for tare calibrate")
	cmd.Flags().StringVar(&pair, "sides", "", "the two agents to compare instead, e.g. gemini,claude (any two of claude, codex, pi, gemini)")
	cmd.Flags().IntVar(&o.Runs, "runs", 6, "fresh starts per side")
	cmd.Flags().IntVar(&o.Jobs, "jobs", 2, "runs at the same time")
	cmd.Flags().Int64Var(&o.Seed, "seed", 7, "seed of the model script's branch draws")
	checkOnHostFlag(cmd, &o.CheckOnHost)
	cmd.AddCommand(demoCliffCmd(), demoSwapCmd(), demoWorkshopCmd())
	return cmd
}

// checkOnHostFlag is the loud opt-in to run a check on the host: the check runs what the
// agent wrote, so by default it has a room of its own.
func checkOnHostFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVar(on, "check-on-host", false, "run the check ON THE HOST, as you, with your environment, files and network (said in the report and the journal)")
}

// warnRecordedCheck warns before a tail or a resume of the run in dir whose check will run on
// the host: by the run's own recorded choice, or by this command's onHost.
func warnRecordedCheck(dir string, onHost bool) {
	if rec, err := enginerun.ReadRecipe(dir); err == nil {
		warnCheckOnHost((onHost || rec.CheckRoom.OnHost) && rec.Check != "")
	}
}

// warnCheckOnHost says on stderr, before the run, that its check will run on the host.
func warnCheckOnHost(on bool) {
	if on {
		fmt.Fprintln(os.Stderr, "tare: warning: "+enginerun.OnHostWarning)
	}
}

func modelServerCmd() *cobra.Command {
	var addr, script, logPath string
	var seed int64
	cmd := &cobra.Command{
		Use:   "model-server",
		Short: "Serve tare's own model endpoints on loopback (Anthropic Messages, OpenAI Responses and Chat, Gemini, Code Assist)",
		Long: `Serves POST /v1/messages, /v1/responses, /v1/chat/completions, Gemini's
/v1beta/models/MODEL:streamGenerateContent and Code Assist's /v1internal:streamGenerateContent
(Gemini CLI on a Google login; point CODE_ASSIST_ENDPOINT at the server), streaming as the agent CLIs expect. Without --script it is in probe mode: it records every request and answers with a
short text. With --script it replays a scripted conversation (see modelserver's package doc).
Every request is logged to --log as one JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := modelserver.Options{Seed: seed, LogPath: logPath}
			if script != "" {
				s, err := modelserver.LoadScript(script)
				if err != nil {
					return err
				}
				opts.Script = s
			}
			srv, err := modelserver.New(opts)
			if err != nil {
				return err
			}
			if err := srv.Start(addr); err != nil {
				return fmt.Errorf("--addr %s: %v; fix: choose a free port on 127.0.0.1", addr, err)
			}
			fmt.Fprintf(os.Stderr, "tare model-server: %s (%s); Ctrl-C to stop\n", srv.URL(), map[bool]string{true: "script " + script, false: "probe mode"}[script != ""])
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			<-ctx.Done()
			return srv.Close()
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8787", "address to listen on (loopback only)")
	cmd.Flags().StringVar(&script, "script", "", "replay this scripted conversation (TOML)")
	cmd.Flags().StringVar(&logPath, "log", "", "append every request as a JSON line to this file")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the script's random branches")
	return cmd
}

func doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check bwrap, namespaces and each agent CLI; name the fix for each problem (exit 1 when a line says FAIL)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := settings()
			if err != nil {
				return err
			}
			if !engine.Doctor(cmd.Context(), cfg, os.Stdout) {
				return exitError{1}
			}
			return nil
		},
	}
}

func agentNameList() []string {
	var names []string
	for _, a := range agent.All() {
		names = append(names, a.Name())
	}
	return names
}

func agentNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return agentNameList(), cobra.ShellCompDirectiveNoFileComp
}

func pricesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prices [show [MODEL]] | update [URL|FILE]",
		Short: "The price table tare costs runs with: show it, or update it from genai-prices or LiteLLM",
		Long: `tare prices costs runs with genai-prices' maintained database (bundled), tare's corrections
to it, and your own table in prices.json beside config.toml, which is looked up first. A model
no rule names has no price: its cost is shown as unknown, never guessed.
Runs on tare's own model server (--script, tare demo) show their dollar figures as simulated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return showPrices(cmd, nil) },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show [MODEL]",
		Short: "The table's models of the agents' providers, or one model's prices and the rule that matched it",
		Args:  cobra.MaximumNArgs(1),
		RunE:  showPrices,
	}, &cobra.Command{
		Use:   "update [URL|FILE]",
		Short: "Replace your price table with a genai-prices data.json or LiteLLM model price JSON",
		Long: `Reads a price file from a URL or a local file: genai-prices' data.json format, or LiteLLM's
model_prices_and_context_window.json (what tare-cli used). It is written, in genai-prices'
format, to prices.json beside config.toml, replacing what update wrote before; models it does
not name keep the bundled price. A file that cannot be read or understood changes nothing.`,
		Example: `  tare prices update
  tare prices update https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json
  tare prices update ./my-prices.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := prices.DefaultURL
			if len(args) == 1 {
				src = args[0]
			}
			path := prices.OverrideFile(config.File())
			format, n, err := prices.Update(cmd.Context(), src, path)
			if err != nil {
				return fmt.Errorf("prices update %v", err)
			}
			fmt.Printf("tare prices: %d models (%s format) from %s, now in %s\n", n, format, src, path)
			return nil
		},
	})
	return cmd
}

// showPrices prints the table, or one model's prices; an unknown model is bad input.
func showPrices(cmd *cobra.Command, args []string) error {
	path := prices.OverrideFile(config.File())
	table, err := prices.Load(path)
	if err != nil {
		return err
	}
	now := time.Now()
	if len(args) == 0 {
		var b strings.Builder
		table.Show(&b, path, now)
		fmt.Print(journal.Printable(b.String())) // names from a downloaded price file
		return nil
	}
	m, ok := table.Lookup(args[0])
	if !ok {
		return fmt.Errorf("prices show %s: no price for this model id; fix: check the id (tare prices show lists them), or add its price to a file and run tare prices update FILE", args[0])
	}
	fmt.Print(journal.Printable(prices.Describe(args[0], m, now))) // names from a downloaded price file
	return nil
}
