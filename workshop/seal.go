package workshop

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
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

// RevealFile records that the sealed drafts' reading is done (or that the operator unsealed
// on purpose): until it exists, nothing tare shows pairs a letter with a writer.
const RevealFile = "evaluation/reveal.json"

// maxReading bounds a reading kept in RevealFile: notes on the drafts, not the drafts.
const maxReading = 1 << 20

// Sealed is what anonymize says: how many drafts and under which letters, never the key.
type Sealed struct {
	Drafts  int      `json:"drafts"`
	Letters []string `json:"letters"`
	Anon    string   `json:"anon"`
	Key     string   `json:"key"`
	Warning string   `json:"warning"`
	// OldKey is where a reseal kept the key it replaced (identity-key.N.json), and OldReveal
	// the reveal record of that seal, if its reading was recorded.
	OldKey    string `json:"old_key,omitempty"`
	OldReveal string `json:"old_reveal,omitempty"`
}

// SealOptions are anonymize's choices.
type SealOptions struct {
	// Output is the draft file to seal (default: the plan's first declared output).
	Output string
	// IncludePartial seals writers whose turn did not complete too.
	IncludePartial bool
	// Reseal seals an experiment sealed already, keeping the old key as identity-key.N.json:
	// a reader who has read the drafts under the old letters is not blinded again by it.
	Reseal bool
}

// Anonymize shuffles the collected drafts into evaluation/anon/ under letters and writes the
// key to evaluation/identity-key.json. The key is never returned, printed or logged: an
// editor who reads the mapping before the drafts has spent the step and kept none of it, and
// a reshuffle cannot undo that, because draft sizes are near-unique per writer. The shuffle
// draws from crypto/rand: a clock-seeded one could be recomputed from the folder's time.
//
// output defaults to the plan's first declared output. Only writers whose turn completed are
// candidates (a failed partial looks chapter-complete and is not), unless includePartial.
// Candidates come from the records on disk, not the frozen plan, so a retried seat is sealed
// by its retry and not silently dropped. A sealed experiment is sealed again only with
// Reseal, the old key (and its reveal record) kept under the next free number.
func Anonymize(e *Exp, o SealOptions) (*Sealed, error) {
	output := o.Output
	if output == "" {
		output = path.Base(e.Plan.Outputs[0].Path)
	}
	if strings.Contains(output, "/") || output == ".." || output == "." {
		return nil, fmt.Errorf("--output %q: give a file name below drafts/, e.g. %s", output, path.Base(e.Plan.Outputs[0].Path))
	}
	if e.IsSealed() && !o.Reseal {
		return nil, fmt.Errorf("EXP %s is sealed already (%s); a reshuffle does not unsee drafts read under the old letters. "+
			"fix: --reseal seals it again, keeping the old key as identity-key.N.json", e.Root, KeyFile)
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
		if !o.IncludePartial && s.Status != StatusCompleted {
			continue
		}
		// Sealed from the archive collect checked, which is what the reading is held to.
		src := filepath.Join(e.Record(id), "artifacts")
		if o.IncludePartial && s.Status != StatusCompleted {
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
	shuffled, err := shuffle(present)
	if err != nil {
		return nil, err
	}
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
		if s, _ := e.State(id); s != nil && s.Status != StatusCompleted {
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
	sealed := &Sealed{Drafts: len(key), Letters: letters, Key: filepath.Join(e.Root, KeyFile),
		Warning: "read the drafts before opening the key; it is not printed"}
	if e.IsSealed() {
		if sealed.OldKey, sealed.OldReveal, err = e.keepOldSeal(); err != nil {
			return nil, err
		}
		sealed.Warning += fmt.Sprintf("; resealed: the old key is kept as %s, and drafts read under the old letters are not blind any more", filepath.Base(sealed.OldKey))
	}
	anon := filepath.Join(eval, "anon")
	if err := os.RemoveAll(anon); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, anon); err != nil {
		return nil, err
	}
	_ = os.Chmod(anon, 0o755)
	data, err := json.MarshalIndent(key, "", "  ")
	if err != nil {
		return nil, err
	}
	// Only the operator reads the key, from its first byte on disk.
	if err := capsule.WriteFileAtomic(filepath.Join(e.Root, KeyFile), append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	sealed.Anon = anon
	return sealed, nil
}

// shuffle is ids in an order drawn from crypto/rand (Fisher-Yates).
func shuffle(ids []string) ([]string, error) {
	out := append([]string{}, ids...)
	for i := len(out) - 1; i > 0; i-- {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(i+1)))
		if err != nil {
			return nil, fmt.Errorf("anonymize: drawing the shuffle: %v", err)
		}
		out[i], out[j.Int64()] = out[j.Int64()], out[i]
	}
	return out, nil
}

// keepOldSeal moves the sealed key, and its reveal record if any, to the first number free
// for both (identity-key.1.json, reveal.1.json...), before a reseal writes the new ones.
func (e *Exp) keepOldSeal() (key, reveal string, err error) {
	eval := filepath.Join(e.Root, "evaluation")
	for n := 1; ; n++ {
		key = filepath.Join(eval, fmt.Sprintf("identity-key.%d.json", n))
		reveal = filepath.Join(eval, fmt.Sprintf("reveal.%d.json", n))
		if _, err := os.Lstat(key); err == nil {
			continue
		}
		if _, err := os.Lstat(reveal); err == nil {
			continue
		}
		break
	}
	if _, err := os.Lstat(filepath.Join(e.Root, RevealFile)); err == nil {
		if err := os.Rename(filepath.Join(e.Root, RevealFile), reveal); err != nil {
			return "", "", fmt.Errorf("resealing: keeping the old reveal record: %v", err)
		}
	} else {
		reveal = ""
	}
	if err := os.Rename(filepath.Join(e.Root, KeyFile), key); err != nil {
		return "", "", fmt.Errorf("resealing: keeping the old key: %v", err)
	}
	return key, reveal, nil
}

// IsSealed says whether anonymize has run.
func (e *Exp) IsSealed() bool {
	_, err := os.Stat(filepath.Join(e.Root, KeyFile))
	return err == nil
}

// Reveal is the record that the seal was opened: when, and the reading recorded before it
// (or that the operator unsealed without one, on purpose).
type Reveal struct {
	At time.Time `json:"at"`
	// Reading is the reader's notes on the drafts by letter, as given (at most 1 MB), and
	// ReadingFile where they came from; both empty when WithoutReading.
	Reading        string `json:"reading,omitempty"`
	ReadingFile    string `json:"reading_file,omitempty"`
	WithoutReading bool   `json:"without_reading,omitempty"`
}

// Revealed is the seal's reveal record, nil while the reading is pending (or nothing is
// sealed).
func (e *Exp) Revealed() (*Reveal, error) {
	var r Reveal
	err := readJSON(filepath.Join(e.Root, RevealFile), &r)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v; fix: remove it and reveal again", filepath.Join(e.Root, RevealFile), err)
	}
	return &r, nil
}

