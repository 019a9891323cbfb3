package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"tare/engine"
)

// workerCmd is what a tail's Slurm job runs on its node (calibrate --on slurm writes the job
// script); it is not meant to be typed.
func workerCmd() *cobra.Command {
	var url, exchange string
	cmd := &cobra.Command{
		Use:    "worker JOB.json | worker --url URL --exchange NAME",
		Short:  "Run one tail on a cluster node (the job script of --on slurm runs it)",
		Hidden: true,
		Long: `Runs one tail on the node its Slurm job landed on: restores the tail's capsule from the
shared store onto node-local disk, proves the node's room clean (once per job), runs the agent
and the check in rooms as tare does locally, and writes the end capsule, the tool calls and
the result back beside JOB.json. tare calibrate --on slurm writes JOB.json and the job script.
With [cluster] transport = "http" the job runs it with --url and --exchange instead: the job,
the capsule and the results go over HTTP to the submitting tare, with the run's token from
$TARE_TOKEN.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (url == "") == (len(args) == 1) {
				return nil
			}
			return fmt.Errorf("give JOB.json, or --url and --exchange, as tare's job script does")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if url != "" {
				return engine.WorkerHTTP(cmd.Context(), url, exchange)
			}
			return engine.Worker(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "the submitting tare's exchange (transport http)")
	cmd.Flags().StringVar(&exchange, "exchange", "", "the attempt's exchange name (transport http)")
	return cmd
}

// onFlag is --on, the same on every command that runs tails.
func onFlag(cmd *cobra.Command, on *string) {
	cmd.Flags().StringVar(on, "on", engine.OnLocal, "where the tails run: local (this machine) or slurm (one sbatch job per tail, as config [cluster] says; README \"Slurm\")")
}
