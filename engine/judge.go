package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/browser"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
	"tare/sandbox"
)

// DefaultJudge is the judge agent and its arguments when --judge is not given.
const DefaultJudge = "claude --model sonnet"

// DefaultJudgeTimeout bounds one judgement.
const DefaultJudgeTimeout = 10 * time.Minute

// JudgeOptions is a judge run: each page rendered once, then judged Times times, each time
// by a fresh judge agent in a fresh room.
type JudgeOptions struct {
	// Dirs are the page folders; Page is the page below each (default index.html).
	Dirs []string
	Page string
	// Rubric is what the judge scores by (LoadRubric).
	Rubric Rubric
	// Judge is the judge agent and its arguments, "claude --model sonnet".
	Judge string
	// Times is the number of judgements per page (1 for tare judge).
	Times, Jobs int
	// Script makes the judge talk to tare's own model server replaying this script instead
	// of its provider; Models, when set, is such a server already running (tests read its
	// requests).
	Script string
	Seed   int64
	Models *modelserver.Server
	// Out receives each page's screenshot and judgements.json (default:
	// <state>/<Kind>/<folder>-<time>).
	Out     string
	Timeout time.Duration
	Config  *config.Config
	// AllowDirty judges even when the probe's reading of the judge's room is not "tare: 0.00";
	// Progress receives the probe's lines (nil: none).
	AllowDirty bool
	Progress   io.Writer
	// Threshold, when set, is the lowest passing score: a judge-noise run's journal marks
	// each judgement passed or failed by it.
	Threshold *float64
	// Tolerance is the flip rate judge-noise clears Threshold below, at every page
	// (0: DefaultTolerance).
	Tolerance float64
	// Kind ("judge" or "judge-noise"), Argv (the command line, its paths absolute) and
	// Version (tare's) go to Out/recipe.json when Argv is set, so tare rerun can repeat the run.
	Kind    string
	Argv    []string
	Version string
	// On is where each judgement runs: "" or local here, slurm one job each (judge-noise).
	On string
}

