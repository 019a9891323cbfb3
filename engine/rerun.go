package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"tare/agent"
	"tare/capsule"
	"tare/config"
	"tare/engine/journal"
	"tare/engine/room"
	"tare/engine/run"
	"tare/environ"
)

// RerunKinds are the commands whose runs tare rerun repeats: the first word of a recipe's argv.
var RerunKinds = []string{"calibrate", "record", "cliff", "swap", "judge", "judge-noise"}

// Drift is one way the world differs from a run's recipe: a repeat would not be the same run.
type Drift struct {
	// What names the part: "tare", an agent's name, "project", "model script".
	What string `json:"what"`
	// Then and Now say it as the recipe has it and as it is now.
	Then string `json:"then"`
	Now  string `json:"now"`
}

// String is the drift as one line.
func (d Drift) String() string { return fmt.Sprintf("%s: %s then, %s now", d.What, d.Then, d.Now) }

// RerunPlan is what tare rerun knows before it starts: the recipe, what drifted since, and
// what the run being repeated cost.
type RerunPlan struct {
	Recipe *run.Recipe
	Drift  []Drift
	// Cost is the repeated run's total (usage.json); CostKnown is false without one.
	Cost      journal.Usage
	CostKnown bool
	// CheckCost is what the run's checks spent (tare's judge), apart from Cost.
	CheckCost journal.Usage
	// Dir is where the recorded command line's relative paths resolve: its working folder.
	Dir string
}

// PlanRerun reads a run's recipe and compares it with the world now: tare's version, each
// agent CLI's version, the project's content (its capsule root), the model script's text.
// version is this tare's. The project is fingerprinted in a temp store, removed after.
func PlanRerun(ctx context.Context, dir string, cfg *config.Config, version string) (*RerunPlan, error) {
	rec, err := run.ReadRecipe(dir)
	if err != nil {
		return nil, err
	}
	if len(rec.Argv) == 0 || !isRerunKind(rec.Argv[0]) {
		cmd := "an unknown command"
		if len(rec.Argv) > 0 {
			cmd = "tare " + rec.Argv[0]
		}
		return nil, fmt.Errorf("%s: made by %s; tare rerun repeats %s runs; fix: run that command again", dir, cmd, strings.Join(RerunKinds, ", "))
	}
	p := &RerunPlan{Recipe: rec, Dir: argvDir(rec)}
	if rec.Tare != version {
		p.Drift = append(p.Drift, Drift{What: "tare", Then: rec.Tare, Now: version})
	}
	for _, name := range sortedKeys(rec.Agents) {
		then := rec.Agents[name].Version
		a, err := agent.ByName(name)
		if err != nil {
			p.Drift = append(p.Drift, Drift{What: name, Then: then, Now: "unknown to this tare"})
			continue
		}
		inst, err := room.FindAgent(a, cfg, rec.Project)
		switch {
		case err != nil:
			p.Drift = append(p.Drift, Drift{What: name, Then: then, Now: "not found (" + run.Clip(err.Error(), 120) + ")"})
		case inst.Version != then:
			p.Drift = append(p.Drift, Drift{What: name, Then: then, Now: inst.Version})
		}
	}
	if rec.Project != "" {
		root, err := fingerprint(ctx, rec.Project)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: the run's project %s cannot be read (%v); fix: restore the project folder", dir, rec.Project, err)
		case root != rec.Fingerprint:
			p.Drift = append(p.Drift, Drift{What: "project", Then: "content " + short(rec.Fingerprint), Now: "content " + short(root) + " (" + rec.Project + " changed)"})
		}
	}
	if e := rec.Env; e != nil {
		// The image a repeat would run in is the folder's now: one that digests otherwise is
		// another environment, named before anything starts.
		_, now, err := environ.CheckFolder(e.Dir)
		switch {
		case err != nil:
			p.Drift = append(p.Drift, Drift{What: "environment", Then: "digest " + e.Short(), Now: "unreadable (" + run.Clip(err.Error(), 120) + ")"})
		case now != e.Digest:
			p.Drift = append(p.Drift, Drift{What: "environment", Then: "digest " + e.Short(), Now: "digest " + now[:12] + " (" + e.Dir + " changed; the repeat builds that image)"})
		}
	}
	for _, key := range sortedKeys(rec.Inputs) {
		if now := inputDigest(ctx, key); now != rec.Inputs[key] {
			if len(now) == sha256.Size*2 {
				now = "content " + short(now)
			}
			p.Drift = append(p.Drift, Drift{What: key, Then: "content " + short(rec.Inputs[key]), Now: now})
		}
	}
	if rec.Script != "" {
		path := rec.Script
		if !filepath.IsAbs(path) {
			path = filepath.Join(p.Dir, path)
		}
		text, err := os.ReadFile(path)
		switch {
		case err != nil:
			p.Drift = append(p.Drift, Drift{What: "model script", Then: rec.Script, Now: "gone"})
		case string(text) != rec.ScriptText:
			p.Drift = append(p.Drift, Drift{What: "model script", Then: "the text in recipe.json", Now: rec.Script + " changed"})
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "usage.json")); err == nil {
		var u usageFile
		if json.Unmarshal(data, &u) == nil {
			p.Cost, p.CheckCost, p.CostKnown = u.Total, u.CheckTotal, true
		}
	} else if data, err := os.ReadFile(filepath.Join(dir, "judgements.json")); err == nil {
		var j JudgeReport
		if json.Unmarshal(data, &j) == nil {
			p.Cost, p.CostKnown = j.Usage, true
		}
	}
	return p, nil
}

