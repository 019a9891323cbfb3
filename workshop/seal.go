package workshop

import (
	"fmt"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"tare/capsule"
	"tare/engine"
	"tare/engine/journal"
)

// KeyFile is the sealed identity key, below the experiment.
const KeyFile = "evaluation/identity-key.json"

// Sealed is what anonymize says: how many drafts and under which letters, never the key.
type Sealed struct {
	Drafts  int      `json:"drafts"`
	Letters []string `json:"letters"`
	Anon    string   `json:"anon"`
	Key     string   `json:"key"`
	Warning string   `json:"warning"`
}

// Anonymize shuffles the collected drafts into evaluation/anon/ under letters and writes the
// key to evaluation/identity-key.json. The key is never returned, printed or logged: an
// editor who reads the mapping before the drafts has spent the step and kept none of it, and
// a reshuffle cannot undo that, because draft sizes are near-unique per writer.
//
// output defaults to the plan's first declared output. Only writers whose turn completed are
// candidates (a failed partial looks chapter-complete and is not), unless includePartial.
// Candidates come from the records on disk, not the frozen plan, so a retried seat is sealed
// by its retry and not silently dropped.
func Anonymize(e *Exp, output string, includePartial bool, seed int64) (*Sealed, error) {
	if output == "" {
		output = path.Base(e.Plan.Outputs[0].Path)
	}
	if strings.Contains(output, "/") || output == ".." || output == "." {
		return nil, fmt.Errorf("--output %q: give a file name below drafts/, e.g. %s", output, path.Base(e.Plan.Outputs[0].Path))
	}
	var present []string
	for _, id := range e.WriterIDs() {
		s, err := e.State(id)
		if err != nil {
			return nil, err
		}
		if s.alive() {
			return nil, fmt.Errorf("writer %s still runs; seal once every writer has ended", id)
		}
		if !includePartial && s.Status != "completed" {
			continue
		}
		// Sealed from the archive collect checked, which is what the reading is held to.
		src := filepath.Join(e.Record(id), "artifacts")
		if includePartial && s.Status != "completed" {
			src = filepath.Join(e.Work(id), "drafts")
		}
		fi, err := os.Lstat(filepath.Join(src, output))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			present = append(present, id)
		}
	}
	if len(present) == 0 {
		return nil, fmt.Errorf("EXP %s: no completed writer produced drafts/%s; collect the writers first (or --include-partial)", e.Root, output)
	}
	if len(present) > 26 {
		return nil, fmt.Errorf("EXP %s: %d drafts; anonymize seals at most 26", e.Root, len(present))
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	shuffled := append([]string{}, present...)
	rand.New(rand.NewSource(seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	eval := filepath.Join(e.Root, "evaluation")
	tmp, err := os.MkdirTemp(eval, ".anon-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	key := map[string]string{}
	var letters []string
	for i, id := range shuffled {
		letter := string(rune('A' + i))
		src := filepath.Join(e.Record(id), "artifacts")
		if s, _ := e.State(id); s != nil && s.Status != "completed" {
			src = filepath.Join(e.Work(id), "drafts")
		}
		data, err := capsule.ReadFileBeneath(src, output, 1<<30)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, letter+path.Ext(output)), data, 0o644); err != nil {
			return nil, err
		}
		key[letter] = id
		letters = append(letters, letter)
	}
	anon := filepath.Join(eval, "anon")
	if err := os.RemoveAll(anon); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, anon); err != nil {
		return nil, err
	}
	_ = os.Chmod(anon, 0o755)
	if err := writeJSON(filepath.Join(e.Root, KeyFile), key); err != nil {
		return nil, err
	}
	_ = os.Chmod(filepath.Join(e.Root, KeyFile), 0o600)
	return &Sealed{Drafts: len(key), Letters: letters, Anon: anon, Key: filepath.Join(e.Root, KeyFile),
		Warning: "read the drafts before opening the key; it is not printed"}, nil
}

// IsSealed says whether anonymize has run.
func (e *Exp) IsSealed() bool {
	_, err := os.Stat(filepath.Join(e.Root, KeyFile))
	return err == nil
}

