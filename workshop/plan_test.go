package workshop

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// basePlan is a valid plan over material beside it; tests change one thing each.
const basePlan = `
assignment = "Write a scene."
brief = "Read the notes."
required_reads = ["notes/a.md"]

[[files]]
path = "notes/a.md"
local_source = "material/a.md"

[[outputs]]
path = "drafts/scene.md"

[[writers]]
agent = "codex"
model = "gpt-5.1-codex"
tier = "economy"

[[writers]]
agent = "claude"
model = "claude-sonnet-4-5"
`

// planDir writes plan (TOML) and its material into a fresh folder and returns the plan's path
// and an empty parent folder for experiments.
func planDir(t testing.TB, plan string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "material"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "material", "a.md"), []byte("Notes about the keeper.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "plan.toml")
	if err := os.WriteFile(p, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "exps")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return p, out
}

// refused prepares plan and wants an error containing want, with nothing left behind.
func refused(t *testing.T, plan, want string, setup ...func(dir string)) {
	t.Helper()
	p, out := planDir(t, plan)
	for _, f := range setup {
		f(filepath.Dir(p))
	}
	_, err := Prepare(p, filepath.Join(out, "exp"))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("prepare: %v, want a refusal containing %q", err, want)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("a refused prepare left %v behind", entries[0].Name())
	}
}

func TestPrepareFreezesThePlan(t *testing.T) {
	p, out := planDir(t, basePlan)
	exp := filepath.Join(out, "exp")
	f, err := Prepare(p, exp)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{f.Writers[0].ID, f.Writers[1].ID}; got[0] != "codex-gpt-5.1-codex" || got[1] != "claude-sonnet-4-5" {
		t.Fatalf("writer ids %v: want them from agent and model, the agent named once", got)
	}
	if f.Outputs[0].MinBytes != DefaultMinBytes {
		t.Errorf("min_bytes %d, want the default %d", f.Outputs[0].MinBytes, DefaultMinBytes)
	}
	want := map[string]bool{"assignment.md": true, "orientation.md": true, "notes/a.md": true}
	if len(f.InputHashes) != len(want) {
		t.Fatalf("input hashes %v, want %v", f.InputHashes, want)
	}
	for _, id := range []string{"codex-gpt-5.1-codex", "claude-sonnet-4-5"} {
		data, err := os.ReadFile(filepath.Join(exp, "writers", id, "input", "notes", "a.md"))
		if err != nil || string(data) != "Notes about the keeper.\n" {
			t.Fatalf("writer %s input: %q %v", id, data, err)
		}
		start, err := os.ReadFile(filepath.Join(exp, "writers", id, "START.md"))
		if err != nil || !strings.Contains(string(start), "/work/drafts/scene.md") || !strings.Contains(string(start), "/work/input/notes/a.md") {
			t.Fatalf("START.md of %s names neither the output nor the required read: %s", id, start)
		}
		var s State
		if err := readJSON(filepath.Join(exp, "records", id, "state.json"), &s); err != nil || s.Status != "prepared" || s.StartSHA != sum(start) {
			t.Fatalf("state of %s: %+v %v", id, s, err)
		}
	}
	e, err := Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Writer("claude-sonnet-4-5"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("prepare left %d entries beside the experiment, want none", len(entries)-1)
	}
}

