package engine

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/run"
)

// judgeCheck is a --check that is exactly tare's own judge: tare runs it as its own code on
// the host instead of as a shell command in the check's room, because the judge starts rooms
// of its own (the render room, the judge's room), which a check room cannot hold.
type judgeCheck struct {
	rubric, page, judge, script string
	threshold                   float64
	seed                        int64
	timeout                     time.Duration
	allowDirty                  bool
}

// judgeCheckMeta are the characters that make a check more than one plain command: with any
// of them the check is a shell command, run as every other check is, never as the built-in
// judge ("tare judge; cat /etc/passwd", "tare judge $(...)").
const judgeCheckMeta = "`$;&|<>(){}[]\\*?#!\n\r"

// parseJudgeCheck recognises a check that is tare's own judge: the words "tare judge" (or an
// absolute path to a binary named tare, then judge) and its flags, nothing a shell would
// interpret. ours is false for any other check; err, with ours, refuses a judge check the
// built-in judge cannot run as written.
func parseJudgeCheck(check string) (jc *judgeCheck, ours bool, err error) {
	if strings.ContainsAny(check, judgeCheckMeta) {
		return nil, false, nil
	}
	words, err := splitWords(check)
	if err != nil || len(words) < 2 || words[1] != "judge" {
		return nil, false, nil
	}
	if w := words[0]; w != "tare" && !(filepath.IsAbs(w) && filepath.Base(w) == "tare") {
		return nil, false, nil
	}
	jc = &judgeCheck{}
	fs := flag.NewFlagSet("tare judge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&jc.rubric, "rubric", "", "")
	fs.Float64Var(&jc.threshold, "threshold", 0, "")
	fs.StringVar(&jc.page, "page", "index.html", "")
	fs.StringVar(&jc.judge, "judge", DefaultJudge, "")
	fs.StringVar(&jc.script, "script", "", "")
	fs.Int64Var(&jc.seed, "seed", 0, "")
	fs.DurationVar(&jc.timeout, "timeout", DefaultJudgeTimeout, "")
	fs.BoolVar(&jc.allowDirty, "allow-dirty", false, "")
	const fix = "fix: the built-in judge takes --rubric, --threshold, --page, --judge, --script, --seed, --timeout and --allow-dirty, and judges the tail's workspace"
	args := words[2:]
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, true, fmt.Errorf("--check %q: %v; %s", check, err, fix)
		}
		if args = fs.Args(); len(args) > 0 {
			// The judge judges the workspace it is given; a DIR would name another folder.
			if args[0] != "." {
				return nil, true, fmt.Errorf("--check %q: the folder %q: the judge as a check judges each run's workspace; fix: drop the folder", check, args[0])
			}
			args = args[1:]
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["threshold"] {
		return nil, true, fmt.Errorf("--check %q: no --threshold; fix: give the lowest passing score, --threshold N", check)
	}
	home, _ := os.UserHomeDir()
	for _, p := range []struct {
		name string
		path *string
	}{{"--rubric", &jc.rubric}, {"--script", &jc.script}} {
		if rest, ok := strings.CutPrefix(*p.path, "~/"); ok && home != "" {
			*p.path = filepath.Join(home, rest)
		}
		// A relative path would be read from the workspace, the folder the agent wrote.
		if *p.path != "" && !filepath.IsAbs(*p.path) {
			return nil, true, fmt.Errorf("--check %q: %s %s is relative, so it would name a file in the workspace the agent wrote; fix: give its absolute path", check, p.name, *p.path)
		}
	}
	return jc, true, nil
}

// validate refuses, before anything is started, a judge check whose rubric, threshold,
// page or judge agent is wrong.
func (jc *judgeCheck) validate(check string) error {
	r, err := LoadRubric(jc.rubric)
	if err == nil {
		err = r.CheckThreshold(jc.threshold)
	}
	if err == nil && (filepath.IsAbs(jc.page) || strings.HasPrefix(filepath.Clean(jc.page), "..")) {
		err = fmt.Errorf("--page %q: want a path below the workspace, e.g. index.html", jc.page)
	}
	if err == nil {
		var words []string
		if words, err = splitWords(jc.judge); err == nil && len(words) > 0 {
			_, err = agent.ByName(words[0])
		} else {
			err = fmt.Errorf("--judge %q: want an agent and its arguments, e.g. %q", jc.judge, DefaultJudge)
		}
	}
	if err != nil {
		return fmt.Errorf("--check %q: %v", check, err)
	}
	return nil
}

// run judges the workspace dir as tare judge would, in tare's own process: the page and its
// files are copied into the judge's rooms without following any link (stagePage), so a link
// the agent planted is never read on the host. A page the agent did not leave as a regular
// file fails; a judge that could not score is no verdict on the agent.
func (jc *judgeCheck) run(ctx context.Context, dir string, cfg *config.Config) checkResult {
	r, err := LoadRubric(jc.rubric)
	if err != nil {
		return checkResult{CouldNotRun: true, Detail: "judge could not run: " + err.Error()}
	}
	v := &journal.JudgeVerdict{Threshold: &jc.threshold, Scale: [2]int{r.Lo, r.Hi}}
	if err := ValidatePages([]string{dir}, jc.page); err != nil {
		v.Error = err.Error()
		return checkResult{Detail: "judge: " + run.Clip(err.Error(), 160), Judge: v}
	}
	rep, err := Judge(ctx, JudgeOptions{Dirs: []string{dir}, Page: jc.page, Rubric: r, Judge: jc.judge, Script: jc.script,
		Seed: jc.seed, Timeout: jc.timeout, Config: cfg, AllowDirty: jc.allowDirty, Kind: "judge"})
	if err != nil || len(rep.Pages) != 1 || len(rep.Pages[0].Judgements) != 1 {
		if err == nil {
			err = errors.New("the judge gave no judgement")
		}
		v.Error = err.Error()
		return checkResult{CouldNotRun: true, Detail: "judge could not run: " + run.Clip(err.Error(), 160), Judge: v, Usage: rep.Usage}
	}
	p := rep.Pages[0]
	j := p.Judgements[0]
	v.Screenshot, v.Out, v.Score, v.Reason, v.Error = p.Screenshot, rep.Out, j.Score, j.Reason, j.Error
	res := checkResult{Judge: v, Usage: rep.Usage, Score: j.Score}
	res.Passed, res.CouldNotRun, res.Detail = judgedVerdict(j, jc.threshold, r)
	return res
}

// judgedVerdict is a judgement as a check's verdict. A judgement whose answer held several
// score lines (the page made its judge quote a planted one) fails the page: as "could not
// run" it would leave the rate, and a page could leave it at will.
func judgedVerdict(j Judgement, threshold float64, r Rubric) (passed, couldNotRun bool, detail string) {
	switch {
	case j.Score == nil && j.Spoiled:
		return false, false, "judge's answer spoiled, counted as failed: " + run.Clip(j.Error, 160)
	case j.Score == nil:
		return false, true, "judge gave no score: " + run.Clip(j.Error, 160)
	}
	return float64(*j.Score) >= threshold, false, fmt.Sprintf("judge score %d (threshold %g, scale %d-%d): %s", *j.Score, threshold, r.Lo, r.Hi, run.Clip(j.Reason, 120))
}

// judgeCheckLines says where a built-in judge check runs, for the journal and the report.
func judgeCheckLines() []string {
	return []string{"tare's own judge, run by tare on the host: it copies the workspace's page without following links, " +
		"renders it in a room with no network and has the judge score it in a blind room"}
}

// checkUsageLines are the report's lines for what each side's checks spent (tare's judge's
// agent), under the agents' usage and apart from it; none when no check spent anything.
func checkUsageLines(rec *run.Recipe, tallies []journal.SideTally) string {
	var b strings.Builder
	for i, s := range rec.Sides {
		if u := tallies[i].CheckUsage; !u.IsZero() {
			// The judge talks to tare's model server when its own --script says so, which
			// the run's recipe does not know: its usage line says whether it was paid.
			jc, _, _ := parseJudgeCheck(rec.Check)
			simulated := jc != nil && jc.script != ""
			b.WriteString("  check " + strings.TrimPrefix(usageLine(s.Key, u, simulated), "  ") + " (the check's judge, not the agent)\n")
		}
	}
	return b.String()
}
