package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tare/demo"
	"tare/engine"
	"tare/engine/journal"
	enginerun "tare/engine/run"
	"tare/tui"
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
report shows each writer's time, tokens and cost; once sealed, these and the draft sizes are
withheld until reveal records the reading (they would pair letters with writers).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(workshopPrepareCmd(), workshopRunCmd(), workshopCollectCmd(), workshopAnonymizeCmd(), workshopRevealCmd(), workshopReportCmd(),
		workshopResumeCmd(), workshopManualCmd(), workshopRetryCmd(), workshopInspectCmd(), workshopRosterCmd(), workshopWatchCmd())
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
An example plan: demo/workshop/plan.toml (tare demo workshop runs it).`,
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

// writerFlags are the flags workshop run, resume and manual share.
type writerFlags struct {
	scripts []string
	timeout time.Duration
	seed    int64
	on      string
	env     string
}

// add declares the flags of a command that runs writers: --on (where, in the command's own
// words), --timeout and the scripts.
func (wf *writerFlags) add(cmd *cobra.Command, onUsage string) {
	wf.addScripts(cmd)
	cmd.Flags().DurationVar(&wf.timeout, "timeout", engine.DefaultAgentTimeout, "a writer running longer is stopped; its partial prose is kept and it is failed with the reason")
	cmd.Flags().StringVar(&wf.on, "on", engine.OnLocal, onUsage)
	envFlag(cmd, &wf.env)
}

// addScripts are the flags that put writers on tare's model server.
func (wf *writerFlags) addScripts(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&wf.scripts, "script", nil, "writers talk to tare's own model server replaying this script: F for every writer, WRITER=F for one (repeatable)")
	f.Int64Var(&wf.seed, "seed", 0, "seed of the scripts' branch draws")
}

func (wf *writerFlags) options(ctx context.Context, e *workshop.Exp, writers []string) (workshop.RunOptions, error) {
	o := workshop.RunOptions{Writers: writers, Jobs: 1, Timeout: wf.timeout, Seed: wf.seed, On: wf.on, Progress: os.Stderr, Scripts: map[string]string{}}
	if wf.timeout < 0 {
		return o, fmt.Errorf("--timeout %s: give a positive duration, e.g. 20m", wf.timeout)
	}
	for _, v := range wf.scripts {
		who, file, ok := strings.Cut(v, "=")
		if !ok {
			who, file = "", v
		}
		if _, err := os.Stat(file); err != nil {
			return o, fmt.Errorf("--script %s: %v", v, err)
		}
		o.Scripts[who] = file
	}
	var err error
	if o.Config, err = settings(); err != nil {
		return o, err
	}
	o.Env, err = engine.OpenEnv(ctx, wf.env, o.Config, os.Stderr)
	return o, err
}

func loadExp(arg string) (*workshop.Exp, error) { return workshop.Load(arg) }

func workshopRunCmd() *cobra.Command {
	var wf writerFlags
	var jobs int
	cmd := &cobra.Command{
		Use:   "run EXP [WRITERS...]",
		Short: "Run the prepared writers, cheapest tier first, one at a time",
		Long: `Runs each auto writer (or the WRITERS named, in your order) in a room proven clean first,
its input read-only and drafts/ writable, then collects it. Events, stderr, argv and usage are
kept per attempt under records/ID/. One writer at a time by default: seats sharing an account
exhaust a provider's window several times faster in parallel, and the wall then lands mid-turn
on all of them at once. Progress goes to stderr without the writers' words or sizes; the
result is one status per writer on stdout (exit 1 when one did not complete).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			o, err := wf.options(cmd.Context(), e, args[1:])
			if err != nil {
				return err
			}
			o.Jobs = jobs
			res, err := workshop.Run(cmd.Context(), e, o)
			if err != nil {
				return err
			}
			if err := printJSON(res); err != nil {
				return err
			}
			for _, st := range res {
				if st != string(workshop.StatusCompleted) {
					return exitError{1}
				}
			}
			return nil
		},
	}
	wf.add(cmd, "where the writers run: local (this machine) or slurm (one sbatch job per writer, as config [cluster] says; README \"Slurm\")")
	cmd.Flags().IntVar(&jobs, "jobs", 1, "writers at once; naming writers keeps your order instead of the cheap-then-premium one")
	return cmd
}

