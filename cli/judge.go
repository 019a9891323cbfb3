package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"tare/engine"
	"tare/engine/journal"
)

// judgeFlags are the flags tare judge and tare judge-noise share.
type judgeFlags struct {
	o         engine.JudgeOptions
	rubric    string
	threshold float64
	json      bool
}

func (jf *judgeFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&jf.rubric, "rubric", "", "the rubric: the criteria and a line stating the scale, e.g. scale: 1-10")
	f.Float64Var(&jf.threshold, "threshold", 0, "the lowest passing score, on the rubric's scale")
	f.StringVar(&jf.o.Page, "page", "index.html", "the page to render, below each folder")
	f.StringVar(&jf.o.Judge, "judge", engine.DefaultJudge, "the judge agent and its arguments")
	f.StringVar(&jf.o.Script, "script", "", "the judge talks to tare's own model server replaying this script, instead of its provider")
	f.Int64Var(&jf.o.Seed, "seed", 0, "seed of the script's branch draws (default: a fresh one, shown in the report)")
	f.StringVar(&jf.o.Out, "out", "", "folder for the screenshots and judgements.json (default $XDG_STATE_HOME/tare/judge/<folder>-<time>)")
	f.DurationVar(&jf.o.Timeout, "timeout", engine.DefaultJudgeTimeout, "a judgement running longer is stopped")
	f.BoolVar(&jf.json, "json", false, "print the judgements as JSON")
	f.BoolVar(&jf.o.AllowDirty, "allow-dirty", false, `judge even when the reading of the judge's room is not "tare: 0.00"`)
}

// prepare checks everything a user typed before anything runs or is written: the rubric,
// the threshold against its scale, the page folders and the page.
func (jf *judgeFlags) prepare(cmd *cobra.Command, dirs []string) error {
	var err error
	if jf.o.Rubric, err = engine.LoadRubric(jf.rubric); err != nil {
		return err
	}
	if cmd.Flags().Changed("threshold") {
		if err := jf.o.Rubric.CheckThreshold(jf.threshold); err != nil {
			return err
		}
	}
	if err := engine.ValidatePages(dirs, jf.o.Page); err != nil {
		return err
	}
	jf.o.Dirs = dirs
	jf.o.Progress = os.Stderr
	if jf.o.Config, err = settings(); err != nil {
		return err
	}
	return nil
}

// record sets what the run's recipe.json keeps: the command line with every path absolute, so
// tare rerun repeats it from any folder.
func (jf *judgeFlags) record(cmd *cobra.Command, threshold *float64) error {
	abs := func(p string) (string, error) {
		a, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("%s: %v", p, err)
		}
		return a, nil
	}
	argv := []string{cmd.Name()}
	for _, d := range jf.o.Dirs {
		a, err := abs(d)
		if err != nil {
			return err
		}
		argv = append(argv, a)
	}
	rubric, err := abs(jf.rubric)
	if err != nil {
		return err
	}
	argv = append(argv, "--rubric", rubric, "--page", jf.o.Page, "--judge", jf.o.Judge, "--timeout", jf.o.Timeout.String())
	if jf.o.Script != "" {
		script, err := abs(jf.o.Script)
		if err != nil {
			return err
		}
		argv = append(argv, "--script", script)
	}
	if jf.o.Seed != 0 {
		argv = append(argv, "--seed", strconv.FormatInt(jf.o.Seed, 10))
	}
	if threshold != nil {
		argv = append(argv, "--threshold", strconv.FormatFloat(*threshold, 'g', -1, 64))
	}
	if cmd.Name() == "judge-noise" {
		argv = append(argv, "--times", strconv.Itoa(jf.o.Times), "--jobs", strconv.Itoa(jf.o.Jobs), "--tolerance", strconv.FormatFloat(jf.o.Tolerance, 'g', -1, 64))
	}
	if jf.json {
		argv = append(argv, "--json")
	}
	jf.o.Kind, jf.o.Argv, jf.o.Version = cmd.Name(), argv, version()
	return nil
}

