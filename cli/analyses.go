package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"tare/engine"
	"tare/engine/journal"
)

func cliffCmd() *cobra.Command {
	var o engine.CliffOptions
	var asJSON bool
	var rf *runFlags
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
after 0-0.3) 30 tails pin about 22% at 10 steps and 7% at 200 (docs/cliff.md). Tails without a
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
			rf.record(&o.RecordOptions)
			var err error
			if o.Config, err = settings(); err != nil {
				return err
			}
			o.Argv, o.Version = argv(), version()
			if o.Run == "" {
				sides, err := engine.ParseSides([]string{args[0]}, nil)
				if err != nil {
					return err
				}
				o.Side = sides[0]
				o.Side.Args = append(o.Side.Args, args[2:]...)
				o.Prompt = args[1]
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
	rf = addRunFlags(cmd, runHelp{kind: "cliff"}, true)
	return cmd
}

// cliff runs a cliff analysis and shows it: the live run view on a terminal, lines on stderr
// otherwise; then the report (or the result as JSON) on stdout.
func cliff(ctx context.Context, o engine.CliffOptions, asJSON bool) error {
	o.Bus = journal.NewBus()
	return analysis(ctx, o.Config, o.Bus, asJSON, func(ctx context.Context, progress io.Writer, started func(string)) (string, any, error) {
		o.Progress, o.Started = progress, started
		dir, res, err := engine.Cliff(ctx, o)
		if dir != "" {
			fmt.Fprintf(os.Stderr, "tare cliff: run directory %s (go on with tare cliff --run %s --budget N)\n", dir, dir)
		}
		return dir, res, err
	})
}

func swapCmd() *cobra.Command {
	var o engine.SwapOptions
	var a, b, aArgs, bArgs, cuts string
	var asJSON bool
	var rf *runFlags
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
			rf.record(&o.RecordOptions)
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
			o.Prompt, o.Argv, o.Version = args[0], argv(), version()
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
	// swap takes no spending caps.
	rf = addRunFlags(cmd, runHelp{
		kind:       "swap",
		starts:     "the runs start",
		seed:       "seed of the script's branch draws (original k of a draws seed+2k, of b seed+2k+1)",
		allowDirty: `run even when a reading is not "tare: 0.00"`,
	}, false)
	return cmd
}

// swap runs a swap analysis and shows it, as cliff does.
func swap(ctx context.Context, o engine.SwapOptions, asJSON bool) error {
	o.Bus = journal.NewBus()
	return analysis(ctx, o.Config, o.Bus, asJSON, func(ctx context.Context, progress io.Writer, started func(string)) (string, any, error) {
		o.Progress, o.Started = progress, started
		dir, res, err := engine.Swap(ctx, o)
		if dir != "" {
			fmt.Fprintf(os.Stderr, "tare swap: run directory %s\n", dir)
		}
		return dir, res, err
	})
}
