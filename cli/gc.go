package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tare/engine"
	"tare/engine/journal"
)

func gcCmd() *cobra.Command {
	var keepDays int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc [--keep-days N] [--dry-run]",
		Short: "Remove what no capsule reaches from the runs' capsule stores",
		Long: `Removes from every run's capsule store (below the state directory) the blobs and trees no
capsule reaches, such as a snapshot's objects when tare was killed before its record, and the
temporary files of writers that died, then says how much that freed. Capsules, records and
the stat cache's files are kept. It is safe while other tare processes run: each store is
locked from the mark to the end of the sweep, and a run a tare is running is left alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if keepDays < 0 {
				return fmt.Errorf("--keep-days %d: a number of days, 0 or more; fix: --keep-days 0 removes everything unreferenced", keepDays)
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			res, err := engine.GC(cmd.Context(), engine.GCOptions{StateDir: cfg.StateDir,
				Keep: time.Duration(keepDays) * 24 * time.Hour, DryRun: dryRun, Progress: os.Stderr})
			if err != nil {
				return err
			}
			verb := "freed"
			if dryRun {
				verb = "would free (dry run, nothing removed)"
			}
			stores := fmt.Sprintf("%d run stores", res.Stores)
			if res.Stores == 1 {
				stores = "1 run store"
			}
			fmt.Printf("tare gc: %s %s in %s", verb, res.Describe(), stores)
			if res.Young > 0 {
				fmt.Printf("; kept %d unreferenced files younger than %d days", res.Young, keepDays)
			}
			fmt.Println()
			for _, dir := range res.Busy {
				fmt.Printf("tare gc: %s is being run by another tare: left alone; run tare gc again once it finished\n", journal.Printable(dir))
			}
			for _, err := range res.Failed {
				fmt.Fprintf(os.Stderr, "tare gc: %s\n", journal.Printable(strings.ReplaceAll(err.Error(), "\n", " ")))
			}
			if len(res.Failed) > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&keepDays, "keep-days", 1, "keep unreferenced files written in the last N days")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "remove nothing; say what would be freed")
	return cmd
}