func workshopResumeCmd() *cobra.Command {
	var wf writerFlags
	cmd := &cobra.Command{
		Use:   "resume EXP WRITER",
		Short: "Continue a writer a provider quota wall or an expired login stopped, in its own session",
		Long: `Not a retry: the stopped session keeps the reading, the reasoning and the draft, and the
writer is told only that it was interrupted. Only a writer whose own event stream shows a
provider quota wall, or the provider refusing its login (HTTP 401: expired or revoked), is
resumed; after a login, log in again with the agent on this machine first (claude /login,
codex login, ...), since the room gets a copy of that login. Anything else is refused with the
reason. The stopped attempt is archived whole under records/WRITER/attempts/NN first. With
--on slurm the continued session runs as a Slurm job, its session folder sent with it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			o, err := wf.options(cmd.Context(), e, []string{args[1]})
			if err != nil {
				return err
			}
			s, err := workshop.Resume(cmd.Context(), e, args[1], o)
			if err != nil {
				return err
			}
			if err := printJSON(map[string]any{"writer": args[1], "status": s.Status, "error": s.Error, "attempts": len(s.Attempts) + 1}); err != nil {
				return err
			}
			if s.Status != workshop.StatusCompleted {
				return exitError{1}
			}
			return nil
		},
	}
	wf.add(cmd, "where the writer continues: local (this machine) or slurm (one sbatch job, as config [cluster] says)")
	return cmd
}

func workshopCollectCmd() *cobra.Command {
	var external string
	cmd := &cobra.Command{
		Use:   "collect EXP WRITER",
		Short: "Bank a writer's drafts and receipt, and check them",
		Long: `Archives the drafts before anything can fail, keeps the receipt and transcript, checks the
inputs, START.md and any archived outputs against what was frozen, and the declared outputs
present and at least min_bytes; otherwise the writer is failed with the reason. A completed
writer is only checked again. A writer whose Slurm job outlived the tare that followed it
(run --on slurm, then kill -9) is re-attached to first: collect waits for the job (or takes
its result if it ended meanwhile), serving a scripted writer's model again, and brings back
what the node wrote; the job is never started twice. --external imports a session run elsewhere: a JSON file with
session_id, model, provenance and an optional transcript.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			var ext *workshop.External
			if external != "" {
				ext = &workshop.External{}
				data, err := os.ReadFile(external)
				if err == nil {
					err = json.Unmarshal(data, ext)
				}
				if err != nil {
					return fmt.Errorf("--external %s: %v; fix: a JSON file with session_id, model and provenance", external, err)
				}
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			s, err := workshop.CollectWith(cmd.Context(), e, args[1], ext, workshop.RunOptions{Config: cfg, Progress: os.Stderr})
			if err != nil {
				return err
			}
			return printJSON(map[string]any{"writer": args[1], "status": s.Status})
		},
	}
	cmd.Flags().StringVar(&external, "external", "", "JSON file with session_id, model, provenance, optional transcript")
	return cmd
}

func workshopAnonymizeCmd() *cobra.Command {
	var o workshop.SealOptions
	cmd := &cobra.Command{
		Use:   "anonymize EXP",
		Short: "Shuffle the completed drafts under letters and seal the key",
		Long: `Copies each completed writer's draft into evaluation/anon/ as A.md, B.md... in an order drawn
from crypto/rand, and writes which letter is which writer to evaluation/identity-key.json. The
key is never printed, logged or shown: read the drafts before you open it. From then on report
withholds draft sizes, and each writer's time, tokens and cost, which track them, until reveal
records your reading. An experiment sealed already is refused unless --reseal, which keeps the
old key as evaluation/identity-key.N.json (a reshuffle does not blind a reader again).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			s, err := workshop.Anonymize(e, o)
			if err != nil {
				return err
			}
			if s.OldKey != "" {
				fmt.Fprintf(os.Stderr, "workshop: resealed; the old key is kept as %s\n", s.OldKey)
			}
			return printJSON(s)
		},
	}
	cmd.Flags().StringVar(&o.Output, "output", "", "the draft file to seal (default: the plan's first declared output)")
	cmd.Flags().BoolVar(&o.IncludePartial, "include-partial", false, "seal writers whose turn did not complete too, deliberately")
	cmd.Flags().BoolVar(&o.Reseal, "reseal", false, "seal an experiment sealed already, keeping the old key as identity-key.N.json")
	return cmd
}

func workshopRevealCmd() *cobra.Command {
	var reading string
	var without bool
	cmd := &cobra.Command{
		Use:   "reveal EXP --reading FILE",
		Short: "Record the blind reading and open the seal: the key, and sizes in the report",
		Long: `After the drafts are read blind: keeps your reading (FILE, your notes on the drafts by letter,
up to 1 MB) in evaluation/reveal.json with the time, prints the key, and from then on report
shows draft sizes and each writer's time, tokens and cost. --without-reading opens the seal on
purpose with no reading on record, which the record says. Revealing again prints the same.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			u, err := workshop.Unseal(e, reading, without)
			if err != nil {
				return err
			}
			return printJSON(u)
		},
	}
	cmd.Flags().StringVar(&reading, "reading", "", "your notes on the drafts by letter, written before the key was seen")
	cmd.Flags().BoolVar(&without, "without-reading", false, "open the seal with no reading on record, deliberately")
	return cmd
}

