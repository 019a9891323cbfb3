package main

import (
	"github.com/spf13/cobra"

	"tare/workshop"
)

// workshopCmd is tare workshop: prose experiments read blind.
func workshopCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workshop",
		Short: "Prose experiments: frozen material, writers in clean rooms, drafts read blind",
		Long: `A workshop experiment compares how agents and models write prose from the same frozen
material. prepare freezes a plan (assignment, brief, files, outputs, writers); run starts each
auto writer in a room proven clean, its input read-only and drafts/ writable; collect checks and
archives the drafts; anonymize shuffles the completed drafts under letters and seals the key;
report shows each writer's time, tokens and cost, and draft sizes only once sealed.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(workshopPrepareCmd())
	return cmd
}

func workshopPrepareCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "prepare PLAN DEST",
		Short: "Freeze a plan (TOML or JSON) into a new experiment folder",
		Long: `Checks the whole plan before anything is created: relative paths without traversal, no
symlinks or special files in the material, no agent instruction files (AGENTS.md, CLAUDE.md,
GEMINI.md, .claude/, .codex/, .pi/...), unique writers, known tiers and capabilities, outputs
below drafts/. Then freezes it into DEST: plan.json with the hash of every input and its digest,
source/, writers/ID/{input,drafts,START.md} and records/ID/state.json per writer.
An example plan: workshop/testdata/plan.toml.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := workshop.Prepare(args[0], args[1])
			if err != nil {
				return err
			}
			ids := make([]string, len(f.Writers))
			for i, w := range f.Writers {
				ids[i] = w.ID
			}
			return printJSON(map[string]any{"experiment": args[1], "writers": ids, "supplied_bytes": f.SuppliedBytes})
		},
	}
}
