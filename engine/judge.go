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
	Score   *int    `json:"score,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Error   string  `json:"error,omitempty"`
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
	Left       []string    `json:"left_out,omitempty"`
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
	// slurm runs each judgement as a job (--on slurm, judge-noise only; judgeslurm.go).
	slurm *judgeCluster
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
	inst, err := probe.FindAgent(a, o.Config, o.Dirs...)
	if err != nil {
		return JudgeReport{}, err
	}
	if _, err := browser.Find(); err != nil {
		return JudgeReport{}, err
	}
	if err := onPreflight(o.On, o.Config); err != nil {
		return JudgeReport{}, err
	}
	rep := JudgeReport{Judge: o.Judge, Rubric: o.Rubric.Path, Scale: [2]int{o.Rubric.Lo, o.Rubric.Hi}}
	models := o.Models
	if o.Script != "" && models == nil {
		script, err := modelserver.LoadScript(o.Script)
		if err != nil {
			return JudgeReport{}, err
		}
		rep.Seed = runSeed(o.Seed)
		srv, err := modelserver.New(modelserver.Options{Script: script, Seed: rep.Seed})
		if err != nil {
			return JudgeReport{}, err
		}
		if err := srv.Start("127.0.0.1:0"); err != nil {
			return JudgeReport{}, fmt.Errorf("model server: %v", err)
		}
		defer srv.Close()
		models = srv
	}
	if o.Out == "" {
		kind := o.Kind
		if kind == "" {
			kind = "judge"
		}
		if o.Out, err = MakeFreeRunDir(filepath.Join(o.Config.StateDir, kind), o.Dirs[0], time.Now()); err != nil {
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
	rep.Pages = make([]PageJudgements, len(o.Dirs))
	stages := make([]string, len(o.Dirs))
	defer func() {
		for _, st := range stages {
			os.RemoveAll(st)
		}
	}()
	// Every page is rendered before any judge starts: a page that cannot be rendered stops
	// the run before it spends anything, and leaves no judge folder behind.
	for i, d := range o.Dirs {
		stages[i], rep.Pages[i], err = env.stage(ctx, i, d)
		if err != nil {
			os.RemoveAll(o.Out)
			return JudgeReport{}, err
		}
		rep.Pages[i].Judgements = make([]Judgement, o.Times)
	}
	// The judge's room is proven clean as every agent's room is before it runs: the probe
	// reads a room of the same shape, on the first page's staged folder.
	reading, err := probe.Probe(ctx, probe.ProbeOptions{Agent: a, Project: stages[0], Config: o.Config, Progress: o.Progress})
	if err != nil {
		os.RemoveAll(o.Out)
		return JudgeReport{}, fmt.Errorf("probing the judge's room: %v", err)
	}
	rep.Reading = reading.Verdict()
	if !reading.Zero() && !o.AllowDirty {
		os.RemoveAll(o.Out)
		return JudgeReport{}, fmt.Errorf("the judge %s: %s; %v", a.Name(), reading.Verdict(), ErrDirty)
	}
	if o.Kind == "judge-noise" {
		// Only now, with every page rendered and the room proven: a run refused before
		// leaves no folder, so no journal either.
		if env.journal, err = openJudgeJournal(o, words, rep.Simulated); err != nil {
			os.RemoveAll(o.Out)
			return JudgeReport{}, err
		}
		env.journal.phase("judging")
	}
	if o.On == OnSlurm {
		if env.slurm, err = newJudgeCluster(o); err != nil {
			env.journal.done("", err)
			return JudgeReport{}, err
		}
	}
	env.judgeAll(ctx, rep.Pages, stages, rep.Scale)
	// Every job has ended or was cancelled: nothing on the cluster is left to follow.
	cerr := env.slurm.close()
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
		err = capsule.WriteFileAtomic(filepath.Join(o.Out, "judgements.json"), append(data, '\n'), 0o644)
	}
	err = errors.Join(err, cerr)
	env.journal.done(rep.NoiseText(o.Threshold), err)
	return rep, err
}

// judgeAll runs every judgement of every page, Jobs at a time, each in a fresh room.
func (env *judgeEnv) judgeAll(ctx context.Context, pages []PageJudgements, stages []string, scale [2]int) {
	sem := make(chan struct{}, env.o.Jobs)
	var wg sync.WaitGroup
	for k := range env.o.Times {
		for i := range pages {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				stream := fmt.Sprintf("judge-%d-%d", i+1, k+1)
				env.journal.started(i, k)
				jctx, stop := env.journal.killable(ctx, i, k)
				defer stop()
				pages[i].Judgements[k] = env.judgeOnce(jctx, stages[i], stream, len(pages[i].Blocked) > 0)
				env.journal.finished(i, k, pages[i], pages[i].Judgements[k], scale)
			}()
		}
	}
	wg.Wait()
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
	if pj.Left, err = stagePage(dir, filepath.Join(stage, judgePageDir)); err != nil {
		return stage, pj, err
	}
	if _, err := os.Lstat(filepath.Join(stage, judgePageDir, o.Page)); err != nil {
		return stage, pj, fmt.Errorf("%s: the page %s is hidden or named for an agent, so the judge cannot be given it; fix: rename it", dir, o.Page)
	}
	shot, err := renderPage(ctx, o.Config, filepath.Join(stage, judgePageDir), o.Page)
	if err != nil {
		return stage, pj, err
	}
	pj.Blocked = shot.Blocked
	pj.Screenshot = filepath.Join(o.Out, fmt.Sprintf("page-%d.png", n+1))
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
	p := probe.Plan{Agent: env.agent, Inst: env.inst, Config: env.o.Config, Workspace: stage, ReadOnly: true,
		Sessions: sessions, Login: upstream == ""}
	room, setup, err := probe.BuildRoom(p, upstream, nil)
	if err != nil {
		return sandbox.Room{}, err
	}
	args := append(append(setup.Args, env.o.Config.Agents[env.agent.Name()].Args...), env.args...)
	room.Argv = append([]string{env.inst.Command}, env.agent.RunArgs(judgePrompt(env.o.Page, env.o.Rubric, blocked), args)...)
	return room, nil
}

// judgeOnce runs one judgement in a fresh room and session; on tare's model server it draws
// from a stream of its own, so judgements vary as independent calls to a model would.
func (env *judgeEnv) judgeOnce(ctx context.Context, stage, stream string, blocked bool) (j Judgement) {
	upstream := ""
	if env.models != nil {
		var err error
		if upstream, err = env.models.Stream(stream); err != nil {
			return Judgement{Error: err.Error()}
		}
	}
	if env.slurm != nil {
		j = env.judgeOnSlurm(ctx, stage, stream, upstream, blocked)
	} else {
		j = env.judgeIn(ctx, stage, upstream, blocked)
	}
	if errors.Is(context.Cause(ctx), journal.ErrKilled) && j.Score == nil {
		j.Error = journal.ErrKilled.Error() + ": " + j.Error
	}
	return j
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
	room, err := env.judgeRoom(stage, sessions, upstream, blocked)
	if err != nil {
		j.Error = err.Error()
		return j
	}
	var stdout, stderr strings.Builder
	room.Stdout, room.Stderr = &stdout, &stderr
	rctx, cancel := context.WithTimeout(ctx, env.o.Timeout)
	defer cancel()
	code, err := probe.RunRoom(rctx, room)
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
		j.Error = fmt.Sprintf("the judge's output is unreadable (exit %d): %v; %s", code, perr, clip(stderr.String(), 200))
	case r.IsError || code != 0:
		j.Error = fmt.Sprintf("the judge failed (exit %d): %s", code, clip(r.Error+" "+stderr.String(), 200))
	default:
		j.Score, j.Reason, err = parseScore(r.Text, env.o.Rubric)
		if err != nil {
			j.Error = err.Error()
		}
	}
	return j
}

// answerLine is the judge's answer: "score N: reason" (a bold or a colon after "score" is
// fine).
var answerLine = regexp.MustCompile(`(?i)\bscore\W{0,3}\s*(\d+)\b(?:\s*/\s*\d+)?[*_]*\s*[:.,;\-–—]?\s*(.*)`)

// parseScore reads the judge's last "score N: reason" and refuses a score off the scale.
func parseScore(text string, r Rubric) (*int, string, error) {
	m := answerLine.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return nil, "", fmt.Errorf("the judge gave no score (want a line \"score N: reason\"); it said: %s", clip(text, 200))
	}
	last := m[len(m)-1]
	n, err := strconv.Atoi(last[1])
	if err != nil || n < r.Lo || n > r.Hi {
		return nil, "", fmt.Errorf("the judge's score %s is off the rubric's scale %s", last[1], r.Scale())
	}
	return &n, strings.TrimSpace(last[2]), nil
}

// writeJudgeRecipe writes Out/recipe.json: the command line, the judge agent's version, the
// model script, and each page and the rubric by content.
func writeJudgeRecipe(ctx context.Context, o JudgeOptions, inst agent.Install, seed int64) error {
	rec := &Recipe{Tare: o.Version, Argv: o.Argv, Kind: o.Kind, Time: time.Now().UTC(), Jobs: o.Jobs, Runs: o.Times, Seed: seed,
		Agents: map[string]RecipeAgent{}, Inputs: map[string]string{}}
	words, _ := splitWords(o.Judge)
	rec.Agents[words[0]] = RecipeAgent{Version: inst.Version, Bin: inst.Bin, Snapshots: "none (a judge takes no capsules)"}
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
	return writeRecipe(o.Out, rec)
}
