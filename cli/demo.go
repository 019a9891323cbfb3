package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tare/agent"
	"tare/demo"
	"tare/engine"
	"tare/engine/journal"
	"tare/engine/run"
)

// demoSides reads `tare demo --sides A,B`: the two agents the demo compares, any two of
// the ones tare runs. It fails with one line naming the flag and the fix.
func demoSides(pair string) ([]string, error) {
	names := strings.Split(pair, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	if len(names) != 2 || names[0] == "" || names[1] == "" {
		return nil, fmt.Errorf("--sides %q: want two agents separated by a comma, e.g. --sides gemini,claude", pair)
	}
	for _, n := range names {
		if _, err := agent.ByName(n); err != nil {
			return nil, fmt.Errorf("--sides %q: %v", pair, err)
		}
	}
	return names, nil
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
			name := run.DirName("demo", time.Now())
			paths, err := demo.Extract(filepath.Join(o.Config.StateDir, "demo", name))
			if err != nil {
				return err
			}
			o.Side, o.Out = sides[0], filepath.Join(o.Config.StateDir, "cliff", name)
			o.Prompt, o.Check, o.Project, o.Script = demo.Task, demo.Check, paths.Project, paths.CliffScript
			o.CheckTimeout, o.AgentTimeout = time.Minute, 10*time.Minute
			o.Argv, o.Version = argv(), version()
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
			name := run.DirName("demo", time.Now())
			paths, err := demo.Extract(filepath.Join(o.Config.StateDir, "demo", name))
			if err != nil {
				return err
			}
			o.A, o.B, o.Out = journal.Side{Agent: "claude"}, journal.Side{Agent: "codex"}, filepath.Join(o.Config.StateDir, "swap", name)
			o.Prompt, o.Check, o.Project, o.Script = demo.Task, demo.Check, paths.Project, paths.SwapScript
			o.Cuts, o.Handoff = []float64{0, 1}, "trail"
			o.CheckTimeout, o.AgentTimeout = time.Minute, 10*time.Minute
			o.Argv, o.Version = argv(), version()
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
			name := run.DirName("demo", time.Now())
			paths, err := demo.Extract(filepath.Join(o.Config.StateDir, "demo", name))
			if err != nil {
				return err
			}
			o.Out = filepath.Join(o.Config.StateDir, "calibrate", name)
			o.Prompt, o.Check, o.Project, o.Script = demo.Task, demo.Check, paths.Project, paths.Script
			o.CheckTimeout, o.AgentTimeout = time.Minute, 10*time.Minute
			o.Argv, o.Version = argv(), version()
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
