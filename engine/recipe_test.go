package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tare/engine/run"
)

// TestOldRecipesStillRead: recipe.json files as tare wrote them before each analysis kept its
// own settings still read, each analysis finds its settings under its key, and writing the
// recipe again keeps every field (so tare resume and tare rerun of a run started by an older
// tare go on as they would have).
func TestOldRecipesStillRead(t *testing.T) {
	threshold := 6.5
	for _, c := range []struct {
		dir  string
		key  string
		got  any
		want any
	}{
		{"record-cliff", cliffKey, &cliffSettings{}, &cliffSettings{Tails: 6, Budget: 40, Jobs: 2, GapBelow: 0.25, On: "slurm"}},
		{"calibrate-separated", separateKey, &separateSettings{}, &separateSettings{MaxRuns: 100, Detect: 0.3}},
		{"swap", swapKey, &swapSettings{}, &swapSettings{Cuts: []float64{0.25, 0.5, 0.75}, Tails: 8, Jobs: 3, Handoff: "native", Detect: 0.4, Originals: 2}},
		{"judge-noise", judgeNoiseKey, &judgeSettings{}, &judgeSettings{Dirs: []string{"/pages/one", "/pages/two"}, Page: "index.html",
			Rubric: Rubric{Path: "/work/rubric.md", Text: "scale: 1-10\n", Lo: 1, Hi: 10}, Judge: "claude", Times: 5, Timeout: 300e9,
			Threshold: &threshold, Tolerance: 1}},
	} {
		dir := filepath.Join("testdata", "recipes", c.dir)
		rec, err := run.ReadRecipe(dir)
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		if ok, err := rec.DecodeSettings(c.key, c.got); !ok || err != nil {
			t.Fatalf("%s: settings under %q: ok %v, %v", c.dir, c.key, ok, err)
		}
		if !reflect.DeepEqual(c.got, c.want) {
			t.Fatalf("%s: settings %+v, want %+v", c.dir, c.got, c.want)
		}
		if len(rec.Settings) != 1 {
			t.Fatalf("%s: settings under %d keys, want only %q: %v", c.dir, len(rec.Settings), c.key, rec.Settings)
		}
		out := t.TempDir()
		if err := run.WriteRecipe(out, rec); err != nil {
			t.Fatal(err)
		}
		if was, now := jsonOf(t, filepath.Join(dir, run.RecipeFile)), jsonOf(t, filepath.Join(out, run.RecipeFile)); !reflect.DeepEqual(was, now) {
			t.Fatalf("%s: written again, the recipe changed:\nwas %v\nnow %v", c.dir, was, now)
		}
	}

	rec, err := run.ReadRecipe(filepath.Join("testdata", "recipes", "record-cliff"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Caps == nil || rec.Caps.TailCost != 0.5 || rec.Caps.RunTokens != 100000 || rec.On != "slurm" ||
		!rec.CheckRoom.Network || len(rec.CheckRoom.ReadOnly) != 1 {
		t.Fatalf("the common fields misread: caps %+v, on %q, check room %+v", rec.Caps, rec.On, rec.CheckRoom)
	}
	if set, ok := cliffOf(t.TempDir(), rec); !ok || set.Budget != 40 {
		t.Fatalf("a recorded cliff's recipe reads as no cliff (%v, %+v): tare resume would finish the recording only", ok, set)
	}
	if set, err := separateOf(rec); set != nil || err != nil {
		t.Fatalf("a cliff's recipe reads as --until-separated: %+v, %v", set, err)
	}
}

// TestRecipeSettingsBadInput: an analysis's settings that do not read say which file and
// field, and what to do.
func TestRecipeSettingsBadInput(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "recipes", "swap", run.RecipeFile))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), `"cuts": [0.25, 0.5, 0.75]`, `"cuts": "half"`, 1)
	if err := os.WriteFile(filepath.Join(dir, run.RecipeFile), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := run.ReadRecipe(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rec.DecodeSettings(swapKey, &swapSettings{})
	if err == nil || !strings.Contains(err.Error(), "recipe.json: field swap:") || !strings.Contains(err.Error(), "fix:") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("bad swap settings: %v, want one line naming recipe.json, the field and the fix", err)
	}
}

func jsonOf(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
