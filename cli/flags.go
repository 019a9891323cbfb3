package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"tare/engine"
	"tare/engine/run"
)

// capFlags adds --max-cost and --max-tokens (each tail) and --run-max-cost and
// --run-max-tokens (all tails together): the relay meters every model call and answers the
// first one after a cap is spent with an error, and the tail ends as over budget.
func capFlags(cmd *cobra.Command, c *run.Caps) {
	f := cmd.Flags()
	f.Float64Var(&c.TailCost, "max-cost", 0, "USD a tail may spend on tare's prices, metered at the relay; the next call is refused and the tail ends over budget (0: no cap)")
	f.Int64Var(&c.TailTokens, "max-tokens", 0, "tokens (input, output and cache) a tail may spend, metered at the relay (0: no cap)")
	f.Float64Var(&c.RunCost, "run-max-cost", 0, "USD all tails of the run may spend together (0: no cap)")
	f.Int64Var(&c.RunTokens, "run-max-tokens", 0, "tokens all tails of the run may spend together (0: no cap)")
}

// checkOnHostFlag is the loud opt-in to run a check on the host: the check runs what the
// agent wrote, so by default it has a room of its own.
func checkOnHostFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVar(on, "check-on-host", false, "run the check ON THE HOST, as you, with your environment, files and network (said in the report and the journal)")
}

// warnRecordedCheck warns before a tail or a resume of the run in dir whose check will run on
// the host: by the run's own recorded choice, or by this command's onHost.
func warnRecordedCheck(dir string, onHost bool) {
	if rec, err := run.ReadRecipe(dir); err == nil {
		warnCheckOnHost((onHost || rec.CheckRoom.OnHost) && rec.Check != "")
	}
}

// warnCheckOnHost says on stderr, before the run, that its check will run on the host.
func warnCheckOnHost(on bool) {
	if on {
		fmt.Fprintln(os.Stderr, "tare: warning: "+run.OnHostWarning)
	}
}

// runFlags are the flags every command that runs tails takes (calibrate, record, cliff and
// swap): where the runs start, how a workspace is scored, how long an agent and a check may
// take, where the run is written, the scripted model, and whether a dirty reading may run.
// Declared once, so no command can lose one of them or spell it differently.
type runFlags struct {
	project      string
	projectSet   func() bool
	env          string
	check        string
	checkTimeout time.Duration
	checkOnHost  bool
	timeout      time.Duration
	out          string
	script       string
	seed         int64
	allowDirty   bool
	caps         run.Caps
}

// runHelp is what a command says in its runFlags' help where its runs differ: empty fields
// take the words most commands use.
type runHelp struct {
	kind       string // the run's kind, naming its default folder below the state directory
	starts     string // what starts from --project, e.g. "each run starts"
	check      string
	script     string
	seed       string
	allowDirty string
}

// addRunFlags declares the runFlags on cmd; caps adds the spending caps too.
func addRunFlags(cmd *cobra.Command, h runHelp, caps bool) *runFlags {
	or := func(s, dflt string) string {
		if s != "" {
			return s
		}
		return dflt
	}
	rf := &runFlags{}
	f := cmd.Flags()
	f.StringVar(&rf.project, "project", ".", "the project "+or(h.starts, "the run starts")+" from (with --env and no --project: the image's WORKDIR contents)")
	rf.projectSet = func() bool { return f.Changed("project") }
	envFlag(cmd, &rf.env)
	f.StringVar(&rf.check, "check", "", or(h.check, "shell command that scores a workspace, in a room of its own (exit 0 passes)"))
	f.DurationVar(&rf.checkTimeout, "check-timeout", engine.DefaultCheckTimeout, "a check running longer fails")
	checkOnHostFlag(cmd, &rf.checkOnHost)
	f.DurationVar(&rf.timeout, "timeout", engine.DefaultAgentTimeout, "an agent running longer is stopped")
	f.StringVar(&rf.out, "out", "", "run directory (default $XDG_STATE_HOME/tare/"+h.kind+"/<project>-<time>)")
	f.StringVar(&rf.script, "script", "", or(h.script, "talk to tare's own model server replaying this script"))
	f.Int64Var(&rf.seed, "seed", 0, or(h.seed, "seed of the script's branch draws, to replay a run (default: a fresh one, in recipe.json)"))
	f.BoolVar(&rf.allowDirty, "allow-dirty", false, or(h.allowDirty, `run even when the reading is not "tare: 0.00"`))
	if caps {
		capFlags(cmd, &rf.caps)
	}
	return rf
}

// envFlag is --env DIR, the one way every command that starts rooms is told to root them in
// a task's environment image.
func envFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "env", "", "environment folder (a Dockerfile and its build context, as a task's environment/): every room, the check's too, is rooted in its image, built or found in tare's cache")
}

// startProject is the project the run starts from: none with --env and no --project (the
// image's WORKDIR contents are the start), else --project.
func (rf *runFlags) startProject() string {
	if rf.env != "" && !rf.projectSet() {
		return ""
	}
	return rf.project
}

// record fills the fields of o the flags set; a recording, a cliff and a swap share them.
func (rf *runFlags) record(o *engine.RecordOptions) {
	o.Env = rf.env
	o.Project, o.Check, o.CheckTimeout, o.CheckOnHost = rf.startProject(), rf.check, rf.checkTimeout, rf.checkOnHost
	o.AgentTimeout, o.Out, o.Script, o.Seed, o.AllowDirty, o.Caps = rf.timeout, rf.out, rf.script, rf.seed, rf.allowDirty, rf.caps
}

// calibrate fills the fields of o the flags set.
func (rf *runFlags) calibrate(o *engine.CalibrateOptions) {
	o.Env = rf.env
	o.Project, o.Check, o.CheckTimeout, o.CheckOnHost = rf.startProject(), rf.check, rf.checkTimeout, rf.checkOnHost
	o.AgentTimeout, o.Out, o.Script, o.Seed, o.AllowDirty, o.Caps = rf.timeout, rf.out, rf.script, rf.seed, rf.allowDirty, rf.caps
}
