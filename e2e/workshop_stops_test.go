package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workshopStopsExp prepares a one-writer experiment from plan text, with the notes file and
// the scripts given (name -> text) beside it; it returns the experiment and the folder.
func workshopStopsExp(t *testing.T, r *run, plan string, scripts map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("Notes on the keeper.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "plan.toml"), []byte(plan), 0o644)
	for name, text := range scripts {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	exp := filepath.Join(dir, "exp")
	if r.tare(t, "workshop", "prepare", filepath.Join(dir, "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: exit %d %s", r.code, r.stderr)
	}
	return exp, dir
}

// workshopLingerPlan has one Claude Code writer that lingers after its answer: a SessionEnd
// hook (given with Claude Code's own --settings flag) keeps the CLI from exiting for ten
// minutes after it has printed its result, as a slow hook or a child it waits on would.
const workshopLingerPlan = `
assignment = "Write a scene."
brief = "Read the notes."
[[files]]
path = "notes/a.md"
local_source = "a.md"
[[outputs]]
path = "drafts/scene.md"
min_bytes = 50
[[writers]]
id = "lingers"
agent = "claude"
model = "claude-sonnet-4-5"
args = ["--settings", '{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"sleep 600","timeout":900}]}]}}']
`

const workshopLingerScript = `
final = "The scene is in drafts/scene.md."

[[turn]]
text = "Writing the scene."
write = {path = "drafts/scene.md", content = "The keeper wound the clock once more, for no one but the gulls.\n"}
`

// TestWorkshopWriterThatAnsweredIsCollected: a writer whose stream carries its final answer
// but whose process does not exit is stopped after a short grace and collected like one that
// exited: completed, its draft archived, not failed and not timed out.
func TestWorkshopWriterThatAnsweredIsCollected(t *testing.T) {
	r := newRun(t, "")
	exp, dir := workshopStopsExp(t, r, workshopLingerPlan, map[string]string{"w.toml": workshopLingerScript})
	r.tare(t, "workshop", "run", exp, "--timeout", "50s", "--script", filepath.Join(dir, "w.toml"))
	var res map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res["lingers"] != "completed" {
		t.Fatalf("run: exit %d, %q %v; want the writer that answered completed\n%s", r.code, r.stdout, err, r.stderr)
	}
	var s struct {
		Status        string  `json:"status"`
		Error         string  `json:"error"`
		TimedOutAfter float64 `json:"timed_out_after"`
		Answered      *struct {
			Grace float64 `json:"grace_seconds"`
		} `json:"stopped_after_answer"`
	}
	readJSONFile(t, filepath.Join(exp, "records", "lingers", "state.json"), &s)
	if s.Status != "completed" || s.Error != "" || s.TimedOutAfter != 0 || s.Answered == nil || s.Answered.Grace <= 0 {
		t.Fatalf("state %+v: want completed, stopped after its answer, not timed out", s)
	}
	if !strings.Contains(r.stderr, "lingers finished") || !strings.Contains(r.stderr, "did not exit") {
		t.Errorf("run progress does not say it finished after its answer:\n%s", r.stderr)
	}
	if r.tare(t, "workshop", "watch", exp, "--once"); !strings.Contains(r.stdout, "lingers finished") || !strings.Contains(r.stdout, "did not exit") {
		t.Errorf("watch does not say the writer finished after its answer:\n%s", r.stdout)
	}
	if r.tare(t, "workshop", "inspect", exp); !strings.Contains(r.stdout, `"stopped_after_answer"`) {
		t.Errorf("inspect does not say the writer was stopped after its answer:\n%s", r.stdout)
	}
	draft, err := os.ReadFile(filepath.Join(exp, "records", "lingers", "artifacts", "scene.md"))
	if err != nil || string(draft) != "The keeper wound the clock once more, for no one but the gulls.\n" {
		t.Fatalf("the archived draft is not the writer's: %q %v", draft, err)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("the workshop left %v", left)
	}
}

// workshopLoginPlan has one Codex writer.
const workshopLoginPlan = `
assignment = "Write a scene."
brief = "Read the notes."
[[files]]
path = "notes/a.md"
local_source = "a.md"
[[outputs]]
path = "drafts/scene.md"
min_bytes = 50
[[writers]]
id = "keeper"
agent = "codex"
model = "gpt-5.1-codex"
`

// workshopLoginScript writes the opening, then the provider refuses the login (HTTP 401, the
// provider's own body); workshopLoginRenewed is the same conversation once the operator has
// logged in again.
const workshopLoginScript = `
final = "The scene is in drafts/scene.md."

[[turn]]
text = "Starting the scene."
write = {path = "drafts/scene.md", content = "The keeper climbed the steps.\n"}

[[turn]]
text = "Finishing the scene."
error = "login"
shell = "printf 'She wound the clock by hand and told the gulls nothing at all.\n' >> drafts/scene.md"

[[turn]]
text = "The scene is in drafts/scene.md."
`

func workshopLoginRenewed() string {
	return strings.Replace(workshopLoginScript, "error = \"login\"\n", "", 1)
}

// TestWorkshopResumeAfterExpiredLogin: a writer the provider refused for an expired login
// (each agent's 401, read from its own stream) is named so, resumed after the operator logs
// in again, in its own session, its stopped attempt archived whole; the resumed writer
// finishes its draft.
func TestWorkshopResumeAfterExpiredLogin(t *testing.T) {
	r := newRun(t, "")
	exp, dir := workshopStopsExp(t, r, workshopLoginPlan, map[string]string{"login.toml": workshopLoginScript, "renewed.toml": workshopLoginRenewed()})
	if r.tare(t, "workshop", "run", exp, "--timeout", "2m", "--script", filepath.Join(dir, "login.toml")); r.code != 1 {
		t.Fatalf("run: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "keeper stopped on an expired login") || !strings.Contains(r.stderr, "log in again") {
		t.Errorf("run progress does not name the expired login and what to do:\n%s", r.stderr)
	}
	if r.tare(t, "workshop", "inspect", exp); r.code != 0 || !strings.Contains(r.stdout, `"stop_kind": "login"`) || !strings.Contains(r.stdout, "log in again") {
		t.Fatalf("inspect does not name the expired login: %s %s", r.stdout, r.stderr)
	}
	if r.tare(t, "workshop", "watch", exp, "--once"); !strings.Contains(r.stdout, "keeper stopped on an expired login") {
		t.Errorf("watch does not name the expired login:\n%s", r.stdout)
	}
	if r.tare(t, "workshop", "resume", exp, "keeper", "--script", filepath.Join(dir, "renewed.toml")); r.code != 0 {
		t.Fatalf("resume after the login: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	rec := filepath.Join(exp, "records", "keeper")
	var st struct {
		Status   string `json:"status"`
		Attempts []struct {
			Reason string `json:"reason"`
		} `json:"attempts"`
	}
	readJSONFile(t, filepath.Join(rec, "state.json"), &st)
	if st.Status != "completed" || len(st.Attempts) != 1 || !strings.HasPrefix(st.Attempts[0].Reason, "login: ") {
		t.Fatalf("state after the resume: %+v; want completed with the login-stopped attempt archived", st)
	}
	events, _ := os.ReadFile(filepath.Join(rec, "attempts", "01", "events.jsonl"))
	if !strings.Contains(string(events), "401 Unauthorized") {
		t.Errorf("attempt 01's events do not carry the 401:\n%s", events)
	}
	var first, second struct {
		SessionID string `json:"session_id"`
	}
	readJSONFile(t, filepath.Join(rec, "attempts", "01", "receipt.json"), &first)
	readJSONFile(t, filepath.Join(rec, "receipt.json"), &second)
	if first.SessionID == "" || second.SessionID != first.SessionID {
		t.Fatalf("resume did not continue the writer's own session: %q then %q", first.SessionID, second.SessionID)
	}
	if prompt, _ := os.ReadFile(filepath.Join(rec, "prompt.md")); !strings.Contains(string(prompt), "login") {
		t.Errorf("the resumed writer's notice does not say its login was renewed: %q", prompt)
	}
	final, _ := os.ReadFile(filepath.Join(rec, "artifacts", "scene.md"))
	if string(final) != "The keeper climbed the steps.\nShe wound the clock by hand and told the gulls nothing at all.\n" {
		t.Fatalf("the resumed writer did not finish its draft: %q", final)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("the workshop left %v", left)
	}
}
