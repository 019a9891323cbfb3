package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"tare/engine"
	"tare/engine/probe"
)

// capFlags adds --max-cost and --max-tokens (each tail) and --run-max-cost and
// --run-max-tokens (all tails together): the relay meters every model call and answers the
// first one after a cap is spent with an error, and the tail ends as over budget.
func capFlags(cmd *cobra.Command, c *engine.Caps) {
	f := cmd.Flags()
	f.Float64Var(&c.TailCost, "max-cost", 0, "USD a tail may spend on tare's prices, metered at the relay; the next call is refused and the tail ends over budget (0: no cap)")
	f.Int64Var(&c.TailTokens, "max-tokens", 0, "tokens (input, output and cache) a tail may spend, metered at the relay (0: no cap)")
	f.Float64Var(&c.RunCost, "run-max-cost", 0, "USD all tails of the run may spend together (0: no cap)")
	f.Int64Var(&c.RunTokens, "run-max-tokens", 0, "tokens all tails of the run may spend together (0: no cap)")
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

// checkOnHostFlag is the loud opt-in to run a check on the host: the check runs what the
// agent wrote, so by default it has a room of its own.
func checkOnHostFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVar(on, "check-on-host", false, "run the check ON THE HOST, as you, with your environment, files and network (said in the report and the journal)")
}

// warnRecordedCheck warns before a tail or a resume of the run in dir whose check will run on
// the host: by the run's own recorded choice, or by this command's onHost.
func warnRecordedCheck(dir string, onHost bool) {
	if rec, err := engine.ReadRecipe(dir); err == nil {
		warnCheckOnHost((onHost || rec.CheckRoom.OnHost) && rec.Check != "")
	}
}

// warnCheckOnHost says on stderr, before the run, that its check will run on the host.
func warnCheckOnHost(on bool) {
	if on {
		fmt.Fprintln(os.Stderr, "tare: warning: "+engine.OnHostWarning)
	}
}
