// Package workshop runs prose experiments: the same frozen material given to several writers
// (an agent and a model each, in a tare room proven clean), their drafts collected and
// checked, then shuffled under letters for a blind reading whose key is never shown.
//
// An experiment is a folder: plan.json (the frozen plan, with the hash of every input) and its
// digest, source/ (the material), writers/ID/{input,drafts,START.md} (one workspace per
// writer; input and START.md are read-only in its room), records/ID/state.json and the
// attempt's events, stderr, argv and usage, and evaluation/ (the sealed drafts and the key).
// Every rule here is the behaviour of quirework's workshop, whose reasons the comments keep.
package workshop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"tare/agent"
	"tare/engine"
)

// Schema is the version of an experiment's layout.
const Schema = 1

// Tiers are a writer's spend tiers, cheapest first: run spends them in this order, so a
// provider's wall lands on the cheap seats before the expensive ones.
var Tiers = []string{"economy", "standard", "premium"}

// Capabilities a writer may be given beyond writing files.
var Capabilities = []string{"image-generation"}

// DefaultMinBytes is an output's smallest accepted size when the plan names none.
const DefaultMinBytes = 100

// injected are names an agent reads as instructions of its own: a frozen packet carrying one
// would instruct the writer behind the assignment's back (compared case-insensitively).
var injected = []string{"agents.md", "agents.override.md", "claude.md", "claude.local.md", "codex.md", "gemini.md",
	".claude", ".codex", ".pi", ".gemini", ".agents", ".agy", ".cursorrules", ".github"}

// Plan is a workshop plan as the operator writes it (TOML or JSON).
type Plan struct {
	Title          string   `json:"title,omitempty"`
	Assignment     string   `json:"assignment"`
	Brief          string   `json:"brief"`
	SourceRoot     string   `json:"source_root,omitempty"`
	SourceRevision string   `json:"source_revision,omitempty"`
	Files          []File   `json:"files,omitempty"`
	RequiredReads  []string `json:"required_reads,omitempty"`
	ReadingOrder   string   `json:"reading_order,omitempty"`
	Outputs        []Output `json:"outputs"`
	Writers        []Writer `json:"writers"`
	Persona        string   `json:"persona,omitempty"`
	Capabilities   []string `json:"capabilities,omitempty"`
}

// File is one frozen input: Path inside input/, from Source (below source_root, at
// source_revision when set) or LocalSource (relative to the plan's folder).
type File struct {
	Path        string `json:"path"`
	Source      string `json:"source,omitempty"`
	LocalSource string `json:"local_source,omitempty"`
}

// Output is a file every writer must deliver, below drafts/, of at least MinBytes.
type Output struct {
	Path     string `json:"path"`
	MinBytes int    `json:"min_bytes"`
}

// UnmarshalJSON accepts an output as a bare path too.
func (o *Output) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		*o = Output{Path: s}
		return nil
	}
	type plain Output
	var p plain
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*o = Output(p)
	return nil
}

// Writer is one seat: an agent, a model and how it is run.
type Writer struct {
	ID    string `json:"id,omitempty"`
	Agent string `json:"agent"`
	// Harness is quirework's name for Agent, accepted as an alias.
	Harness         string   `json:"harness,omitempty"`
	Model           string   `json:"model,omitempty"`
	RequestedModel  string   `json:"requested_model,omitempty"`
	Effort          string   `json:"effort,omitempty"`
	RequestedEffort string   `json:"requested_effort,omitempty"`
	Mode            string   `json:"mode,omitempty"`
	Tier            string   `json:"tier,omitempty"`
	Persona         string   `json:"persona,omitempty"`
	Capabilities    []string `json:"capabilities,omitempty"`
	Args            []string `json:"args,omitempty"`
	RetryOf         string   `json:"retry_of,omitempty"`
}

