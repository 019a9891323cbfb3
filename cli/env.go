package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"tare/environ"
)

// envCmd is `tare env`: the cache of task environments built from Dockerfiles.
func envCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Build, list and remove task environments (a Dockerfile's image root, cached)",
		Long: `A task's environment folder (a Dockerfile and its build context, as Harbor and
Terminal-Bench tasks bring it in environment/) is built with podman (buildah, or docker with a
daemon, where podman is absent) and its image's root filesystem kept in tare's cache below the
state directory, keyed by a digest of the build context's files, so that rooms can run in it.
Base images come from the engine's local store first; scripts/setup makes debian:bookworm-slim
there from Debian's packages.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(envBuildCmd(), envLsCmd(), envRmCmd())
	return cmd
}

func envCache() (environ.Cache, error) {
	cfg, err := settings()
	if err != nil {
		return environ.Cache{}, err
	}
	c := environ.Open(cfg.StateDir)
	c.Programs = cfg.Programs
	return c, nil
}

func envBuildCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "build DIR",
		Short: "Build an environment folder into tare's cache (a no-op when its digest is cached)",
		Long: `Builds DIR's Dockerfile with the container engine (chroot isolation, never pulling during
the build), exports the image's root filesystem into tare's cache with its WORKDIR, ENV and USER,
and prints the environment's digest. Every FROM must be in the engine's store or pullable: one
that is neither is refused before the build starts. A .dockerignore is refused: the digest
covers every file of the folder. The build's log is kept in the cache; a failed build names
the Dockerfile line that failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cache, err := envCache()
			if err != nil {
				return err
			}
			e, err := cache.Build(cmd.Context(), args[0], os.Stderr)
			if err != nil {
				return err
			}
			fmt.Printf("%s %s (WORKDIR %s)\n", e.Digest, e.Image, e.WorkDir)
			return nil
		},
	}
}

func envLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the cached environments",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cache, err := envCache()
			if err != nil {
				return err
			}
			list, err := cache.List()
			if err != nil {
				return err
			}
			if len(list) == 0 {
				fmt.Printf("no environments in %s; tare env build DIR builds one\n", cache.Dir)
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DIGEST\tWORKDIR\tUSER\tBUILT\tSOURCE")
			for _, e := range list {
				user := e.User
				if user == "" {
					user = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Short(), e.WorkDir, user, e.Built.Local().Format("2006-01-02 15:04"), e.Source)
			}
			return tw.Flush()
		},
	}
}

func envRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME|DIGEST...",
		Short: "Remove cached environments and their images",
		Long: `Removes each named environment (its image name, localhost/tare-env-DIGEST, or at least 6
characters of its digest, as tare env ls prints it) from tare's cache and its image from the
engine's store.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cache, err := envCache()
			if err != nil {
				return err
			}
			for _, key := range args {
				e, err := cache.Remove(cmd.Context(), key)
				if err != nil {
					return err
				}
				fmt.Printf("removed %s (%s)\n", e.Short(), e.Source)
			}
			return nil
		},
	}
}
