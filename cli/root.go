// Package cli is tare's command line: one cobra command per verb, the flags they share, and
// the wiring from a command to the engine and the app; the work happens in the packages below.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"

	"tare/agent"
	"tare/config"
	"tare/engine"
	"tare/engine/journal"
	"tare/tui"

	"golang.org/x/term"
)

// exitError carries an exit code through cobra without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Execute runs the command line os.Args names under ctx and returns the process's exit code;
// it prints the one line an error needs. ctx ends on the operator's signal: a command it stops
// is reported as stopped, not as failed.
func Execute(ctx context.Context) int {
	err := root().ExecuteContext(ctx)
	signalled := ctx.Err() != nil
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	case errors.As(err, &stoppedRun{}):
		// The operator stopped a run (ctrl+c in its view or in line mode, or a signal).
		fmt.Fprintf(os.Stderr, "tare: %v\n", err)
		return 130
	case signalled && errors.Is(err, context.Canceled):
		// Not an error of the command's: the operator stopped it.
		fmt.Fprintln(os.Stderr, "tare: stopped by a signal; a run it stopped is finished with tare resume DIR")
		return 130
	default:
		fmt.Fprintf(os.Stderr, "tare: %s\n", journal.Printable(err.Error()))
		return 2
	}
}

// argv is this command line as a recipe keeps it: its paths absolute, so that tare rerun
// means the same from any working folder.
func argv() []string {
	wd, _ := os.Getwd()
	return engine.AbsoluteArgv(os.Args[1:], wd)
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
	// tare --help lists the commands by what they are for, not in one alphabetical column.
	groups := []struct {
		id, title string
		cmds      []*cobra.Command
	}{
		{"rooms", "Agents in a clean room:", append([]*cobra.Command{probeCmd(), envCmd()}, attachCmds()...)},
		{"runs", "Runs:", []*cobra.Command{calibrateCmd(), recordCmd(), tailCmd(), resumeCmd(), rerunCmd(), demoCmd()}},
		{"analyses", "Analyses:", []*cobra.Command{cliffCmd(), swapCmd(), judgeCmd(), judgeNoiseCmd()}},
		{"workshop", "Prose experiments:", []*cobra.Command{workshopCmd()}},
		{"app", "The app:", []*cobra.Command{watchCmd(), serveCmd()}},
		{"tools", "Tools:", []*cobra.Command{doctorCmd(), pricesCmd(), modelServerCmd(), gcCmd(), workerCmd()}},
	}
	for _, g := range groups {
		cmd.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.cmds {
			c.GroupID = g.id
			cmd.AddCommand(c)
		}
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
