package main

import (
	"github.com/spf13/cobra"

	"tare/engine"
)

// workerCmd is what a tail's Slurm job runs on its node (calibrate --on slurm writes the job
// script); it is not meant to be typed.
func workerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "worker JOB.json",
		Short:  "Run one tail on a cluster node (the job script of --on slurm runs it)",
		Hidden: true,
		Long: `Runs one tail on the node its Slurm job landed on: restores the tail's capsule from the
shared store onto node-local disk, proves the node's room clean (once per job), runs the agent
and the check in rooms as tare does locally, and writes the end capsule, the tool calls and
the result back beside JOB.json. tare calibrate --on slurm writes JOB.json and the job script.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return engine.Worker(cmd.Context(), args[0])
		},
	}
}

// onFlag is --on, the same on every command that runs tails.
func onFlag(cmd *cobra.Command, on *string) {
	cmd.Flags().StringVar(on, "on", engine.OnLocal, "where the tails run: local (this machine) or slurm (one sbatch job per tail, as config [cluster] says; README \"Slurm\")")
}
