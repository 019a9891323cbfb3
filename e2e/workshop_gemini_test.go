package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workshopGeminiPlan has one Gemini CLI writer.
const workshopGeminiPlan = `
assignment = "Write a scene."
brief = "Read the notes."
[[files]]
path = "notes/a.md"
local_source = "a.md"
[[outputs]]
path = "drafts/scene.md"
min_bytes = 50
[[writers]]
agent = "gemini"
model = "gemini-2.5-pro"
`

const workshopGeminiScript = `
final = "The scene is in drafts/scene.md."

[[turn]]
text = "Reading the assignment first."
shell = "cat /work/START.md /work/input/notes/a.md"

[[turn]]
text = "Writing the scene."
write = {path = "drafts/scene.md", content = "The keeper wound the clock once more, for no one but the gulls.\n"}
`

// TestWorkshopGeminiWriter: a plan's Gemini CLI writer is accepted, runs in its room on
// tare's model server (the real CLI, its shell and write tools), completes, and its draft is
// collected byte for byte.
func TestWorkshopGeminiWriter(t *testing.T) {
	r := newRun(t, "")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("Notes on the keeper.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "plan.toml"), []byte(workshopGeminiPlan), 0o644)
	os.WriteFile(filepath.Join(dir, "writer.toml"), []byte(workshopGeminiScript), 0o644)
	exp := filepath.Join(dir, "exp")
	if r.tare(t, "workshop", "prepare", filepath.Join(dir, "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: exit %d %s", r.code, r.stderr)
	}
	const id = "gemini-2.5-pro"
	r.tare(t, "workshop", "run", exp, "--timeout", "2m", "--script", filepath.Join(dir, "writer.toml"))
	var res map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res[id] != "completed" {
		t.Fatalf("run: exit %d, %q %v, want %s completed\n%s", r.code, r.stdout, err, id, r.stderr)
	}
	if !strings.Contains(r.stderr, id+" [gemini") {
		t.Errorf("run progress does not name the gemini writer:\n%s", r.stderr)
	}
	if r.tare(t, "workshop", "collect", exp, id); r.code != 0 || !strings.Contains(r.stdout, `"completed"`) {
		t.Fatalf("collect: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	draft, err := os.ReadFile(filepath.Join(exp, "records", id, "artifacts", "scene.md"))
	if err != nil || string(draft) != "The keeper wound the clock once more, for no one but the gulls.\n" {
		t.Fatalf("the archived draft is not the writer's: %q %v", draft, err)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("the workshop left %v", left)
	}
}