// Row is one writer of the report.
type Row struct {
	Writer          string `json:"writer"`
	Agent           string `json:"agent"`
	Model           string `json:"model"`
	SelectedModel   string `json:"selected_model"`
	Effort          string `json:"effort,omitempty"`
	RequestedEffort string `json:"requested_effort,omitempty"`
	Tier            string `json:"tier"`
	Status          string `json:"status"`
	// EffortServed is the effort the writer's own session says was used (a CLI may not be
	// given the effort asked, or may not honour it); "unknown" where it does not say.
	EffortServed   string   `json:"effort_served"`
	EffortEvidence string   `json:"effort_evidence"`
	Seconds        *float64 `json:"seconds"`
	// PeakRequest is the largest single request's prompt (input and cache) the stream shows;
	// nil, not 0, where the agent's stream does not show requests one by one.
	PeakRequest    *int64 `json:"peak_request"`
	PeakEvidence   string `json:"peak_request_evidence"`
	Window         *int64 `json:"context_window"`
	WindowEvidence string `json:"context_window_evidence"`
	Requests       int    `json:"requests,omitempty"`
	Input          int64  `json:"input"`
	CachedInput    int64  `json:"cached_input"`
	Output         int64  `json:"output"`
	// Reasoning tokens where the agent reports them (inside Output); nil, never 0, where it
	// does not, with the reason in ReasoningEvidence.
	Reasoning         *int64         `json:"reasoning"`
	ReasoningEvidence string         `json:"reasoning_evidence"`
	CostUSD           *float64       `json:"cost_usd"`
	CostEvidence      string         `json:"cost_evidence"`
	Attempts          int            `json:"attempts"`
	OutputBytes       map[string]any `json:"output_bytes"`
	Error             string         `json:"error,omitempty"`
}

// Report is each writer's transport and spend beside what it returned.
type Report struct {
	Experiment string `json:"experiment"`
	SizesShown bool   `json:"sizes_shown"`
	Writers    []Row  `json:"writers"`
}

// MakeReport reads every writer's record. Byte counts are near-unique per writer, so printing
// them before the drafts are sealed hands the editor the key by arithmetic: they are withheld
// until anonymize has run, unless sizes says otherwise (nil: sealed or not).
func MakeReport(e *Exp, sizes *bool) (*Report, error) {
	show := e.IsSealed()
	if sizes != nil {
		show = *sizes
	}
	r := &Report{Experiment: e.Root, SizesShown: show}
	for _, id := range e.WriterIDs() {
		s, err := e.State(id)
		if err != nil {
			return nil, err
		}
		row := Row{Writer: id, Agent: s.Config.Agent, Model: s.Config.Model, SelectedModel: s.Config.Model, Effort: s.Config.Effort,
			RequestedEffort: s.Config.RequestedEffort, Tier: s.Config.Tier, Status: s.Status, Error: s.Error,
			Attempts: len(s.Attempts) + 1, CostEvidence: "not run"}
		if s.Status == "prepared" {
			row.Attempts = len(s.Attempts)
		}
		// Time and spend add up over every attempt: a resumed writer cost both.
		var secs float64
		var have bool
		var cost float64
		var priced, unpriced bool
		add := func(dir string) {
			var end engine.WriterEnd
			if readJSON(filepath.Join(dir, "receipt.json"), &end) != nil {
				return
			}
			row.Input += end.Usage.Input
			row.CachedInput += end.Usage.CacheRead + end.Usage.CacheWrite
			row.Output += end.Usage.Output
			row.Requests += end.Requests
			if end.Peak > 0 && (row.PeakRequest == nil || end.Peak > *row.PeakRequest) {
				p := end.Peak
				row.PeakRequest, row.PeakEvidence = &p, "the stream's requests, input and cache tokens of the largest"
			}
			if end.Usage.Model != "" {
				row.Model = end.Usage.Model
			}
			if len(end.Usage.Unpriced) > 0 || (end.Usage.Cost == 0 && end.Usage.Input+end.Usage.Output > 0) {
				unpriced = true
			} else if end.Usage.Cost > 0 {
				cost += end.Usage.Cost
				priced = true
			}
		}
		row.PeakEvidence = "unknown: the stream shows no request's size"
		var dirs []string
		for _, a := range s.Attempts {
			add(a.Record)
			dirs = append(dirs, a.Record)
		}
		add(e.Record(id))
		dirs = append(dirs, e.Record(id))
		sv := servedOf(s.Config.Agent, dirs)
		row.Window, row.WindowEvidence = sv.Window, sv.WindowEvidence
		row.Reasoning, row.ReasoningEvidence = sv.Reasoning, sv.ReasoningEvidence
		row.EffortServed, row.EffortEvidence = firstOf(sv.Effort, Unknown), sv.EffortEvidence
		if s.StartedAt == nil {
			row.PeakEvidence, row.WindowEvidence, row.ReasoningEvidence, row.EffortEvidence = "not run", "not run", "not run", "not run"
		}
		for _, a := range s.Attempts {
			var old State
			if readJSON(filepath.Join(a.Record, "state.json"), &old) == nil && old.StartedAt != nil && old.EndedAt != nil {
				secs += old.EndedAt.Sub(*old.StartedAt).Seconds()
				have = true
			}
		}
		if s.StartedAt != nil && s.EndedAt != nil {
			secs += s.EndedAt.Sub(*s.StartedAt).Seconds()
			have = true
		}
		if have {
			v := float64(int(secs*10+0.5)) / 10
			row.Seconds = &v
		}
		switch {
		case unpriced:
			row.CostEvidence = "unpriced: a model is missing from tare's price table (tare prices)"
		case priced:
			c := float64(int(cost*10000+0.5)) / 10000
			row.CostUSD, row.CostEvidence = &c, "tare's price table (tare prices), list rates, from the stream's tokens"
		case s.StartedAt != nil:
			row.CostEvidence = "no tokens reported"
		}
		if show {
			row.OutputBytes = outputBytes(e, id)
		} else {
			row.OutputBytes = map[string]any{"withheld": "run anonymize first, or pass --sizes"}
		}
		r.Writers = append(r.Writers, row)
	}
	return r, nil
}