func workshopReportCmd() *cobra.Command {
	var table, sizes, noSizes bool
	cmd := &cobra.Command{
		Use:   "report EXP",
		Short: "Each writer's time, tokens and cost; draft sizes once the reading is recorded",
		Long: `Per writer: agent, model, effort (asked and set), tier, status, seconds, peak request,
tokens in, cached, out, and cost from tare's price table with its evidence. Draft byte counts
are withheld before the seal (--sizes shows them anyway). Once anonymize has sealed the
drafts, sizes and the time, tokens and cost that track them are withheld until reveal records
the reading, since each pairs a letter with its writer; --sizes is refused then. --no-sizes
keeps sizes out of a revealed write-up. JSON by default; --table prints markdown.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sizes && noSizes {
				return fmt.Errorf("--sizes and --no-sizes: give one")
			}
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			var want *bool
			if sizes || noSizes {
				want = &sizes
			}
			r, err := workshop.MakeReport(e, want)
			if err != nil {
				return err
			}
			if table {
				fmt.Print(r.Table())
				return nil
			}
			return printJSON(r)
		},
	}
	cmd.Flags().BoolVar(&table, "table", false, "a markdown table instead of JSON")
	cmd.Flags().BoolVar(&sizes, "sizes", false, "show draft byte counts before the drafts are sealed, deliberately")
	cmd.Flags().BoolVar(&noSizes, "no-sizes", false, "withhold draft byte counts even once revealed")
	cmd.Flags().Bool("json", true, "JSON (the default)")
	return cmd
}

func workshopRetryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "retry EXP WRITER NEW_ID",
		Short: "Stage a fresh writer in place of a failed one",
		Long: `The same seat (agent, model, effort, persona) under NEW_ID, with a fresh copy of the inputs
and a session of its own; the old writer stays on record. For a quota wall or an expired
login, resume instead.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			w, err := workshop.Retry(e, args[1], args[2])
			if err != nil {
				return err
			}
			return printJSON(map[string]any{"writer": w.ID, "retry_of": w.RetryOf, "next": "tare workshop run " + args[0] + " " + w.ID})
		},
	}
}

func workshopInspectCmd() *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "inspect EXP",
		Short: "Each writer's status, process, outputs, packet and what to do next",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			r, err := workshop.Inspect(e, full)
			if err != nil {
				return err
			}
			return printJSON(r)
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "include each writer's whole configuration")
	return cmd
}

func workshopRosterCmd() *cobra.Command {
	var check bool
	var plan string
	cmd := &cobra.Command{
		Use:   "roster --plan F [--check]",
		Short: "A plan's writers, and with --check whether each agent's CLI is installed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if plan == "" {
				return fmt.Errorf("--plan: give the plan whose writers to list; tare has no default roster")
			}
			cfg, err := settings()
			if err != nil {
				return err
			}
			r, err := workshop.Roster(plan, check, cfg)
			if err != nil {
				return err
			}
			if err := printJSON(r); err != nil {
				return err
			}
			if len(r.Unavailable) > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&plan, "plan", "", "the plan (TOML or JSON) whose writers to list")
	cmd.Flags().BoolVar(&check, "check", false, "find each writer's agent CLI as a run would")
	return cmd
}