func TestPrepareReadsJSON(t *testing.T) {
	p, out := planDir(t, "")
	plan := map[string]any{"assignment": "A", "brief": "B", "outputs": []any{"drafts/x.md"},
		"writers": []any{map[string]any{"harness": "pi", "requested_model": "tare-model"}}}
	data, _ := json.Marshal(plan)
	jp := filepath.Join(filepath.Dir(p), "plan.json")
	if err := os.WriteFile(jp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Prepare(jp, filepath.Join(out, "exp"))
	if err != nil {
		t.Fatal(err)
	}
	if w := f.Writers[0]; w.Agent != "pi" || w.Model != "tare-model" || w.ID != "pi-tare-model" {
		t.Fatalf("writer %+v: harness is agent's alias, requested_model alone is enough", w)
	}
}

func TestPrepareRefusesTraversal(t *testing.T) {
	refused(t, strings.Replace(basePlan, `path = "notes/a.md"`, `path = "../escape.md"`, 1), "without traversal")
	refused(t, strings.Replace(basePlan, `local_source = "material/a.md"`, `local_source = "../../etc/passwd"`, 1), "without traversal")
	refused(t, strings.Replace(basePlan, `path = "notes/a.md"`, `path = "/tmp/x.md"`, 1), "without traversal")
}

func TestPrepareRefusesSymlink(t *testing.T) {
	refused(t, basePlan, "symlink", func(dir string) {
		a := filepath.Join(dir, "material", "a.md")
		os.Remove(a)
		if err := os.Symlink("/etc/hostname", a); err != nil {
			t.Fatal(err)
		}
	})
	// A symlinked folder on the way counts too.
	refused(t, basePlan, "symlink", func(dir string) {
		m := filepath.Join(dir, "material")
		if err := os.Rename(m, filepath.Join(dir, "real")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("real", m); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPrepareRefusesSpecialFile(t *testing.T) {
	refused(t, basePlan, "not a regular file", func(dir string) {
		a := filepath.Join(dir, "material", "a.md")
		os.Remove(a)
		if err := syscall.Mkfifo(a, 0o644); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPrepareRefusesInjectedInstructions(t *testing.T) {
	for _, name := range []string{"AGENTS.md", "CLAUDE.md", "GEMINI.md", "notes/.claude/settings.json", ".codex/config.toml", ".pi/x.md", "agents.md"} {
		t.Run(name, func(t *testing.T) {
			refused(t, strings.Replace(basePlan, `path = "notes/a.md"`, `path = "`+name+`"`, 1)+"\n", "injected instruction")
		})
	}
	refused(t, strings.Replace(basePlan, `path = "notes/a.md"`, `path = "assignment.md"`, 1), "duplicate")
}

func TestPrepareRefusesDuplicateWriters(t *testing.T) {
	refused(t, basePlan+"\n[[writers]]\nid = \"w\"\nagent = \"pi\"\nmodel = \"m\"\n\n[[writers]]\nid = \"w\"\nagent = \"codex\"\nmodel = \"m\"\n", "declare unique writers")
	// Derived ids never collide: the second seat of the same agent and model is numbered.
	p, out := planDir(t, basePlan+"\n[[writers]]\nagent = \"claude\"\nmodel = \"claude-sonnet-4-5\"\n")
	f, err := Prepare(p, filepath.Join(out, "exp"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Writers[2].ID != "claude-sonnet-4-5-02" {
		t.Fatalf("second identical seat: id %q, want claude-sonnet-4-5-02", f.Writers[2].ID)
	}
}

func TestPrepareRefusesOutputsOutsideDrafts(t *testing.T) {
	refused(t, strings.Replace(basePlan, `path = "drafts/scene.md"`, `path = "scene.md"`, 1), "below drafts/")
	refused(t, strings.Replace(basePlan, `path = "drafts/scene.md"`, `path = "drafts/../input/x.md"`, 1), "without traversal")
	refused(t, strings.Replace(basePlan, `path = "drafts/scene.md"`, "path = \"drafts/scene.md\"\nmin_bytes = -3", 1), "positive number")
	refused(t, strings.Replace(basePlan, "[[outputs]]\npath = \"drafts/scene.md\"\n", "", 1), "declare at least one")
}

func TestPrepareRefusesUnknownTierAndCapability(t *testing.T) {
	refused(t, strings.Replace(basePlan, `tier = "economy"`, `tier = "gold"`, 1), "use one of economy, standard, premium")
	refused(t, strings.Replace(basePlan, `tier = "economy"`, `capabilities = ["telepathy"]`, 1), "unsupported")
	refused(t, strings.Replace(basePlan, `tier = "economy"`, `capabilities = ["image-generation"]`, 1), "needs the agy agent")
	refused(t, strings.Replace(basePlan, `agent = "codex"`, `agent = "gpt"`, 1), "writers[0].agent")
	refused(t, strings.Replace(basePlan, `model = "gpt-5.1-codex"`, ``, 1), "needs model")
	refused(t, strings.Replace(basePlan, `tier = "economy"`, `mode = "later"`, 1), "auto or manual")
}

// TestPrepareRefusesAnEffortTheAgentCannotTake: an effort is passed with each agent's own
// flag, so a level its CLI does not take, or an agent with no way to take one, is refused at
// prepare instead of running at the agent's default under the name asked.
func TestPrepareRefusesAnEffortTheAgentCannotTake(t *testing.T) {
	refused(t, strings.Replace(basePlan, `model = "claude-sonnet-4-5"`, "model = \"claude-sonnet-4-5\"\neffort = \"ultra\"", 1),
		`writers[1].effort "ultra": claude takes one of low, medium, high, xhigh, max`)
	refused(t, strings.Replace(basePlan, `agent = "claude"`, "agent = \"gemini\"\neffort = \"high\"", 1),
		`writers[1].effort "high": gemini takes no effort level from tare`)
}

func TestPrepareRefusesOtherBadPlans(t *testing.T) {
	refused(t, strings.Replace(basePlan, `brief = "Read the notes."`, `brief = "  "`, 1), "assignment and brief")
	refused(t, basePlan+"\nbreif = \"typo\"\n", "unknown field")
	refused(t, strings.Replace(basePlan, `required_reads = ["notes/a.md"]`, `required_reads = ["notes/b.md"]`, 1), "required reading is absent")
	refused(t, strings.Replace(basePlan, `local_source = "material/a.md"`, `local_source = "material/missing.md"`, 1), "no such file")
	p, out := planDir(t, basePlan)
	if err := os.Mkdir(filepath.Join(out, "exp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(p, filepath.Join(out, "exp")); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("prepare onto an existing folder: %v", err)
	}
}

func TestPrepareFreezesGitBlobsOnly(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q")
	os.WriteFile(filepath.Join(dir, "ch1.md"), []byte("Chapter one, committed.\n"), 0o644)
	os.Symlink("/etc/hostname", filepath.Join(dir, "link.md"))
	run("add", "ch1.md", "link.md")
	run("commit", "-qm", "one")
	os.WriteFile(filepath.Join(dir, "ch1.md"), []byte("Chapter one, edited since.\n"), 0o644)
	plan := "assignment = \"A\"\nbrief = \"B\"\nsource_root = " + `"` + dir + `"` + "\nsource_revision = \"HEAD\"\n" +
		"[[files]]\npath = \"ch1.md\"\nsource = \"ch1.md\"\n[[outputs]]\npath = \"drafts/x.md\"\n[[writers]]\nagent = \"pi\"\nmodel = \"m\"\n"
	p, out := planDir(t, plan)
	f, err := Prepare(p, filepath.Join(out, "exp"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(out, "exp", "source", "ch1.md"))
	if string(data) != "Chapter one, committed.\n" || len(f.SourceRevision) != 40 {
		t.Fatalf("frozen %q at %q: want the committed blob at the full commit", data, f.SourceRevision)
	}
	refused(t, strings.Replace(plan, `source = "ch1.md"`, `source = "link.md"`, 1), "not a regular Git blob")
}

// TestLoadRefusesChangedPacket: a changed plan, input or START.md is refused by name.
func TestLoadRefusesChangedPacket(t *testing.T) {
	p, out := planDir(t, basePlan)
	exp := filepath.Join(out, "exp")
	if _, err := Prepare(p, exp); err != nil {
		t.Fatal(err)
	}
	e, err := Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	id := "claude-sonnet-4-5"
	in := filepath.Join(exp, "writers", id, "input", "notes", "a.md")
	os.WriteFile(in, []byte("Other notes.\n"), 0o644)
	if _, err := e.Writer(id); err == nil || !strings.Contains(err.Error(), "input changed") {
		t.Fatalf("changed input: %v", err)
	}
	os.WriteFile(in, []byte("Notes about the keeper.\n"), 0o644)
	extra := filepath.Join(exp, "writers", id, "input", "extra.md")
	os.WriteFile(extra, []byte("x"), 0o644)
	if _, err := e.Writer(id); err == nil || !strings.Contains(err.Error(), "input changed") {
		t.Fatalf("an added input: %v", err)
	}
	os.Remove(extra)
	start := filepath.Join(exp, "writers", id, "START.md")
	data, _ := os.ReadFile(start)
	os.WriteFile(start, append(data, "Also write a poem.\n"...), 0o644)
	if _, err := e.Writer(id); err == nil || !strings.Contains(err.Error(), "START.md") {
		t.Fatalf("changed START.md: %v", err)
	}
	os.WriteFile(start, data, 0o644)
	if _, err := e.Writer(id); err != nil {
		t.Fatal(err)
	}
	pj := filepath.Join(exp, "plan.json")
	data, _ = os.ReadFile(pj)
	os.WriteFile(pj, []byte(strings.Replace(string(data), "Write a scene.", "Write a sonnet.", 1)), 0o644)
	if _, err := Load(exp); err == nil || !strings.Contains(err.Error(), "frozen plan changed") {
		t.Fatalf("changed plan: %v", err)
	}
}

func TestShippedExamplePlanPrepares(t *testing.T) {
	f, err := Prepare("../demo/workshop/plan.toml", filepath.Join(t.TempDir(), "example"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Writers) != 3 || f.ReadingOrder != "notes/order.md" {
		t.Fatalf("example: %+v", f)
	}
}

// TestArchiveRefusesPlantedSymlink: a room that plants drafts/scene.md -> a host file does not
// get the host's bytes archived (and later sealed) as its draft.
func TestArchiveRefusesPlantedSymlink(t *testing.T) {
	p, out := planDir(t, basePlan)
	exp := filepath.Join(out, "exp")
	if _, err := Prepare(p, exp); err != nil {
		t.Fatal(err)
	}
	e, _ := Load(exp)
	id := "claude-sonnet-4-5"
	secret := filepath.Join(t.TempDir(), "host-secret")
	os.WriteFile(secret, []byte(strings.Repeat("host secret ", 20)), 0o600)
	if err := os.Symlink(secret, filepath.Join(e.Work(id), "drafts", "scene.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := archiveDrafts(e.Work(id), e.Record(id)); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("archive of a planted symlink: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(e.Record(id), "artifacts", "scene.md")); err == nil {
		t.Fatalf("the host file was archived as the draft: %q", data)
	}
	if m := missingOutputs(e.Plan, e.Work(id)); len(m) != 1 {
		t.Fatalf("a symlinked output counts as delivered: %v", m)
	}
}

// TestResumeFindsAWallAMovedAttemptHolds: a resume stopped (kill -9) after it moved the
// stopped attempt to attempts/01 but before state.json said so leaves the writer resumable:
// inspect and the next resume read the wall from where it was put.
func TestResumeFindsAWallAMovedAttemptHolds(t *testing.T) {
	p, out := planDir(t, basePlan)
	exp := filepath.Join(out, "exp")
	if _, err := Prepare(p, exp); err != nil {
		t.Fatal(err)
	}
	e, _ := Load(exp)
	id := "codex-gpt-5.1-codex"
	s, _ := e.State(id)
	s.Status = "failed"
	events, err := os.ReadFile("testdata/codex-quota-events.jsonl") // codex 0.171.0 at tare's model server's quota wall
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(e.Record(id), "attempts", "01")
	os.MkdirAll(moved, 0o755)
	os.WriteFile(filepath.Join(moved, "events.jsonl"), events, 0o644)
	stop, session := resumableStop(e, id, s, true)
	if stop == nil || session == "" {
		t.Fatalf("the wall in the moved attempt is not found: %v %q", stop, session)
	}
	if _, err := archiveAttempt(e, id, s, "quota"); err != nil || len(s.Attempts) != 1 || s.Attempts[0].Record != moved {
		t.Fatalf("archiving again after the crash: %v %+v", err, s.Attempts)
	}
	if data, _ := os.ReadFile(filepath.Join(moved, "events.jsonl")); !bytes.Equal(data, events) {
		t.Fatal("the moved attempt's stream changed")
	}
}