// ReadPlan reads a plan file: TOML, or JSON when it ends in .json. Unknown keys are refused
// by name, so a misspelt key is not silently a missing one.
func ReadPlan(file string) (*Plan, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %v; fix: give the path of a workshop plan (TOML or JSON)", file, err)
	}
	if !strings.EqualFold(filepath.Ext(file), ".json") {
		var m map[string]any
		if _, err := toml.Decode(string(data), &m); err != nil {
			return nil, fmt.Errorf("plan %s: %v; fix: correct the TOML", file, err)
		}
		if data, err = json.Marshal(m); err != nil {
			return nil, fmt.Errorf("plan %s: %v", file, err)
		}
	}
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("plan %s: %v; fix: use the keys of a workshop plan (see demo/workshop/plan.toml)", file, err)
	}
	return &p, nil
}

var idRe = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// checkID refuses an experiment or writer name that is not a plain folder name.
func checkID(what, v string) error {
	if !idRe.MatchString(v) {
		return fmt.Errorf("%s %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", what, v)
	}
	return nil
}

// safeRel refuses an absolute path, traversal or an empty path: every path of a plan lands
// below a folder the experiment owns.
func safeRel(field, v string) (string, error) {
	if v == "" || strings.HasPrefix(v, "/") || strings.Contains(v, "\\") {
		return "", fmt.Errorf("%s %q: expected a relative path without traversal", field, v)
	}
	for _, part := range strings.Split(v, "/") {
		if part == ".." || part == "." || part == "" {
			return "", fmt.Errorf("%s %q: expected a relative path without traversal", field, v)
		}
	}
	return path.Clean(v), nil
}

// writerDirName is a readable writer id from agent and model, the agent named once.
func writerDirName(agentName, model string) string {
	m := strings.ToLower(model)
	stem := m
	if !strings.HasPrefix(m, agentName+"-") {
		stem = agentName + "-" + m
	}
	stem = regexp.MustCompile(`[^a-z0-9._-]+`).ReplaceAllString(stem, "-")
	return strings.Trim(stem, "-._")
}

// normalize fills a writer's defaults and refuses what no run could honour.
func normalize(p *Plan, w Writer, i int) (Writer, error) {
	field := func(k string) string { return fmt.Sprintf("writers[%d].%s", i, k) }
	if w.Agent == "" {
		w.Agent = w.Harness
	} else if w.Harness != "" && w.Harness != w.Agent {
		return w, fmt.Errorf("%s %q and harness %q differ; fix: name the agent once", field("agent"), w.Agent, w.Harness)
	}
	w.Harness = ""
	if _, err := agent.ByName(w.Agent); err != nil {
		return w, fmt.Errorf("%s %q: %v", field("agent"), w.Agent, err)
	}
	if w.ID != "" {
		if err := checkID(field("id"), w.ID); err != nil {
			return w, err
		}
	}
	if w.Mode == "" {
		w.Mode = "auto"
	}
	if w.Mode != "auto" && w.Mode != "manual" {
		return w, fmt.Errorf("%s %q: use auto or manual", field("mode"), w.Mode)
	}
	// Either name alone is enough: requiring both made the common plan die on a field the
	// help never called required.
	if w.Model == "" && w.RequestedModel == "" {
		return w, fmt.Errorf("%s: a writer needs model (or requested_model)", field("model"))
	}
	if w.RequestedModel == "" {
		w.RequestedModel = w.Model
	}
	if w.Model == "" {
		w.Model = w.RequestedModel
	}
	if w.RequestedEffort == "" {
		w.RequestedEffort = w.Effort
	}
	if err := checkEffort(field("effort"), w.Agent, w.Effort); err != nil {
		return w, err
	}
	if w.Tier == "" {
		w.Tier = "standard"
	}
	if tierRank(w.Tier) < 0 {
		return w, fmt.Errorf("%s %q: use one of %s", field("tier"), w.Tier, strings.Join(Tiers, ", "))
	}
	if w.Persona == "" {
		w.Persona = p.Persona
	}
	if w.Capabilities == nil {
		w.Capabilities = append([]string{}, p.Capabilities...)
	}
	for _, c := range w.Capabilities {
		if !slices.Contains(Capabilities, c) {
			return w, fmt.Errorf("%s %q: unsupported; use one of %s", field("capabilities"), c, strings.Join(Capabilities, ", "))
		}
		if c == "image-generation" && w.Agent != "agy" {
			return w, fmt.Errorf("%s: native image generation needs the agy agent, not %s", field("capabilities"), w.Agent)
		}
	}
	return w, nil
}

