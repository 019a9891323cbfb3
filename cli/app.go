package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	"tare/engine/journal"
	"tare/tui"
)

func watchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "watch DIR...",
		Short: "The app, following run directories (or workshop experiments) written by any tare process",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if exps, err := workshopDirs(args); exps != nil || err != nil {
				return watchWorkshop(cmd.Context(), exps, err)
			}
			for _, d := range args {
				if _, err := os.Stat(filepath.Join(d, journal.JournalFile)); err != nil {
					return fmt.Errorf("%s: %w", d, errNoRun)
				}
			}
			if !hasTerminal() {
				// A pipe, a log, CI: the events as plain lines, no screen codes.
				return tui.WatchLines(cmd.Context(), args, os.Stdout)
			}
			_, eng, err := appSettings()
			if err != nil {
				return err
			}
			return tui.Watch(cmd.Context(), args, tui.Options{Engine: eng})
		},
	}
}

func serveCmd() *cobra.Command {
	var o tui.ServeOptions
	cmd := &cobra.Command{
		Use:   "serve --ssh ADDR [--authorized-keys FILE]",
		Short: "The app over ssh, on the same state, for every operator whose key is authorized",
		Long: `Serves the app over ssh: each session gets its own app on the same state directory, with its
own renderer and colour profile. Only keys in the authorized-keys file get in (read at every
login). Runs belong to the engine's processes, so a dropped session never ends one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Addr == "" {
				return errors.New("--ssh ADDR: give the address to listen on, e.g. --ssh 127.0.0.1:2222")
			}
			cfg, eng, err := appSettings()
			if err != nil {
				return err
			}
			o.StateDir, o.Engine, o.Agents, o.Project = cfg.StateDir, eng, agentNameList(), eng.project
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return tui.Serve(ctx, o)
		},
	}
	home, _ := os.UserHomeDir()
	cmd.Flags().StringVar(&o.Addr, "ssh", "", "address to listen on, e.g. 127.0.0.1:2222")
	cmd.Flags().StringVar(&o.AuthorizedKeys, "authorized-keys", filepath.Join(home, ".ssh", "authorized_keys"), "only these keys get in")
	cmd.Flags().StringVar(&o.HostKey, "host-key", "", "the server's key (default: generated in the state directory)")
	return cmd
}