// Judgement is one judge's answer on one page.
type Judgement struct {
	// Score is nil when the judge gave no score on the rubric's scale; Error says why.
	Score  *int   `json:"score,omitempty"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// Spoiled: the judge's answer held several score lines, as when it quotes one the page
	// planted. It has no score, and as a check it fails the page (not "could not run"): a
	// page must not leave the rate by making its judge quote it.
	Spoiled bool    `json:"spoiled,omitempty"`
	Seconds float64 `json:"seconds"`
	// Usage is the judge agent's tokens and cost: a check's spending, never the judged agent's.
	Usage journal.Usage `json:"usage"`
}

// PageJudgements is one page and every judgement of it.
type PageJudgements struct {
	Dir        string `json:"dir"`
	Page       string `json:"page"`
	Screenshot string `json:"screenshot"`
	// Blocked are the URLs the page asked for that the render room has no network for.
	Blocked []string `json:"blocked,omitempty"`
	// Left are the page folder's entries the judge was not given: hidden files, agents'
	// instruction files and anything named for an agent, links and special files.
	Left []string `json:"left_out,omitempty"`
	// Scrubbed is what was taken out of the markup the judge was given ("index.html: a
	// generator meta tag"); every other byte of a file passes as written.
	Scrubbed   []string    `json:"scrubbed,omitempty"`
	Judgements []Judgement `json:"judgements"`
}

// JudgeReport is a judge run's result, also written to Out/judgements.json.
type JudgeReport struct {
	Judge  string `json:"judge"`
	Rubric string `json:"rubric"`
	Scale  [2]int `json:"scale"`
	Seed   int64  `json:"seed,omitempty"`
	// Reading is the probe's verdict on the judge's room, "tare: 0.00" when proven clean.
	Reading string `json:"reading"`
	// Simulated is true when the judge talked to tare's model server: its cost was not paid.
	Simulated bool             `json:"simulated,omitempty"`
	Out       string           `json:"out"`
	Pages     []PageJudgements `json:"pages"`
	Usage     journal.Usage    `json:"usage"`
	// Tolerance is judge-noise's: a threshold is cleared at a page when its flip rate's upper
	// bound is below it (0: DefaultTolerance).
	Tolerance float64 `json:"tolerance,omitempty"`
}

// judgeEnv is what every judgement of a run shares.
type judgeEnv struct {
	o      JudgeOptions
	agent  agent.Agent
	inst   agent.Install
	args   []string
	models *modelserver.Server
	// journal is a judge-noise run's (nil for tare judge).
	journal *judgeJournal
	// backend runs each judgement: here, or one Slurm job each (--on slurm, judge-noise only;
	// judgeslurm.go). Set for every run that judges.
	backend backend
}

// ValidatePages refuses page folders and a page that do not exist, before anything is
// written: one line naming the folder or file and the fix.
func ValidatePages(dirs []string, page string) error {
	if page == "" || filepath.IsAbs(page) || strings.HasPrefix(filepath.Clean(page), "..") {
		return fmt.Errorf("--page %q: want a path below the folder, e.g. index.html", page)
	}
	for _, d := range dirs {
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() {
			return fmt.Errorf("%s: no such folder; fix: give the folder that holds the page", d)
		}
		p := filepath.Join(d, page)
		info, err = os.Lstat(p)
		switch {
		case err != nil:
			return fmt.Errorf("%s: no page %s there; fix: give the folder that holds it, or name the page with --page", d, page)
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s: %s is not a regular file (a link or a folder); fix: name the page itself with --page", d, page)
		}
	}
	return nil
}

// Judge renders each page once, in a room with no network, then has the judge agent score it
// by the rubric Times times, each in a fresh blind room that holds the screenshot, the
// page's files and the rubric, and nothing that names who built the page. Bad input is
// refused before anything is written.
func Judge(ctx context.Context, o JudgeOptions) (JudgeReport, error) {
	if o.Page == "" {
		o.Page = "index.html"
	}
	if o.Judge == "" {
		o.Judge = DefaultJudge
	}
	if o.Times < 1 {
		o.Times = 1
	}
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultJudgeTimeout
	}
	if len(o.Dirs) == 0 {
		return JudgeReport{}, errors.New("give the folder of the page to judge")
	}
	o.Dirs = append([]string(nil), o.Dirs...) // the caller's slice stays as given
	for i, d := range o.Dirs {
		// The folder itself may be a link (the operator's own); what is inside it is copied
		// without following any.
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return JudgeReport{}, fmt.Errorf("%s: %v; fix: give the folder that holds the page", d, err)
		}
		o.Dirs[i] = abs
	}
	if err := ValidatePages(o.Dirs, o.Page); err != nil {
		return JudgeReport{}, err
	}
	words, err := splitWords(o.Judge)
	if err != nil || len(words) == 0 {
		return JudgeReport{}, fmt.Errorf("--judge %q: want an agent and its arguments, e.g. %q", o.Judge, DefaultJudge)
	}
	a, err := agent.ByName(words[0])
	if err != nil {
		return JudgeReport{}, fmt.Errorf("--judge %q: %v", o.Judge, err)
	}
	inst, err := room.FindAgent(a, o.Config, o.Dirs...)
	if err != nil {
		return JudgeReport{}, err
	}
	if _, err := browser.Find(); err != nil {
		return JudgeReport{}, err
	}
	if err := onPreflight(o.On, o.Config); err != nil {
		return JudgeReport{}, err
	}
	rep := JudgeReport{Judge: o.Judge, Rubric: o.Rubric.Path, Scale: [2]int{o.Rubric.Lo, o.Rubric.Hi}, Tolerance: o.Tolerance}
	models := o.Models
	if o.Script != "" && models == nil {
		script, err := modelserver.LoadScript(o.Script)
		if err != nil {
			return JudgeReport{}, err
		}
		rep.Seed = run.Seed(o.Seed)
		if models, err = judgeModels(script, rep.Seed); err != nil {
			return JudgeReport{}, err
		}
		defer models.Close()
	}
	if o.Out == "" {
		kind := o.Kind
		if kind == "" {
			kind = "judge"
		}
		if o.Out, err = run.MakeFreeDir(filepath.Join(o.Config.StateDir, kind), o.Dirs[0], time.Now()); err != nil {
			return JudgeReport{}, err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
			return JudgeReport{}, fmt.Errorf("judge folder %s: %v", o.Out, err)
		}
		if err := os.Mkdir(o.Out, 0o755); err != nil {
			return JudgeReport{}, fmt.Errorf("judge folder %s: %v; fix: choose another --out", o.Out, err)
		}
	}
	rep.Out = o.Out
	rep.Simulated = models != nil
	if o.Argv != nil {
		if err := writeJudgeRecipe(ctx, o, inst, rep.Seed); err != nil {
			os.RemoveAll(o.Out)
			return JudgeReport{}, err
		}
	}
	env := &judgeEnv{o: o, agent: a, inst: inst, args: words[1:], models: models}
	var stages []string
	defer func() { removeStages(stages) }()
	// Every page is rendered before any judge starts: a page that cannot be rendered stops
	// the run before it spends anything, and leaves no judge folder behind.
	if stages, err = env.stageAll(ctx, &rep); err != nil {
		os.RemoveAll(o.Out)
		return JudgeReport{}, err
	}
	if o.Kind == "judge-noise" {
		// Only now, with every page rendered and the room proven: a run refused before
		// leaves no folder, so no journal either.
		if env.journal, err = openJudgeJournal(o, words, rep.Simulated); err != nil {
			os.RemoveAll(o.Out)
			return JudgeReport{}, err
		}
		if env.journal.phase("judging") != nil {
			err := env.journal.err()
			env.journal.done("", err)
			return JudgeReport{}, err
		}
	}
	if env.backend, err = judgeBackend(o, o.On); err != nil {
		env.journal.done("", err)
		return JudgeReport{}, err
	}
	pool := env.pool(ctx, judgementGrid(rep.Pages), rep.Scale)
	for k := range o.Times {
		for i := range rep.Pages {
			pool.run(judgeWork{page: i, k: k}, env.fresh(stages[i], len(rep.Pages[i].Blocked) > 0))
		}
	}
	if err := pool.wait(); err != nil {
		env.backend.finish(nil)
		env.journal.done("", err)
		return rep, err
	}
	return env.finish(ctx, rep)
}

// judgeModels is tare's model server replaying script from seed, for the judges.
func judgeModels(script *modelserver.Script, seed int64) (*modelserver.Server, error) {
	srv, err := modelserver.New(modelserver.Options{Script: script, Seed: seed})
	if err != nil {
		return nil, err
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("model server: %v", err)
	}
	return srv, nil
}

// stageAll renders every page into a staged folder (stage), the pages going to rep with
// room for Times judgements each, then proves the judge's room clean as every agent's room
// is before it runs: the probe reads a room of the same shape, on the first page's staged
// folder. The staged folders are the caller's to remove (removeStages), also on error.
func (env *judgeEnv) stageAll(ctx context.Context, rep *JudgeReport) ([]string, error) {
	o := env.o
	rep.Pages = make([]PageJudgements, len(o.Dirs))
	stages := make([]string, len(o.Dirs))
	for i, d := range o.Dirs {
		var err error
		if stages[i], rep.Pages[i], err = env.stage(ctx, i, d); err != nil {
			return stages, err
		}
		rep.Pages[i].Judgements = make([]Judgement, o.Times)
	}
	reading, err := probe.Probe(ctx, probe.ProbeOptions{Agent: env.agent, Project: stages[0], Config: o.Config, Progress: o.Progress})
	if err != nil {
		return stages, fmt.Errorf("probing the judge's room: %v", err)
	}
	rep.Reading = reading.Verdict()
	if !reading.Zero() && !o.AllowDirty {
		return stages, fmt.Errorf("the judge %s: %s; %v", env.agent.Name(), reading.Verdict(), ErrDirty)
	}
	return stages, nil
}

// removeStages removes the staged folders: they hold a copy of each page, which only the
// judges of this process read.
func removeStages(stages []string) {
	for _, st := range stages {
		if st != "" {
			os.RemoveAll(st)
		}
	}
}

// finish writes the report of a judge run whose judgements have all ended (or were stopped):
// judgements.json and, for judge-noise, the journal's report.
func (env *judgeEnv) finish(ctx context.Context, rep JudgeReport) (JudgeReport, error) {
	// Every job has ended or was cancelled: nothing on the cluster is left to follow, so the
	// backend lets go even of a stopped run's (tare resume submits its cancelled jobs anew). A
	// kill -9 never gets here, so the folder stays for resume to find the jobs that outlived
	// tare.
	cerr := env.backend.finish(nil)
	if err := ctx.Err(); err != nil {
		env.journal.done("", err)
		return rep, err
	}
	for _, p := range rep.Pages {
		for _, j := range p.Judgements {
			rep.Usage = rep.Usage.Add(j.Usage)
		}
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = run.WriteFile(filepath.Join(rep.Out, "judgements.json"), append(data, '\n'))
	}
	err = errors.Join(err, cerr)
	return rep, errors.Join(err, env.journal.done(rep.NoiseText(env.o.Threshold), err))
}

// judgementGrid is each page's judgements, the slices the judgements are written into.
func judgementGrid(pages []PageJudgements) [][]Judgement {
	grid := make([][]Judgement, len(pages))
	for i := range pages {
		grid[i] = pages[i].Judgements
	}
	return grid
}

// judgeWork is one judgement to run: page's k-th, as attempt (its journal's TailStarted), or,
// when job is set, the attempt the journal has as running, whose Slurm job outlived the tare
// that submitted it: followed to its end, not started again.
type judgeWork struct {
	page, k, attempt int
	job              string
}

// judgePool runs judgements, Jobs at a time, each writing its judgement into grid and its
// outcome into the journal. A journal write that fails stops the pool (stop): the
// judgements running are cancelled, none is started, and err says why.
type judgePool struct {
	env   *judgeEnv
	ctx   context.Context
	stop  context.CancelCauseFunc
	sem   chan struct{}
	wg    sync.WaitGroup
	grid  [][]Judgement
	scale [2]int
}

func (env *judgeEnv) pool(ctx context.Context, grid [][]Judgement, scale [2]int) *judgePool {
	ctx, stop := context.WithCancelCause(ctx)
	return &judgePool{env: env, ctx: ctx, stop: stop, sem: make(chan struct{}, env.o.Jobs), grid: grid, scale: scale}
}

// run starts w once fewer than Jobs judgements run; body judges it.
func (p *judgePool) run(w judgeWork, body func(ctx context.Context, w judgeWork) Judgement) {
	p.wg.Add(1)
	p.sem <- struct{}{}
	go func() {
		defer p.wg.Done()
		defer func() { <-p.sem }()
		if p.ctx.Err() != nil {
			return
		}
		j := p.env.journal
		if w.job == "" {
			if err := j.started(w.page, w.k, w.attempt); err != nil {
				p.stop(j.err())
				return
			}
		}
		jctx, stop := j.killable(p.ctx, w.page, w.k)
		defer stop()
		jd := body(jctx, w)
		if errors.Is(context.Cause(jctx), journal.ErrKilled) && jd.Score == nil {
			jd.Error = journal.ErrKilled.Error() + ": " + jd.Error
		}
		p.grid[w.page][w.k] = jd
		if p.ctx.Err() != nil && jd.Score == nil {
			// Stopped with the run, not finished: tare resume runs it again.
			return
		}
		if err := errors.Join(j.finished(w.page, w.k, screenshotPath(p.env.o.Out, w.page), jd, p.scale, context.Cause(jctx)), j.err()); err != nil {
			p.stop(j.err())
		}
	}()
}

// wait is when every judgement started has ended; the error is the journal's when a write
// failed, which stopped the pool.
func (p *judgePool) wait() error {
	p.wg.Wait()
	return p.env.journal.err()
}

// fresh judges the page staged in stage in a fresh room (or job); on tare's model server each
// judgement draws from a stream of its own, "judge-P-K", so judgements vary as independent
// calls to a model would, and an attempt run again draws as the first did.
func (env *judgeEnv) fresh(stage string, blocked bool) func(context.Context, judgeWork) Judgement {
	return func(ctx context.Context, w judgeWork) Judgement {
		upstream, err := env.upstream(w)
		if err != nil {
			return Judgement{Error: err.Error()}
		}
		return env.backend.judge(ctx, env, stage, upstream, blocked, w)
	}
}

// upstream is w's model address: its stream on tare's model server, "" for the provider.
func (env *judgeEnv) upstream(w judgeWork) (string, error) {
	if env.models == nil {
		return "", nil
	}
	return env.models.Stream(fmt.Sprintf("judge-%d-%d", w.page+1, w.k+1))
}

// screenshotPath is where page n's screenshot is kept in the run folder out.
func screenshotPath(out string, n int) string {
	return filepath.Join(out, fmt.Sprintf("page-%d.png", n+1))
}

// stage makes the judge's workspace for page folder dir, a fresh temp folder (the caller
// removes it, also on error): a copy of the page's files (stagePage), its screenshot,
// rendered from that copy, and the rubric. The screenshot is also kept in Out.
func (env *judgeEnv) stage(ctx context.Context, n int, dir string) (string, PageJudgements, error) {
	o := env.o
	pj := PageJudgements{Dir: dir, Page: o.Page}
	stage, err := os.MkdirTemp("", "tare-judge-")
	if err != nil {
		return "", pj, fmt.Errorf("judge room folder: %v", err)
	}
	if pj.Left, pj.Scrubbed, err = stagePage(dir, filepath.Join(stage, judgePageDir)); err != nil {
		return stage, pj, err
	}
	if _, err := os.Lstat(filepath.Join(stage, judgePageDir, o.Page)); err != nil {
		return stage, pj, fmt.Errorf("%s: the page %s is hidden, named for an agent or a model, or markup too large to scrub, so the judge cannot be given it (see what was left out); fix: rename it", dir, o.Page)
	}
	shot, err := renderPage(ctx, o.Config, filepath.Join(stage, judgePageDir), o.Page)
	if err != nil {
		return stage, pj, err
	}
	pj.Blocked = shot.Blocked
	pj.Screenshot = screenshotPath(o.Out, n)
	if err := capsule.WriteFileAtomic(pj.Screenshot, shot.PNG, 0o644); err != nil {
		return stage, pj, err
	}
	if err := os.WriteFile(filepath.Join(stage, judgeShot), shot.PNG, 0o444); err != nil {
		return stage, pj, err
	}
	return stage, pj, os.WriteFile(filepath.Join(stage, judgeRubric), []byte(o.Rubric.Text), 0o444)
}

// What the judge's workspace holds: the page's files, its screenshot and the rubric, under
// names that say nothing of who made the page.
const (
	judgePageDir = "page"
	judgeShot    = "screenshot.png"
	judgeRubric  = "rubric.txt"
)

// judgePrompt asks for the one line tare reads: "score N: reason".
func judgePrompt(page string, r Rubric, blocked bool) string {
	net := ""
	if blocked {
		net = " The page asked for files from the network; the browser had none, so they are missing from the screenshot."
	}
	return fmt.Sprintf("You are judging a web page. Its files are in %s/ and the page is %s/%s. "+
		"%s is a full-page screenshot of it in a browser window %d pixels wide.%s "+
		"Score the page by the rubric in %s, on its scale %s. Look at the screenshot and the files; change nothing. "+
		"Answer with one line: score N: reason",
		judgePageDir, judgePageDir, filepath.ToSlash(page), judgeShot, browser.Width, net, judgeRubric, r.Scale())
}

// judgeRoom is the blind room of one judgement: the staged folder read-only as its
// workspace, the judge agent's own setup built as every agent room is (buildRoom, the room
// the probe proves), and nothing else.
func (env *judgeEnv) judgeRoom(stage, sessions, upstream string, blocked bool) (sandbox.Room, error) {
	p := room.Plan{Agent: env.agent, Inst: env.inst, Config: env.o.Config, Workspace: stage, ReadOnly: true,
		Sessions: sessions, Login: upstream == ""}
	box, setup, err := room.Build(p, upstream)
	if err != nil {
		return sandbox.Room{}, err
	}
	args := append(append(setup.Args, env.o.Config.Agents[env.agent.Name()].Args...), env.args...)
	box.Argv = append([]string{env.inst.Command}, env.agent.RunArgs(judgePrompt(env.o.Page, env.o.Rubric, blocked), args)...)
	return box, nil
}

// judgeIn runs one judgement in a fresh room over stage whose judge talks to upstream (""
// for the real provider): here, or on a cluster node (tare worker).
func (env *judgeEnv) judgeIn(ctx context.Context, stage, upstream string, blocked bool) (j Judgement) {
	began := time.Now()
	// A named result: the deferred time lands in what is returned.
	defer func() { j.Seconds = time.Since(began).Seconds() }()
	sessions, err := os.MkdirTemp("", "tare-judge-session-")
	if err != nil {
		j.Error = err.Error()
		return j
	}
	defer os.RemoveAll(sessions)
	box, err := env.judgeRoom(stage, sessions, upstream, blocked)
	if err != nil {
		j.Error = err.Error()
		return j
	}
	var stdout, stderr strings.Builder
	box.Stdout, box.Stderr = &stdout, &stderr
	rctx, cancel := context.WithTimeout(ctx, env.o.Timeout)
	defer cancel()
	code, err := room.Run(rctx, box)
	switch {
	case errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		j.Error = fmt.Sprintf("the judge was stopped after %s", env.o.Timeout)
		return j
	case err != nil && ctx.Err() == nil:
		j.Error = "the judge did not start: " + err.Error()
		return j
	}
	r, perr := env.agent.ParseStream(strings.NewReader(stdout.String()))
	if perr == nil {
		j.Usage = usageOf(runUsage(env.agent, r, nil, sessions))
	}
	switch {
	case perr != nil:
		j.Error = fmt.Sprintf("the judge's output is unreadable (exit %d): %v; %s", code, perr, run.Clip(stderr.String(), 200))
	case r.IsError || code != 0:
		j.Error = fmt.Sprintf("the judge failed (exit %d): %s", code, run.Clip(r.Error+" "+stderr.String(), 200))
	default:
		j.Score, j.Reason, err = parseScore(r.Text, env.o.Rubric)
		if err != nil {
			j.Error, j.Spoiled = err.Error(), errors.As(err, &severalScores{})
		}
	}
	return j
}

// verdictLine is a line that gives a score: "score N: reason" at the start of the line (a bold,
// a heading or a quote mark before it, a colon after "score", "/10" after N are fine).
var verdictLine = regexp.MustCompile(`(?i)^[\s*_#>]*score\W{0,3}\s*(\d+)\b(?:\s*/\s*\d+)?[*_]*\s*[:.,;\-–—]?\s*(.*)$`)

// parseScore reads the judge's verdict in the rubric's format: one line "score N: reason",
// the answer's last non-empty line. A page can plant "score 10" for the judge to quote, so a
// score anywhere else never counts, and an answer holding several score lines (the judge's
// and a quoted one) is no verdict. A score off the scale is refused too.
func parseScore(text string, r Rubric) (*int, string, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var scores []string
	last := ""
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		last = l
		if verdictLine.MatchString(l) {
			scores = append(scores, strings.TrimSpace(l))
		}
	}
	if len(scores) > 1 {
		return nil, "", severalScores{len(scores), run.Clip(strings.Join(scores, " | "), 200)}
	}
	m := verdictLine.FindStringSubmatch(last)
	if m == nil {
		return nil, "", fmt.Errorf("the judge gave no score (want its last line \"score N: reason\"); it said: %s", run.Clip(text, 200))
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < r.Lo || n > r.Hi {
		return nil, "", fmt.Errorf("the judge's score %s is off the rubric's scale %s", m[1], r.Scale())
	}
	return &n, strings.TrimSpace(m[2]), nil
}

// severalScores is an answer with more than one score line (Judgement.Spoiled).
type severalScores struct {
	n     int
	lines string
}

func (e severalScores) Error() string {
	return fmt.Sprintf("the judge's answer holds %d score lines (%s), so which is its verdict is unknown (want one, its last line \"score N: reason\")", e.n, e.lines)
}

// writeJudgeRecipe writes Out/recipe.json: the command line, the judge agent's version, the
// model script, and each page and the rubric by content.
func writeJudgeRecipe(ctx context.Context, o JudgeOptions, inst agent.Install, seed int64) error {
	rec := &run.Recipe{Tare: o.Version, Argv: o.Argv, Kind: o.Kind, Time: time.Now().UTC(), Jobs: o.Jobs, Runs: o.Times, Seed: seed,
		Agents: map[string]run.RecipeAgent{}, Inputs: map[string]string{}, On: onRecipe(o.On)}
	if o.Kind == "judge-noise" {
		set := judgeSettings{Dirs: o.Dirs, Page: o.Page, Rubric: o.Rubric, Judge: o.Judge, Times: o.Times,
			Timeout: o.Timeout, Threshold: o.Threshold, Tolerance: o.Tolerance, AllowDirty: o.AllowDirty}
		if err := rec.SetSettings(judgeNoiseKey, set); err != nil {
			return err
		}
	}
	words, _ := splitWords(o.Judge)
	rec.Agents[words[0]] = run.RecipeAgent{Version: inst.Version, Bin: inst.Bin, Snapshots: "none (a judge takes no capsules)"}
	for _, d := range o.Dirs {
		root, err := fingerprint(ctx, d)
		if err != nil {
			return fmt.Errorf("%s: %v", d, err)
		}
		rec.Inputs["page "+d] = root
	}
	// Absolute paths: a rerun may start in another folder.
	rubric, err := filepath.Abs(o.Rubric.Path)
	if err != nil {
		return err
	}
	rec.Inputs["rubric "+rubric] = digest([]byte(o.Rubric.Text))
	if o.Script != "" {
		text, err := os.ReadFile(o.Script)
		if err != nil {
			return fmt.Errorf("--script %s: %v", o.Script, err)
		}
		if rec.Script, err = filepath.Abs(o.Script); err != nil {
			return err
		}
		rec.ScriptText = string(text)
	}
	return run.WriteRecipe(o.Out, rec)
}