// ReadingPending says whether the drafts are sealed and their reading not recorded: then
// draft sizes, time, tokens and cost stay withheld, since each pairs letters with writers.
func (e *Exp) ReadingPending() bool {
	r, err := e.Revealed()
	return e.IsSealed() && (r == nil || err != nil)
}

// Unsealed is what reveal says: the key, now that the reading is on record.
type Unsealed struct {
	Reveal
	Key map[string]string `json:"key"`
}

// Unseal records the reading (the file reading, the reader's notes on the drafts by letter)
// or, with withoutReading, that the operator opens the seal without one, and returns the key.
// From then on the report shows sizes, time, tokens and cost. Revealing again returns the
// record made the first time.
func Unseal(e *Exp, reading string, withoutReading bool) (*Unsealed, error) {
	if !e.IsSealed() {
		return nil, fmt.Errorf("EXP %s: nothing is sealed; fix: tare workshop anonymize EXP first", e.Root)
	}
	if (reading == "") == !withoutReading {
		return nil, fmt.Errorf("reveal: give --reading FILE (your notes on the drafts by letter, kept with the seal) or --without-reading to unseal on purpose, not both")
	}
	var key map[string]string
	if err := readJSON(filepath.Join(e.Root, KeyFile), &key); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(e.Root, KeyFile), err)
	}
	old, err := e.Revealed()
	if err != nil {
		return nil, err
	}
	if old != nil {
		return &Unsealed{Reveal: *old, Key: key}, nil
	}
	r := Reveal{At: time.Now().UTC(), WithoutReading: withoutReading}
	if reading != "" {
		abs, err := filepath.Abs(reading)
		if err != nil {
			return nil, fmt.Errorf("--reading %s: %v", reading, err)
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil:
			return nil, fmt.Errorf("--reading %s: %v; fix: give the file of your notes on the drafts", reading, err)
		case !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Size() > maxReading:
			return nil, fmt.Errorf("--reading %s: not a regular file of 1 byte to 1 MB; fix: give the file of your notes on the drafts", reading)
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("--reading %s: %v", reading, err)
		}
		r.Reading, r.ReadingFile = string(data), abs
	}
	if err := writeJSON(filepath.Join(e.Root, RevealFile), r); err != nil {
		return nil, err
	}
	return &Unsealed{Reveal: r, Key: key}, nil
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
	Status          Status `json:"status"`
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
	// Input, CachedInput and Output are nil while the reading is pending (Report.Withheld).
	Input       *int64 `json:"input"`
	CachedInput *int64 `json:"cached_input"`
	Output      *int64 `json:"output"`
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
	// Withheld says why each writer's time, tokens, cost and sizes are left out: the drafts
	// are sealed and their reading is not recorded.
	Withheld string `json:"withheld,omitempty"`
	Writers  []Row  `json:"writers"`
}