func workshopWatchCmd() *cobra.Command {
	var words, once bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "watch EXP",
		Short: "Follow the writers: who started, which files each read and wrote, who finished",
		Long: `Follows the writers as they work. Their words and draft sizes are withheld, because either
identifies a draft before the drafts are sealed; --words shows them, deliberately, and is
refused once they are sealed, until reveal records the reading.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			return workshop.Watch(cmd.Context(), e, os.Stdout, words, once, poll)
		},
	}
	cmd.Flags().BoolVar(&words, "words", false, "show what the writers say and how much they wrote, deliberately")
	cmd.Flags().DurationVar(&poll, "poll", time.Second, "how often to look")
	cmd.Flags().BoolVar(&once, "once", false, "tell what has happened so far and stop")
	return cmd
}

func demoWorkshopCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "workshop",
		Short: "A small prose experiment end to end on tare's model server: no account needed",
		Long: `Extracts the demo workshop (a plan, its notes and model scripts) into the state directory,
prepares it, runs three writers (codex, pi and claude, each in a room proven clean, talking to
tare's own model server), where codex hits a provider quota wall mid-draft and is resumed in its
own session, then collects, anonymizes and reports. The identity key stays sealed in the
experiment's evaluation/identity-key.json, and the report withholds sizes, time, tokens and
cost until you have read the drafts and run tare workshop reveal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := settings()
			if err != nil {
				return err
			}
			name := enginerun.DirName("workshop", time.Now())
			paths, err := demo.ExtractWorkshop(filepath.Join(cfg.StateDir, "demo", name))
			if err != nil {
				return err
			}
			dest := filepath.Join(cfg.StateDir, "workshop", name)
			fmt.Fprintf(os.Stderr, "workshop: preparing %s\n", dest)
			if _, err := workshop.Prepare(paths.Plan, dest); err != nil {
				return err
			}
			e, err := workshop.Load(dest)
			if err != nil {
				return err
			}
			o := workshop.RunOptions{Jobs: 1, Timeout: timeout, Config: cfg, Progress: os.Stderr,
				Scripts: map[string]string{"": paths.Writer, demo.WorkshopQuotaWriter: paths.Quota}}
			if _, err := workshop.Run(cmd.Context(), e, o); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "workshop: resuming %s in its own session\n", demo.WorkshopQuotaWriter)
			o.Scripts = map[string]string{"": paths.QuotaLifted}
			if _, err := workshop.Resume(cmd.Context(), e, demo.WorkshopQuotaWriter, o); err != nil {
				return err
			}
			sealed, err := workshop.Anonymize(e, workshop.SealOptions{})
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "workshop: %d drafts sealed as %s in %s; %s\n", sealed.Drafts, strings.Join(sealed.Letters, ", "), sealed.Anon, sealed.Warning)
			r, err := workshop.MakeReport(e, nil)
			if err != nil {
				return err
			}
			fmt.Print(r.Table())
			fmt.Printf("\nexperiment: %s\nnext: read evaluation/anon/ blind, then tare workshop reveal %s --reading YOUR-NOTES (the key is in evaluation/identity-key.json)\n", dest, dest)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "a writer running longer is stopped")
	return cmd
}

func workshopManualCmd() *cobra.Command {
	var wf writerFlags
	cmd := &cobra.Command{
		Use:   "manual EXP WRITER",
		Short: "Write with a writer's agent by hand, on this terminal, in its room",
		Long: `Attaches the writer's agent on this terminal in the same room an auto writer gets (proven
clean first, input and START.md read-only, drafts/ writable), permission prompts off. Its
terminal is recorded to records/WRITER/terminal.log, and a second launch is refused while this
one lives. Exit the agent when done: the writer is then collected.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loadExp(args[0])
			if err != nil {
				return err
			}
			o, err := wf.options(cmd.Context(), e, []string{args[1]})
			if err != nil {
				return err
			}
			s, err := workshop.Manual(cmd.Context(), e, args[1], o, tui.OnTerminal(os.Stdin, os.Stdout), os.Stdout)
			if s != nil {
				fmt.Fprintf(os.Stderr, "workshop: %s is %s\n", args[1], s.Status)
			}
			if err != nil && s != nil {
				fmt.Fprintf(os.Stderr, "workshop: %s\n", journal.Printable(err.Error()))
				return exitError{1}
			}
			return err
		},
	}
	wf.addScripts(cmd)
	envFlag(cmd, &wf.env)
	return cmd
}
