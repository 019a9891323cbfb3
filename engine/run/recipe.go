package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"tare/engine/journal"
)

// RecipeFile is the name of a run's recipe inside its directory.
const RecipeFile = "recipe.json"

// recipeFormat marks a recipe tare wrote; tare resume refuses any other.
const recipeFormat = "tare-recipe 1"

// Recipe is everything needed to finish or repeat a run: what was asked, of which agents at
// which versions, on which project (by content), with which model script.
type Recipe struct {
	Format string    `json:"format"`
	Tare   string    `json:"tare"`
	Argv   []string  `json:"argv"`
	Kind   string    `json:"kind"`
	Time   time.Time `json:"time"`
	// Project is the project's folder; Fingerprint is its capsule root before the run.
	Project     string `json:"project"`
	Fingerprint string `json:"fingerprint"`
	// Env is the environment image the run's rooms are rooted in (--env; nil: the host's).
	Env    *Env   `json:"env,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	Check  string `json:"check,omitempty"`
	// CheckTimeout and AgentTimeout are in seconds.
	CheckTimeout float64 `json:"check_timeout"`
	// CheckRoom is where the check runs: a room of its own from config [check], or the host
	// by the operator's opt-in. A resume and every tail of a recording keep it.
	CheckRoom    CheckRoom      `json:"check_room"`
	AgentTimeout float64        `json:"agent_timeout"`
	Sides        []journal.Side `json:"sides"`
	// Agents holds each agent's version and how its capsules are taken.
	Agents map[string]RecipeAgent `json:"agents"`
	Runs   int                    `json:"runs"`
	Jobs   int                    `json:"jobs"`
	Keep   bool                   `json:"keep"`
	// Script is the model script tare's own model server replays ("" for real providers);
	// ScriptText is its content, so a resume replays the same script even if the file changed.
	Script     string `json:"script,omitempty"`
	ScriptText string `json:"script_text,omitempty"`
	Seed       int64  `json:"seed"`
	// Caps are the run's --max-cost/--max-tokens, enforced at the relay (nil: none).
	Caps *Caps `json:"caps,omitempty"`
	// On is the backend the tails ran through ("slurm"; empty: this machine), so a resume
	// sends the rest of them the same way.
	On string `json:"on,omitempty"`
	// Inputs are what a judge run read, by content: "page DIR" (the folder's capsule root) and
	// "rubric FILE" (its sha256). tare rerun names each that changed.
	Inputs map[string]string `json:"inputs,omitempty"`
	// Settings are each analysis's own settings, as raw JSON under the analysis's key (cliff,
	// until_separated, swap, judge_noise), so the recipe needs to know no analysis: each one
	// writes and reads its own key, and tare resume finishes the analysis from it. In
	// recipe.json they sit beside the common fields, where every tare so far wrote them.
	Settings map[string]json.RawMessage `json:"-"`
}

// recipeFields is the recipe's common fields, as recipe.json names them.
type recipeFields Recipe

// commonKeys are the JSON names of the recipe's common fields: every other key of
// recipe.json is an analysis's settings.
var commonKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeOf(recipeFields{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// MarshalJSON writes the common fields, then each analysis's settings under its key, in
// key order.
func (r Recipe) MarshalJSON() ([]byte, error) {
	data, err := json.Marshal(recipeFields(r))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(r.Settings))
	for k := range r.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := bytes.NewBuffer(data[:len(data)-1]) // without the closing brace
	for _, k := range keys {
		if commonKeys[k] {
			return nil, fmt.Errorf("recipe: settings key %q is a common field's name", k)
		}
		name, _ := json.Marshal(k)
		out.WriteByte(',')
		out.Write(name)
		out.WriteByte(':')
		out.Write(r.Settings[k])
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// UnmarshalJSON reads the common fields, and keeps every other key as an analysis's settings.
func (r *Recipe) UnmarshalJSON(data []byte) error {
	var fields recipeFields
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	*r = Recipe(fields)
	r.Settings = nil
	for k, v := range all {
		if commonKeys[k] || string(v) == "null" {
			continue
		}
		if r.Settings == nil {
			r.Settings = map[string]json.RawMessage{}
		}
		r.Settings[k] = v
	}
	return nil
}

// SetSettings stores v as the settings under key (an analysis's own name for them).
func (r *Recipe) SetSettings(key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("recipe: %s settings: %v", key, err)
	}
	if r.Settings == nil {
		r.Settings = map[string]json.RawMessage{}
	}
	r.Settings[key] = data
	return nil
}

// DecodeSettings reads the settings under key into v; ok is false when the recipe has none.
func (r *Recipe) DecodeSettings(key string, v any) (ok bool, err error) {
	data, ok := r.Settings[key]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s: field %s: %v; fix: give a run folder whose recipe tare wrote", RecipeFile, key, err)
	}
	return true, nil
}

// Env is the environment a run's rooms (the agents' and the check's) are rooted in, as
// recipe.json keeps it: the folder it was built from and the digest of that build context.
// A resume, a tail and a Slurm node use the image of that digest (built again from Dir when
// the cache no longer holds it, and refused when Dir now digests otherwise); tare rerun names
// a Dir that drifted.
type Env struct {
	Dir    string `json:"dir"`
	Digest string `json:"digest"`
	// WorkDir is the image's WORKDIR, where the workspace is in every room of the run.
	WorkDir string `json:"workdir"`
	// FromImage says the run's start workspace is the image's WORKDIR contents (no --project).
	FromImage bool `json:"from_image,omitempty"`
}

// Short is the digest's first 12 characters, as tare env ls prints it.
func (e *Env) Short() string {
	if len(e.Digest) < 12 {
		return e.Digest
	}
	return e.Digest[:12]
}

// RecipeAgent is one agent as the run used it.
type RecipeAgent struct {
	Version string `json:"version"`
	Bin     string `json:"bin"`
	// Snapshots says how this agent's capsules are taken: "hook" (in the room, after each
	// tool call) or "stream" (by the engine, from outside, on each tool result it streams).
	Snapshots string `json:"snapshots"`
}

// WriteRecipe writes r as dir's recipe, marked as tare's.
func WriteRecipe(dir string, r *Recipe) error {
	r.Format = recipeFormat
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, RecipeFile), append(data, '\n'))
}

// ReadRecipe reads a run directory's recipe, refusing a folder tare did not write.
func ReadRecipe(dir string) (*Recipe, error) {
	data, err := os.ReadFile(filepath.Join(dir, RecipeFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: not a tare run (no %s); fix: give a directory that tare calibrate made", dir, RecipeFile)
		}
		return nil, fmt.Errorf("%s: %v", dir, err)
	}
	var r Recipe
	if err := json.Unmarshal(data, &r); err == nil && r.Format != recipeFormat && strings.HasPrefix(r.Format, "tare-recipe ") {
		// A format this tare does not know, from a tare that does: reading it as ours would
		// misread it.
		return nil, fmt.Errorf("%s: %s is %q, written by a newer tare (%s); fix: run it with that tare or a newer one than this",
			dir, RecipeFile, r.Format, r.Tare)
	}
	if err := json.Unmarshal(data, &r); err != nil || r.Format != recipeFormat {
		return nil, fmt.Errorf("%s: not a tare run (%s is not a tare recipe); fix: give a directory that tare calibrate made", dir, RecipeFile)
	}
	return &r, nil
}