// CostLine says what the run being repeated cost, and whether that was money.
func (p *RerunPlan) CostLine() string {
	if !p.CostKnown {
		return "the run being repeated has no usage.json: its cost is unknown"
	}
	line := strings.TrimSpace(usageLine("", p.Cost, p.Recipe.Script != ""))
	line = "the run being repeated: " + strings.TrimSpace(strings.TrimPrefix(line, "usage"))
	if !p.CheckCost.IsZero() {
		// The judge's --script, not the run's, says whether its tokens were paid for.
		jc, _, _ := parseJudgeCheck(p.Recipe.Check)
		check := strings.TrimSpace(usageLine("", p.CheckCost, jc != nil && jc.script != ""))
		line += "; its check (tare's judge): " + strings.TrimSpace(strings.TrimPrefix(check, "usage"))
	}
	return line
}

// Name is what the repeat's run directory is named after: the project, or the first page.
func (p *RerunPlan) Name() string {
	if p.Recipe.Project != "" {
		return p.Recipe.Project
	}
	for _, key := range sortedKeys(p.Recipe.Inputs) {
		if dir, ok := strings.CutPrefix(key, "page "); ok {
			return dir
		}
	}
	return "run"
}

// inputDigest is a judge run's input as it is now: "page DIR" by capsule root, "rubric FILE"
// by the sha256 of the rubric as tare reads it; what cannot be read says so.
func inputDigest(ctx context.Context, key string) string {
	if dir, ok := strings.CutPrefix(key, "page "); ok {
		root, err := fingerprint(ctx, dir)
		if err != nil {
			return "gone"
		}
		return root
	}
	if file, ok := strings.CutPrefix(key, "rubric "); ok {
		r, err := LoadRubric(file)
		if err != nil {
			return "unreadable"
		}
		return digest([]byte(r.Text))
	}
	return "unknown to this tare"
}

// digest is the sha256 of data, in hex.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Args is the recorded command line, its paths absolute (a recipe written before tare kept
// them absolute has them relative to Dir), writing its run to out instead of the recorded
// --out: a new folder named as the command names its runs when out is empty.
func (p *RerunPlan) Args(out string) []string {
	var argv []string
	recorded := AbsoluteArgv(p.Recipe.Argv, p.Dir)
	for i := 0; i < len(recorded); i++ {
		switch {
		case recorded[i] == "--out":
			i++ // the run's own folder: the repeat is a run of its own
		case strings.HasPrefix(recorded[i], "--out="):
		default:
			argv = append(argv, recorded[i])
		}
	}
	if out != "" {
		argv = append(argv, "--out", out)
	}
	return argv
}

// pathFlags are the flags of the commands tare rerun repeats whose value is a path.
var pathFlags = []string{"--project", "--env", "--script", "--prompt-file", "--run", "--rubric", "--out"}

// AbsoluteArgv is argv with the value of every path flag made absolute against dir, so that
// the command line means the same from any working folder: recipes keep it so.
func AbsoluteArgv(argv []string, dir string) []string {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	out := append([]string{}, argv...)
	for i := 0; i < len(out); i++ {
		for _, f := range pathFlags {
			if out[i] == f && i+1 < len(out) {
				out[i+1] = abs(out[i+1])
				i++
				break
			}
			if v, ok := strings.CutPrefix(out[i], f+"="); ok {
				out[i] = f + "=" + abs(v)
				break
			}
		}
	}
	return out
}

// argvDir is the working folder the recorded command line ran in, as far as the recipe tells:
// the project folder less the --project the command line gave (the project itself by
// default); the current folder when --project was absolute.
func argvDir(rec *run.Recipe) string {
	given := "."
	for i, a := range rec.Argv {
		if a == "--project" && i+1 < len(rec.Argv) {
			given = rec.Argv[i+1]
		} else if v, ok := strings.CutPrefix(a, "--project="); ok {
			given = v
		}
	}
	if rec.Project == "" || filepath.IsAbs(given) {
		wd, _ := os.Getwd()
		return wd
	}
	given = filepath.Clean(given)
	if given == "." {
		return rec.Project
	}
	if base, ok := strings.CutSuffix(rec.Project, string(filepath.Separator)+given); ok {
		return base
	}
	wd, _ := os.Getwd()
	return wd
}

// fingerprint is the capsule root of a folder, taken in a temp store that is removed after.
func fingerprint(ctx context.Context, dir string) (string, error) {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", fmt.Errorf("no such folder")
	}
	tmp, err := os.MkdirTemp("", "tare-fingerprint-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	store, err := capsule.Open(tmp)
	if err != nil {
		return "", err
	}
	c, err := store.Snap(ctx, dir, "start")
	if err != nil {
		return "", err
	}
	return c.Root, nil
}

func isRerunKind(cmd string) bool { return slices.Contains(RerunKinds, cmd) }

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