// sealedNote is why a sealed experiment's report withholds what pairs letters with writers.
const sealedNote = "the drafts are sealed and their reading is not recorded: draft sizes, and the time, tokens and cost that track them, " +
	"would pair letters with writers; after the reading, tare workshop reveal EXP --reading FILE shows them"

// withheldCell is a table cell the seal keeps.
const withheldCell = "sealed"

// MakeReport reads every writer's record. Byte counts are near-unique per writer, so printing
// them before the reading hands the editor the key by arithmetic: they are withheld before
// the seal (unless sizes says otherwise) and, once anonymize has sealed the drafts, until the
// reading is recorded (reveal). While sealed and unread, the time, tokens and cost that track
// a draft's size are withheld too, and sizes cannot be asked for: reveal is the way.
func MakeReport(e *Exp, sizes *bool) (*Report, error) {
	pending := e.ReadingPending()
	show := e.IsSealed() && !pending
	if sizes != nil {
		show = *sizes
	}
	if pending && show {
		return nil, fmt.Errorf("--sizes: %s; fix: record the reading first (tare workshop reveal %s --reading FILE, or --without-reading to unseal on purpose)", sealedNote, e.Root)
	}
	r := &Report{Experiment: e.Root, SizesShown: show}
	if pending {
		r.Withheld = sealedNote
	}
	for _, id := range e.WriterIDs() {
		s, err := e.State(id)
		if err != nil {
			return nil, err
		}
		row := Row{Writer: id, Agent: s.Config.Agent, Model: s.Config.Model, SelectedModel: s.Config.Model, Effort: s.Config.Effort,
			RequestedEffort: s.Config.RequestedEffort, Tier: s.Config.Tier, Status: s.Status, Error: s.Error,
			Attempts: len(s.Attempts) + 1, CostEvidence: "not run"}
		if s.Status == StatusPrepared {
			row.Attempts = len(s.Attempts)
		}
		// Time and spend add up over every attempt: a resumed writer cost both.
		var secs float64
		var have bool
		var cost float64
		var input, cached, output int64
		var priced, unpriced bool
		add := func(dir string) {
			var end engine.WriterEnd
			if readJSON(filepath.Join(dir, "receipt.json"), &end) != nil {
				return
			}
			input += end.Usage.Input
			cached += end.Usage.CacheRead + end.Usage.CacheWrite
			output += end.Usage.Output
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
		row.Input, row.CachedInput, row.Output = &input, &cached, &output
		switch {
		case pending:
			row.withhold()
		case show:
			row.OutputBytes = outputBytes(e, id)
		default:
			row.OutputBytes = map[string]any{"withheld": "run anonymize first, or pass --sizes"}
		}
		r.Writers = append(r.Writers, row)
	}
	return r, nil
}

// withhold takes out of the row all that tracks its draft's size: sizes, time, requests,
// tokens and cost. Who the writer is, its model, effort, status and attempts stay.
func (w *Row) withhold() {
	w.OutputBytes = map[string]any{"withheld": sealedNote}
	w.Seconds, w.PeakRequest, w.Reasoning, w.CostUSD = nil, nil, nil, nil
	w.Input, w.CachedInput, w.Output, w.Requests = nil, nil, nil, 0
	w.PeakEvidence, w.ReasoningEvidence, w.CostEvidence = withheldCell, withheldCell, withheldCell
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
		if w.Status == StatusPrepared {
			effort = firstOf(w.Effort, "-")
		}
		measured := func(v *int64) string {
			if v == nil && w.Status == StatusPrepared {
				return "-"
			}
			return cell(v)
		}
		size := "withheld"
		if d, ok := w.OutputBytes["declared"]; ok {
			size = fmt.Sprint(d)
		}
		tokens := func(v *int64) string {
			if v == nil {
				return withheldCell
			}
			return cell(*v)
		}
		row := []string{w.Writer, w.Agent, cell(w.Model), cell(effort), w.Tier, string(w.Status),
			cell(w.Seconds), measured(w.PeakRequest), measured(w.Window), tokens(w.Input), tokens(w.CachedInput), tokens(w.Output), measured(w.Reasoning),
			cell(w.CostUSD), size}
		if r.Withheld != "" {
			row = []string{w.Writer, w.Agent, cell(w.Model), cell(effort), w.Tier, string(w.Status),
				withheldCell, withheldCell, measured(w.Window), withheldCell, withheldCell, withheldCell, withheldCell, withheldCell, withheldCell}
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	if r.Withheld != "" {
		fmt.Fprintf(&b, "\nWithheld: %s.\n", strings.Replace(r.Withheld, "EXP", journal.Printable(r.Experiment), 1))
	}
	return b.String()
}
