package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tare/config"
	"tare/engine"
	"tare/engine/journal"
	"tare/modelserver"
	"tare/prices"
)

func modelServerCmd() *cobra.Command {
	var addr, script, logPath string
	var seed int64
	cmd := &cobra.Command{
		Use:   "model-server",
		Short: "Serve tare's own model endpoints on loopback (Anthropic Messages, OpenAI Responses and Chat, Gemini, Code Assist)",
		Long: `Serves POST /v1/messages, /v1/responses, /v1/chat/completions, Gemini's
/v1beta/models/MODEL:streamGenerateContent and Code Assist's /v1internal:streamGenerateContent
(Gemini CLI on a Google login; point CODE_ASSIST_ENDPOINT at the server), streaming as the agent CLIs expect. Without --script it is in probe mode: it records every request and answers with a
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
		Short: "Check bwrap, namespaces and each agent CLI; name the fix for each problem (exit 1 when a line says FAIL)",
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

func pricesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prices [show [MODEL]] | update [URL|FILE]",
		Short: "The price table tare costs runs with: show it, or update it from genai-prices or LiteLLM",
		Long: `tare prices costs runs with genai-prices' maintained database (bundled), tare's corrections
to it, and your own table in prices.json beside config.toml, which is looked up first. A model
no rule names has no price: its cost is shown as unknown, never guessed.
Runs on tare's own model server (--script, tare demo) show their dollar figures as simulated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return showPrices(cmd, nil) },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show [MODEL]",
		Short: "The table's models of the agents' providers, or one model's prices and the rule that matched it",
		Args:  cobra.MaximumNArgs(1),
		RunE:  showPrices,
	}, &cobra.Command{
		Use:   "update [URL|FILE]",
		Short: "Replace your price table with a genai-prices data.json or LiteLLM model price JSON",
		Long: `Reads a price file from a URL or a local file: genai-prices' data.json format, or LiteLLM's
model_prices_and_context_window.json (what tare-cli used). It is written, in genai-prices'
format, to prices.json beside config.toml, replacing what update wrote before; models it does
not name keep the bundled price. A file that cannot be read or understood changes nothing.`,
		Example: `  tare prices update
  tare prices update https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json
  tare prices update ./my-prices.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := prices.DefaultURL
			if len(args) == 1 {
				src = args[0]
			}
			path := prices.OverrideFile(config.File())
			format, n, err := prices.Update(cmd.Context(), src, path)
			if err != nil {
				return fmt.Errorf("prices update %v", err)
			}
			fmt.Printf("tare prices: %d models (%s format) from %s, now in %s\n", n, format, src, path)
			return nil
		},
	})
	return cmd
}

// showPrices prints the table, or one model's prices; an unknown model is bad input.
func showPrices(cmd *cobra.Command, args []string) error {
	path := prices.OverrideFile(config.File())
	table, err := prices.Load(path)
	if err != nil {
		return err
	}
	now := time.Now()
	if len(args) == 0 {
		var b strings.Builder
		table.Show(&b, path, now)
		fmt.Print(journal.Printable(b.String())) // names from a downloaded price file
		return nil
	}
	m, ok := table.Lookup(args[0])
	if !ok {
		return fmt.Errorf("prices show %s: no price for this model id; fix: check the id (tare prices show lists them), or add its price to a file and run tare prices update FILE", args[0])
	}
	fmt.Print(journal.Printable(prices.Describe(args[0], m, now))) // names from a downloaded price file
	return nil
}
