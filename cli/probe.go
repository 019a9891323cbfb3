package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"tare/agent"
	"tare/engine/journal"
	"tare/engine/probe"
)

func agentArg(cmd *cobra.Command, args []string) (agent.Agent, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("%s: want one agent (%s)", cmd.CommandPath(), strings.Join(agentNameList(), ", "))
	}
	return agent.ByName(args[0])
}

func probeCmd() *cobra.Command {
	var project string
	var asJSON, allowDirty bool
	var requests string
	cmd := &cobra.Command{
		Use:   "probe AGENT",
		Short: `Prove the room clean: "tare: 0.00", each leak with its source, or "not proven (blind)"`,
		Long: `Starts AGENT in a room against tare's own model server in probe mode, records what reached
the model and what the room can see, and reads it for personal instructions, your home path,
MCP tools, skills, plugins, your account email and reach (host files, host loopback, other
hosts). A control twin in a planted dirty home must show each of these, or the reading is
"not proven (blind)". Exit 0 only on "tare: 0.00".`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: agentNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := agentArg(cmd, args)
			if err != nil {
				return err
			}
			dir, err := probe.ProjectDir(project, allowDirty)
			if err != nil {
				return err
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			opts := probe.ProbeOptions{Agent: a, Project: dir, Config: cfg, Progress: os.Stderr, AllowDirty: allowDirty}
			if requests != "" {
				f, err := os.OpenFile(requests, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					return fmt.Errorf("--requests %s: %v", requests, err)
				}
				defer f.Close()
				opts.Requests = f
			}
			reading, err := probe.Probe(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if err := probe.StoreReading(cfg.StateDir, reading); err != nil {
				fmt.Fprintf(os.Stderr, "tare probe: the reading was not kept for the app: %v\n", err)
			}
			if asJSON {
				if err := reading.WriteJSON(os.Stdout); err != nil {
					return err
				}
			} else {
				fmt.Print(journal.Printable(reading.Render()))
			}
			if !reading.Zero() {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&project, "project", ".", "the project folder the agent would work in")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reading as JSON")
	cmd.Flags().StringVar(&requests, "requests", "", "write what reached the model in the clean room to this file (JSON lines)")
	cmd.Flags().BoolVar(&allowDirty, "allow-dirty", false, "probe even a project that is your home, holds it, or is / (refused otherwise)")
	return cmd
}