func tierRank(t string) int {
	for i, v := range Tiers {
		if v == t {
			return i
		}
	}
	return -1
}

// isInjected says whether a path names an agent's instruction file or folder anywhere in it.
func isInjected(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if slices.Contains(injected, strings.ToLower(part)) {
			return true
		}
	}
	return false
}

// resolved is a plan checked in full, with every input's bytes in hand: nothing of it is
// written until all of it has passed.
type resolved struct {
	plan     *Plan
	root     string // source_root, absolute
	revision string // the full commit, when source_revision is set
	head     string
	files    map[string][]byte
	order    []string
	writers  []Writer
	outputs  []Output
}

// validate checks everything about a plan before anything is created: a failed setup never
// masquerades as a launchable partial experiment.
func validate(planFile string, p *Plan) (*resolved, error) {
	where := func(err error) error { return fmt.Errorf("plan %s: %v", planFile, err) }
	if strings.TrimSpace(p.Assignment) == "" || strings.TrimSpace(p.Brief) == "" {
		return nil, where(fmt.Errorf("assignment and brief must both contain text; fix: write both"))
	}
	r := &resolved{plan: p, files: map[string][]byte{}}
	planDir := filepath.Dir(planFile)
	r.root = p.SourceRoot
	if r.root == "" {
		r.root = planDir
	} else if !filepath.IsAbs(r.root) {
		r.root = filepath.Join(planDir, r.root)
	}
	var err error
	if r.root, err = filepath.Abs(r.root); err != nil {
		return nil, where(err)
	}
	if p.SourceRevision != "" {
		out, err := git(r.root, "rev-parse", "--verify", p.SourceRevision+"^{commit}")
		if err != nil {
			return nil, where(fmt.Errorf("source_revision %q: not a commit of %s (%v)", p.SourceRevision, r.root, err))
		}
		r.revision = strings.TrimSpace(string(out))
	}
	if out, err := git(r.root, "rev-parse", "HEAD"); err == nil {
		r.head = strings.TrimSpace(string(out))
	}
	seen := map[string]bool{}
	for i, o := range p.Outputs {
		rel, err := safeRel(fmt.Sprintf("outputs[%d].path", i), o.Path)
		if err != nil {
			return nil, where(err)
		}
		if !strings.HasPrefix(rel, "drafts/") {
			return nil, where(fmt.Errorf("outputs[%d].path %q: outputs must be files below drafts/", i, o.Path))
		}
		if o.MinBytes == 0 {
			o.MinBytes = DefaultMinBytes
		}
		if o.MinBytes < 1 {
			return nil, where(fmt.Errorf("outputs[%d].min_bytes %d: use a positive number of bytes", i, o.MinBytes))
		}
		if seen[rel] {
			return nil, where(fmt.Errorf("outputs[%d].path %q: declared twice", i, o.Path))
		}
		seen[rel] = true
		o.Path = rel
		r.outputs = append(r.outputs, o)
	}
	if len(r.outputs) == 0 {
		return nil, where(fmt.Errorf("outputs: declare at least one file below drafts/, e.g. {path = \"drafts/chapter.md\"}"))
	}
	if len(p.Writers) == 0 {
		return nil, where(fmt.Errorf("writers: declare at least one writer (agent and model)"))
	}
	explicit := map[string]bool{}
	for i, w := range p.Writers {
		n, err := normalize(p, w, i)
		if err != nil {
			return nil, where(err)
		}
		if n.ID != "" {
			if explicit[n.ID] {
				return nil, where(fmt.Errorf("writers[%d].id %q: declared twice; fix: declare unique writers", i, n.ID))
			}
			explicit[n.ID] = true
		}
		r.writers = append(r.writers, n)
	}
	reserved := map[string]bool{}
	for k := range explicit {
		reserved[k] = true
	}
	for i := range r.writers {
		if r.writers[i].ID != "" {
			continue
		}
		stem := writerDirName(r.writers[i].Agent, r.writers[i].Model)
		if err := checkID(fmt.Sprintf("writers[%d] (id from agent and model)", i), stem); err != nil {
			return nil, where(err)
		}
		name := stem
		for n := 2; reserved[name]; n++ {
			name = fmt.Sprintf("%s-%02d", stem, n)
		}
		r.writers[i].ID, reserved[name] = name, true
	}
	r.files["assignment.md"] = []byte(p.Assignment)
	r.files["orientation.md"] = []byte(p.Brief)
	r.order = []string{"assignment.md", "orientation.md"}
	for i, f := range p.Files {
		rel, err := safeRel(fmt.Sprintf("files[%d].path", i), f.Path)
		if err != nil {
			return nil, where(err)
		}
		if _, dup := r.files[rel]; dup || isInjected(rel) {
			return nil, where(fmt.Errorf("files[%d].path %q: duplicate or injected instruction path; fix: give it another name", i, f.Path))
		}
		var data []byte
		switch {
		case f.LocalSource != "" && f.Source != "":
			return nil, where(fmt.Errorf("files[%d]: give source or local_source, not both", i))
		case f.LocalSource != "":
			src, err := safeRel(fmt.Sprintf("files[%d].local_source", i), f.LocalSource)
			if err != nil {
				return nil, where(err)
			}
			if data, err = readRegular(planDir, src); err != nil {
				return nil, where(fmt.Errorf("files[%d].local_source: %v", i, err))
			}
		case f.Source != "":
			src, err := safeRel(fmt.Sprintf("files[%d].source", i), f.Source)
			if err != nil {
				return nil, where(err)
			}
			if r.revision != "" {
				if data, err = gitBlob(r.root, r.revision, src); err != nil {
					return nil, where(fmt.Errorf("files[%d].source: %v", i, err))
				}
			} else if data, err = readRegular(r.root, src); err != nil {
				return nil, where(fmt.Errorf("files[%d].source: %v", i, err))
			}
		default:
			return nil, where(fmt.Errorf("files[%d]: give source (below source_root) or local_source (beside the plan)", i))
		}
		r.files[rel] = data
		r.order = append(r.order, rel)
	}
	if p.ReadingOrder != "" {
		rel, err := safeRel("reading_order", p.ReadingOrder)
		if err != nil {
			return nil, where(err)
		}
		if _, ok := r.files[rel]; !ok {
			return nil, where(fmt.Errorf("reading_order %q: not one of the files; fix: list it under files", p.ReadingOrder))
		}
	}
	for i, rr := range p.RequiredReads {
		rel, err := safeRel(fmt.Sprintf("required_reads[%d]", i), rr)
		if err != nil {
			return nil, where(err)
		}
		if _, ok := r.files[rel]; !ok {
			return nil, where(fmt.Errorf("required_reads[%d] %q: required reading is absent from files", i, rr))
		}
	}
	// A file and a folder of the same name cannot both be frozen.
	names := make([]string, 0, len(r.files))
	for k := range r.files {
		names = append(names, k)
	}
	sort.Strings(names)
	for i := 1; i < len(names); i++ {
		if strings.HasPrefix(names[i], names[i-1]+"/") {
			return nil, where(fmt.Errorf("files: %q is both a file and a folder", names[i-1]))
		}
	}
	return r, nil
}

// readRegular reads the regular file rel below root, refusing a symlink anywhere on the way
// or a special file: frozen material is bytes the experiment owns.
func readRegular(root, rel string) ([]byte, error) {
	cur := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", cur, err)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			return nil, fmt.Errorf("%s: a symlink; frozen material must be regular files", cur)
		case i < len(parts)-1 && !fi.IsDir():
			return nil, fmt.Errorf("%s: not a folder", cur)
		case i == len(parts)-1 && !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%s: not a regular file (%s); frozen material must be regular files", cur, fi.Mode().Type())
		}
	}
	return os.ReadFile(cur)
}

func git(dir string, args ...string) ([]byte, error) {
	bin, err := engine.HostProgram(nil, "git", dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// gitBlob is a regular file's bytes at a commit; a symlink or submodule is refused.
func gitBlob(root, rev, rel string) ([]byte, error) {
	out, err := git(root, "ls-tree", rev, "--", rel)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 || (fields[0] != "100644" && fields[0] != "100755") || fields[1] != "blob" {
		return nil, fmt.Errorf("%s at %.12s: not a regular Git blob (a symlink, folder or missing)", rel, rev)
	}
	return git(root, "cat-file", "blob", fields[2])
}
