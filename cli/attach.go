package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"tare/agent"
	"tare/engine"
	"tare/tui"
)

// attachCmds are tare claude, tare codex...: one command per agent tare runs.
func attachCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, a := range agent.All() {
		cmds = append(cmds, attachCmd(a))
	}
	return cmds
}

func attachCmd(a agent.Agent) *cobra.Command {
	var opts engine.AttachOptions
	var project string
	cmd := &cobra.Command{
		Use:   a.Name() + " [-- AGENT_ARGS...]",
		Short: "Probe, then run " + a.Name() + " attached in a clean room",
		Long: fmt.Sprintf(`Probes the room for %[1]s, then starts %[1]s in it on your terminal, working in --project
(bound at /work). Ctrl-C belongs to the agent. The room is removed on every exit.
By default %[1]s talks to its real provider through tare's proxy, which lets through only the
hosts in the config's network.allow; --offline points it at tare's own model server instead.`, a.Name()),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := settings()
			if err != nil {
				return err
			}
			opts.Agent, opts.Project, opts.Config, opts.Args = a, project, cfg, args
			opts.Terminal = tui.OnTerminal(os.Stdin, os.Stdout)
			code, err := engine.Attach(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&project, "project", ".", "the folder the agent works in (bound read-write at /work, and at the image's WORKDIR with --env)")
	envFlag(cmd, &opts.Env)
	f.BoolVar(&opts.AllowDirty, "allow-dirty", false, `start even when the reading is not "tare: 0.00"`)
	f.BoolVar(&opts.Yolo, "yolo", false, "skip the agent's permission prompts (the room stays)")
	f.BoolVar(&opts.Offline, "offline", false, "talk to tare's own model server instead of the real provider")
	f.StringVar(&opts.Script, "script", "", "with --offline: the model server replays this script (TOML)")
	f.BoolVar(&opts.Login, "login", true, "place the agent's login copy in the room (real provider only)")
	f.BoolVar(&opts.HostNetwork, "network-host", false, "share the host's network (opt-in; shown in the reading)")
	return cmd
}
