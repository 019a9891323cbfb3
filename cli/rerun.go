package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"tare/engine"
	"tare/engine/journal"
)

func rerunCmd() *cobra.Command {
	var out string
	var yes bool
	cmd := &cobra.Command{
		Use:   "rerun DIR [--out DIR] [--yes]",
		Short: "Repeat a calibrate, record, cliff, swap, judge or judge-noise run from its recipe, naming what drifted first",
		Long: `Reads DIR's recipe.json and, before starting, names what differs from it now: tare's version,
each agent CLI's version, the project's content (a judge run's pages and rubric), the model
script, and what the run being
repeated cost. Then it runs the recorded command line again into a new run directory (a
scripted run draws a fresh seed unless that command line gave --seed). When
something drifted it asks on a terminal; elsewhere it refuses (exit 1) unless --yes. The price
table is not compared: the recipe does not record it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := settings()
			if err != nil {
				return err
			}
			plan, err := engine.PlanRerun(cmd.Context(), args[0], cfg, version())
			if err != nil {
				return err
			}
			rec := plan.Recipe
			// The recipe's prompt and the CLIs' version strings are others' text: printed Printable.
			say := func(format string, a ...any) {
				fmt.Fprint(os.Stderr, journal.Printable(fmt.Sprintf("tare rerun: "+format, a...))+"\n")
			}
			say("repeating tare %s (run of %s)", quoteArgs(rec.Argv), rec.Time.Local().Format("2006-01-02 15:04"))
			for _, d := range plan.Drift {
				say("drifted: %s", d)
			}
			if len(plan.Drift) == 0 {
				say("nothing drifted: tare, the agent CLIs and what the run read are as the recipe has them")
			}
			say("%s", plan.CostLine())
			if len(plan.Drift) > 0 && !yes {
				if !term.IsTerminal(int(os.Stdin.Fd())) || !term.IsTerminal(int(os.Stderr.Fd())) {
					say("%d things drifted since the run, so it would not be the same run; fix: pass --yes to start anyway", len(plan.Drift))
					return exitError{1}
				}
				fmt.Fprint(os.Stderr, "tare rerun: start anyway? [y/N] ")
				answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					say("not started")
					return exitError{1}
				}
			}
			if out != "" {
				if out, err = filepath.Abs(out); err != nil {
					return fmt.Errorf("--out: %v", err)
				}
			}
			// The recorded paths are absolute (or made so against where the run was made), so
			// the repeat runs here, in this process's own working folder.
			again := root()
			again.SetArgs(plan.Args(out))
			return again.ExecuteContext(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "run directory of the repeat (default: a new one beside the run's kind)")
	cmd.Flags().BoolVar(&yes, "yes", false, "start even when something drifted")
	return cmd
}

// quoteArgs is a command line as a shell would read it back.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\|&;<>()*?[]#~") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