func outputBytes(e *Exp, id string) map[string]any {
	art := filepath.Join(e.Record(id), "artifacts")
	produced := map[string]int64{}
	_ = filepath.Walk(art, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(art, p)
			produced[filepath.ToSlash(rel)] = fi.Size()
		}
		return nil
	})
	var declared, all int64
	isDeclared := map[string]bool{}
	for _, o := range e.Plan.Outputs {
		rel := strings.TrimPrefix(o.Path, "drafts/")
		isDeclared[rel] = true
		declared += produced[rel]
	}
	var extra []string
	for k, v := range produced {
		all += v
		if !isDeclared[k] {
			extra = append(extra, k)
		}
	}
	return map[string]any{"declared": declared, "all_files": all, "extra_files": extra}
}

// Table is the report as a markdown table for the editor's write-up; JSON stays the record.
func (r *Report) Table() string {
	var b strings.Builder
	b.WriteString("| Writer | Agent | Model | Effort served (asked) | Tier | Status | Seconds | Peak request | Window | In | Cached in | Out | Reasoning | USD | Draft bytes |\n")
	b.WriteString("|" + strings.Repeat("---|", 15) + "\n")
	cell := func(v any) string {
		switch x := v.(type) {
		case nil:
			return "-"
		case *float64:
			if x == nil {
				return "-"
			}
			return fmt.Sprintf("%g", *x)
		case *int64:
			if x == nil {
				// Not reported by the agent (or not run): never 0, which would read as a count.
				return Unknown
			}
			return fmt.Sprint(*x)
		case int64:
			if x == 0 {
				return "-"
			}
			return fmt.Sprint(x)
		case string:
			if x == "" {
				return "-"
			}
			return journal.Printable(x)
		}
		return fmt.Sprint(v)
	}
	for _, w := range r.Writers {
		effort := w.EffortServed
		if asked := firstOf(w.Effort, w.RequestedEffort); asked != "" {
			effort += " (asked " + asked + ")"
		}
		if w.Status == "prepared" {
			effort = firstOf(w.Effort, "-")
		}
		measured := func(v *int64) string {
			if v == nil && w.Status == "prepared" {
				return "-"
			}
			return cell(v)
		}
		size := "withheld"
		if d, ok := w.OutputBytes["declared"]; ok {
			size = fmt.Sprint(d)
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join([]string{w.Writer, w.Agent, cell(w.Model), cell(effort), w.Tier, w.Status,
			cell(w.Seconds), measured(w.PeakRequest), measured(w.Window), cell(w.Input), cell(w.CachedInput), cell(w.Output), measured(w.Reasoning),
			cell(w.CostUSD), size}, " | "))
	}
	return b.String()
}
