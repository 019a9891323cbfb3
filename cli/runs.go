package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"tare/engine"
	"tare/engine/journal"
)

func calibrateCmd() *cobra.Command {
	var o engine.CalibrateOptions
	var asJSON bool
	var sides, prompts []string
	var promptFile string
	var rf *runFlags
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
			rf.calibrate(&o)
			if err := separateFlags(cmd, o); err != nil {
				return err
			}
			var err error
			if o.Sides, err = engine.ParseSides(sides, prompts); err != nil {
				return err
			}
			if o.Config, err = settings(); err != nil {
				return err
			}
			o.Argv, o.Version = argv(), version()
			return calibrate(cmd.Context(), o, asJSON)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (each side's verdicts, rate, interval, no verdicts and retries with reasons, usage)")
	f.StringArrayVar(&sides, "side", nil, `an agent and its arguments, e.g. "claude --model haiku" (repeat for each side; keys a, b, c...)`)
	f.StringVar(&promptFile, "prompt-file", "", "read the task from this file instead of PROMPT")
	f.StringArrayVar(&prompts, "side-prompt", nil, `a side's own prompt, KEY=PROMPT, e.g. "b=/b:ideate a todo app"`)
	rf = addRunFlags(cmd, runHelp{
		kind:       "calibrate",
		starts:     "each run starts",
		check:      "shell command run in each finished workspace, in a room of its own (exit 0 passes)",
		script:     "every side talks to tare's own model server replaying this script, instead of its provider",
		seed:       "seed of the script's branch draws, to replay a run (default: a fresh one, shown in the report)",
		allowDirty: `run even when a reading is not "tare: 0.00"`,
	}, true)
	f.IntVar(&o.Runs, "runs", 10, "fresh starts per side")
	f.IntVar(&o.Jobs, "jobs", 3, "runs at the same time")
	f.BoolVar(&o.Keep, "keep", false, "keep every run's finished workspace")
	onFlag(cmd, &o.On)
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
	var dir, report string
	err := showRun(ctx, o.Config, o.Bus, func(ctx context.Context, lines bool, started func(string)) error {
		if lines {
			o.Progress = os.Stderr
		}
		o.Started = started
		var err error
		dir, report, err = engine.Calibrate(ctx, o)
		return err
	})
	if dir != "" {
		fmt.Fprintf(os.Stderr, "tare calibrate: run directory %s (watch it with tare watch %s)\n", dir, dir)
	}
	if err != nil {
		return err
	}
	return printReport(dir, report, asJSON)
}

func recordCmd() *cobra.Command {
	var o engine.RecordOptions
	var side string
	var rf *runFlags
	cmd := &cobra.Command{
		Use:   "record PROMPT [--side AGENT]",
		Short: "Run a task once in a clean room with a capsule after every tool call",
		Long: `Runs the task once, in a clean room, with a capsule of the workspace after every step (by the
agent's own post-tool hook), keeps its session, and lists the steps. tare tail DIR --step N then
continues it from any step in a fresh room, natively or by handoff to any agent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rf.record(&o)
			sides, err := engine.ParseSides([]string{side}, nil)
			if err != nil {
				return err
			}
			if o.Config, err = settings(); err != nil {
				return err
			}
			o.Prompt, o.Side, o.Argv, o.Version = args[0], sides[0], argv(), version()
			warnCheckOnHost(o.CheckOnHost && o.Check != "")
			o.Bus = journal.NewBus()
			var dir string
			err = showRun(cmd.Context(), o.Config, o.Bus, func(ctx context.Context, lines bool, started func(string)) error {
				if lines {
					o.Progress = os.Stderr
				}
				o.Started = started
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
	f.StringVar(&side, "side", "claude", "the agent and its arguments")
	rf = addRunFlags(cmd, runHelp{kind: "record", check: "shell command that scores the tails, in a room of its own (exit 0 passes)"}, true)
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
			err = showRun(cmd.Context(), cfg, o.Bus, func(ctx context.Context, _ bool, started func(string)) error {
				started(o.Dir)
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
			outcome := string(res.Status)
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
			err = showRunAfter(cmd.Context(), cfg, bus, lastSeq(args[0]), func(ctx context.Context, _ bool, started func(string)) error {
				started(args[0])
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

// lastSeq is the Seq of the last event dir's journal holds (0 for none, or for a journal
// that cannot be read: the resume then says why in its own line).
func lastSeq(dir string) int64 {
	events, err := journal.ReadJournal(dir)
	if err != nil || len(events) == 0 {
		return 0
	}
	return events[len(events)-1].Seq
}