// judgeJSON is what --json prints: the judgements, and the verdict at the threshold.
type judgeJSON struct {
	engine.JudgeReport
	Threshold *float64 `json:"threshold,omitempty"`
	Passed    *bool    `json:"passed,omitempty"`
	Refused   []string `json:"refused,omitempty"`
	// Unmeasured are the pages fewer than 2 judgements scored: no threshold is settled there.
	Unmeasured []string `json:"unmeasured,omitempty"`
	// Spreads are judge-noise's rows: each page's scores with their min, median and max.
	Spreads []engine.Spread `json:"spreads,omitempty"`
	// Flips are judge-noise's verdicts at the threshold: each page's flip rate with its upper
	// bound, cleared below the tolerance; Suggested the threshold with the fewest expected flips.
	Flips     []engine.Flip      `json:"flips,omitempty"`
	Suggested *engine.Suggestion `json:"suggested,omitempty"`
}

func printJSON(v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(data))
	return err
}

func judgeCmd() *cobra.Command {
	var jf judgeFlags
	cmd := &cobra.Command{
		Use:   "judge [DIR] --rubric FILE --threshold N",
		Short: "Score a page by a rubric, blind: exit 0 at or above the threshold (a --check)",
		Long: `Renders the page (--page below DIR, default index.html; DIR defaults to .) to a full-page
screenshot with headless Chromium in a room with no network, then starts the judge agent in a
blind room holding only the screenshot, the page's files and the rubric: nothing that names
the agent or model that built the page. The judge answers "score N: reason" on the rubric's
scale (a line such as "scale: 1-10"). Exit 0 at or above --threshold, 1 below, 2 on error; the
last line says "score N", which calibrate, record, tail and cliff read from a --check. As a
check, "tare judge --rubric /abs/rubric.md --threshold N" (plain words, no shell syntax, no
folder) is run by tare itself on each workspace, with no link in it followed; its score and
the judge's cost (as check usage) land in the run's report.`,
		Example: `  tare judge site --rubric rubric.md --threshold 7
  tare calibrate "Build a landing page" --side claude --check "tare judge --rubric ~/rubric.md --threshold 7"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dirs := []string{"."}
			if len(args) == 1 {
				dirs = args
			}
			if !cmd.Flags().Changed("threshold") {
				return fmt.Errorf("--threshold: give the lowest passing score on the rubric's scale; fix: --threshold N")
			}
			if err := jf.prepare(cmd, dirs); err != nil {
				return err
			}
			jf.o.Times, jf.o.Jobs = 1, 1
			if err := jf.record(cmd, &jf.threshold); err != nil {
				return err
			}
			rep, err := engine.Judge(cmd.Context(), jf.o)
			if err != nil {
				return err
			}
			j := rep.Pages[0].Judgements[0]
			if jf.json {
				out := judgeJSON{JudgeReport: rep, Threshold: &jf.threshold}
				if j.Score != nil {
					passed := float64(*j.Score) >= jf.threshold
					out.Passed = &passed
				}
				if err := printJSON(out); err != nil {
					return err
				}
			} else {
				fmt.Print(rep.JudgeText(jf.threshold))
			}
			switch {
			case j.Score == nil:
				if jf.json {
					fmt.Fprintf(os.Stderr, "tare judge: no score: %s\n", journal.Printable(j.Error))
				}
				return exitError{2}
			case float64(*j.Score) < jf.threshold:
				return exitError{1}
			}
			return nil
		},
	}
	jf.add(cmd)
	return cmd
}

func judgeNoiseCmd() *cobra.Command {
	var jf judgeFlags
	cmd := &cobra.Command{
		Use:   "judge-noise DIR... --rubric FILE --times K [--threshold N]",
		Short: "How far the judge's scores vary: K fresh judgements per page, and whether a threshold is cleared",
		Long: `Renders each page once, then has the judge score it --times times, each in a fresh blind room
and session, and shows per page the scores' min, median, max and spread. With --threshold it
gives per page the flip rate (how often a fresh judgement lands on the other side of the
threshold from the page's usual verdict) with its exact one-sided 95% upper bound, and clears
the threshold only when every page's bound is below --tolerance; otherwise exit 1. 10
unanimous judgements bound the rate below 0.26; 59 are needed for 0.05. It also suggests the
threshold with the fewest expected flips. calibrate --keep keeps each
run's workspace for this. A run stopped or killed is finished with tare resume DIR, without
judging again what it had judged.`,
		Example: `  tare judge-noise run/tails/*/work --rubric rubric.md --times 5 --threshold 7
  tare judge-noise run/tails/*/work --rubric rubric.md --times 5 --on slurm --jobs 20   # one Slurm job per judgement`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if jf.o.Times < 2 {
				return fmt.Errorf("--times %d: one judgement per page shows no spread; fix: give --times 2 or more", jf.o.Times)
			}
			if jf.o.Jobs < 1 {
				return fmt.Errorf("--jobs %d: want 1 or more", jf.o.Jobs)
			}
			if err := jf.prepare(cmd, args); err != nil {
				return err
			}
			var threshold *float64
			if cmd.Flags().Changed("threshold") {
				threshold = &jf.threshold
			}
			jf.o.Threshold = threshold
			if !(jf.o.Tolerance > 0 && jf.o.Tolerance < 1) {
				return fmt.Errorf("--tolerance %g: the flip rate to clear a threshold below is a probability; fix: give one between 0 and 1, e.g. 0.05", jf.o.Tolerance)
			}
			if err := jf.record(cmd, threshold); err != nil {
				return err
			}
			began := time.Now()
			rep, err := engine.Judge(cmd.Context(), jf.o)
			if err != nil {
				return err
			}
			var refused []string
			if threshold != nil {
				for _, p := range rep.Uncleared(*threshold) {
					refused = append(refused, p.Dir)
				}
			}
			if jf.json {
				out := judgeJSON{JudgeReport: rep, Threshold: threshold, Refused: refused}
				for _, p := range rep.Unmeasured() {
					out.Unmeasured = append(out.Unmeasured, p.Dir)
				}
				for _, p := range rep.Pages {
					out.Spreads = append(out.Spreads, p.Spread())
				}
				if threshold != nil {
					out.Flips = rep.Flips(*threshold)
				}
				if sg, ok := rep.Suggest(); ok {
					out.Suggested = &sg
				}
				if err := printJSON(out); err != nil {
					return err
				}
			} else {
				fmt.Print(rep.NoiseText(threshold))
				fmt.Fprintf(os.Stderr, "tare judge-noise: %d judgements in %s\n", len(args)*jf.o.Times, time.Since(began).Round(time.Second))
			}
			// A page with fewer than 2 scores has an unknown spread: the run measured nothing
			// there, and no threshold is settled over it.
			if bad := rep.Unmeasured(); len(bad) > 0 {
				fmt.Fprintf(os.Stderr, "tare judge-noise: not measured enough: %s; fix: see why the judgements failed above, then run again (or with more --times)\n", journal.Printable(engine.UnmeasuredText(bad)))
				return exitError{2}
			}
			if len(refused) > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	jf.add(cmd)
	f := cmd.Flags()
	f.IntVar(&jf.o.Times, "times", 5, "judgements per page, each by a fresh judge (2 or more)")
	f.IntVar(&jf.o.Jobs, "jobs", 2, "judgements at the same time")
	f.Float64Var(&jf.o.Tolerance, "tolerance", engine.DefaultTolerance, "clear --threshold only where each page's flip rate is below this (its one-sided 95% upper bound)")
	onFlag(cmd, &jf.o.On)
	return cmd
}
