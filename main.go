// Command tare starts coding agents in clean bubblewrap rooms, proves each room clean
// before the run, and measures what the agents do there.
//
// main.go is the command line and its wiring; the work happens in the packages below it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine"
	"tare/modelserver"
	"tare/sandbox"
)

// exitError carries an exit code through cobra without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	// The in-room entry points run as /opt/tare/tare inside a room; they parse their own
	// arguments and must start fast, so they bypass cobra and the config.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "relay":
			os.Exit(sandbox.RelayMain(os.Args[2:]))
		case "inspect":
			os.Exit(sandbox.InspectMain(os.Args[2:]))
		case "snap":
			os.Exit(capsule.SnapMain(os.Args[2:]))
		case "mcp-canary":
			if len(os.Args) != 3 {
				fmt.Fprintln(os.Stderr, "tare mcp-canary: want one argument, the canary token")
				os.Exit(2)
			}
			if err := engine.MCPCanary(os.Args[2], os.Stdin, os.Stdout); err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	err := root().ExecuteContext(ctx)
	stop()
	var exit exitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(exit.code)
	default:
		fmt.Fprintf(os.Stderr, "tare: %v\n", err)
		os.Exit(2)
	}
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v = strings.TrimPrefix(v+" ", "(devel) ") + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "+dirty"
		}
	}
	return strings.TrimSpace(v)
}

func root() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tare",
		Short: "Clean rooms for coding agents: zero the scale before you weigh",
		Long: `tare starts a coding agent (claude, codex, pi, agy) in a bubblewrap room that holds
nothing of yours: no global instructions, memories, MCP servers, skills or logins beyond the
one login copy it declares. Before every run it proves the room clean: "tare: 0.00", or each
leak with the file it came from.`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.SetVersionTemplate("tare {{.Version}}\n")
	cmd.AddCommand(probeCmd(), modelServerCmd(), doctorCmd())
	for _, a := range agent.All() {
		cmd.AddCommand(attachCmd(a))
	}
	return cmd
}

// settings loads the config file; a bad file stops every command that reads it.
func settings() (*config.Config, error) {
	return config.Load(config.File())
}

// projectDir resolves --project, refusing a path that is not a folder.
func projectDir(p string) (string, error) {
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
	return abs, nil
}

func agentArg(cmd *cobra.Command, args []string) (agent.Agent, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("%s: want one agent (%s)", cmd.CommandPath(), strings.Join(agentNameList(), ", "))
	}
	return agent.ByName(args[0])
}

func probeCmd() *cobra.Command {
	var project string
	var asJSON bool
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
			dir, err := projectDir(project)
			if err != nil {
				return err
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			opts := engine.ProbeOptions{Agent: a, Project: dir, Config: cfg, Progress: os.Stderr}
			if requests != "" {
				f, err := os.OpenFile(requests, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					return fmt.Errorf("--requests %s: %v", requests, err)
				}
				defer f.Close()
				opts.Requests = f
			}
			reading, err := engine.Probe(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if asJSON {
				if err := reading.WriteJSON(os.Stdout); err != nil {
					return err
				}
			} else {
				fmt.Print(reading.Render())
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
	return cmd
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
			dir, err := projectDir(project)
			if err != nil {
				return err
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			if opts.Script != "" {
				opts.Offline = true
				if _, err := modelserver.LoadScript(opts.Script); err != nil {
					return err
				}
			}
			opts.Agent, opts.Project, opts.Config, opts.Args = a, dir, cfg, args
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
	f.StringVar(&project, "project", ".", "the folder the agent works in (bound read-write at /work)")
	f.BoolVar(&opts.AllowDirty, "allow-dirty", false, `start even when the reading is not "tare: 0.00"`)
	f.BoolVar(&opts.Yolo, "yolo", false, "skip the agent's permission prompts (the room stays)")
	f.BoolVar(&opts.Offline, "offline", false, "talk to tare's own model server instead of the real provider")
	f.StringVar(&opts.Script, "script", "", "with --offline: the model server replays this script (TOML)")
	f.BoolVar(&opts.Login, "login", true, "place the agent's login copy in the room (real provider only)")
	f.BoolVar(&opts.HostNetwork, "network-host", false, "share the host's network (opt-in; shown in the reading)")
	return cmd
}

func modelServerCmd() *cobra.Command {
	var addr, script, logPath string
	var seed int64
	cmd := &cobra.Command{
		Use:   "model-server",
		Short: "Serve tare's own model endpoints on loopback (Anthropic Messages, OpenAI Responses and Chat)",
		Long: `Serves POST /v1/messages, /v1/responses and /v1/chat/completions, streaming as the agent
CLIs expect. Without --script it is in probe mode: it records every request and answers with a
short text. With --script it replays a scripted conversation (see modelserver's package doc).
Every request is logged to --log as one JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := modelserver.Options{Seed: seed, LogPath: logPath}
			if script != "" {
				s, err := modelserver.LoadScript(script)
				if err != nil {
					return err
				}
				opts.Script = s
			}
			srv, err := modelserver.New(opts)
			if err != nil {
				return err
			}
			if err := srv.Start(addr); err != nil {
				return fmt.Errorf("--addr %s: %v; fix: choose a free port on 127.0.0.1", addr, err)
			}
			fmt.Fprintf(os.Stderr, "tare model-server: %s (%s); Ctrl-C to stop\n", srv.URL(), map[bool]string{true: "script " + script, false: "probe mode"}[script != ""])
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			<-ctx.Done()
			return srv.Close()
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8787", "address to listen on (loopback only)")
	cmd.Flags().StringVar(&script, "script", "", "replay this scripted conversation (TOML)")
	cmd.Flags().StringVar(&logPath, "log", "", "append every request as a JSON line to this file")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the script's random branches")
	return cmd
}

func doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check bwrap, namespaces and each agent CLI; name the fix for each problem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := settings()
			if err != nil {
				return err
			}
			if !engine.Doctor(cmd.Context(), cfg, os.Stdout) {
				return exitError{1}
			}
			return nil
		},
	}
}

func agentNameList() []string {
	var names []string
	for _, a := range agent.All() {
		names = append(names, a.Name())
	}
	return names
}

func agentNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return agentNameList(), cobra.ShellCompDirectiveNoFileComp
}
