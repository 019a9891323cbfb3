package main

import (
	"github.com/spf13/cobra"

	enginerun "tare/engine/run"
)

// capFlags adds --max-cost and --max-tokens (each tail) and --run-max-cost and
// --run-max-tokens (all tails together): the relay meters every model call and answers the
// first one after a cap is spent with an error, and the tail ends as over budget.
func capFlags(cmd *cobra.Command, c *enginerun.Caps) {
	f := cmd.Flags()
	f.Float64Var(&c.TailCost, "max-cost", 0, "USD a tail may spend on tare's prices, metered at the relay; the next call is refused and the tail ends over budget (0: no cap)")
	f.Int64Var(&c.TailTokens, "max-tokens", 0, "tokens (input, output and cache) a tail may spend, metered at the relay (0: no cap)")
	f.Float64Var(&c.RunCost, "run-max-cost", 0, "USD all tails of the run may spend together (0: no cap)")
	f.Int64Var(&c.RunTokens, "run-max-tokens", 0, "tokens all tails of the run may spend together (0: no cap)")
}
