package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	Prompt      string `json:"prompt,omitempty"`
	Check       string `json:"check,omitempty"`
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
	// Cliff holds a cliff analysis's settings when the run was recorded for one, so tare
	// resume finishes the analysis too.
	Cliff *cliffSettings `json:"cliff,omitempty"`
	// Separate holds a calibrate's --until-separated settings, so tare resume continues the
	// same sequence.
	Separate *separateSettings `json:"until_separated,omitempty"`
	// Swap holds a swap analysis's settings.
	Swap *swapSettings `json:"swap,omitempty"`
	// JudgeNoise holds a judge-noise run's settings, so tare resume finishes it.
	JudgeNoise *judgeSettings `json:"judge_noise,omitempty"`
	// Inputs are what a judge run read, by content: "page DIR" (the folder's capsule root) and
	// "rubric FILE" (its sha256). tare rerun names each that changed.
	Inputs map[string]string `json:"inputs,omitempty"`
}

// RecipeAgent is one agent as the run used it.
type RecipeAgent struct {
	Version string `json:"version"`
	Bin     string `json:"bin"`
	// Snapshots says how this agent's capsules are taken: "hook" (in the room, after each
	// tool call) or "stream" (by the engine, from outside, on each tool result it streams).
	Snapshots string `json:"snapshots"`
}

func writeRecipe(dir string, r *Recipe) error {
	r.Format = recipeFormat
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeRunFile(filepath.Join(dir, RecipeFile), append(data, '\n'))
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
