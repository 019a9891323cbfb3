package agent

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Plant then Personal: every planted item is found, with the canary in its
// fingerprints. (Which of them reach the model was checked by running each
// CLI on a planted home against a logging model server; see the report.)
func TestPlantThenPersonal(t *testing.T) {
	canary := Canary{Token: "tare-canary-7f3a"}
	want := map[string][]Kind{
		"claude": {KindInstructions, KindInstructions, KindMCP, KindEmail, KindSkill, KindAgent, KindCommand},
		"codex":  {KindInstructions, KindMCP, KindSkill, KindSkill, KindEmail},
		"pi":     {KindInstructions, KindSkill, KindSkill},
		"gemini": {KindInstructions, KindMCP, KindSkill, KindAgent, KindEmail, KindEnvFile},
		"agy":    {KindInstructions, KindMCP, KindSkill, KindEmail},
	}
	for _, a := range All() {
		home := t.TempDir()
		if err := a.Plant(home, canary); err != nil {
			t.Fatalf("%s: plant: %v", a.Name(), err)
		}
		var found []Kind
		for _, s := range a.Personal(home, "") {
			if s.Kind == KindLogin || s.Kind == KindSettings {
				continue // no fingerprints by design
			}
			if !slices.ContainsFunc(s.Fingerprints, func(f string) bool { return strings.Contains(f, canary.Token) }) {
				t.Errorf("%s: %s %s: no fingerprint holds the canary: %q", a.Name(), s.Kind, s.Path, s.Fingerprints)
			}
			for _, f := range s.Fingerprints {
				if len(f) < 10 {
					t.Errorf("%s: %s: fingerprint %q too short to be distinctive", a.Name(), s.Path, f)
				}
			}
			found = append(found, s.Kind)
		}
		slices.Sort(found)
		w := slices.Clone(want[a.Name()])
		slices.Sort(w)
		if !slices.Equal(found, w) {
			t.Errorf("%s: planted kinds found %v, want %v", a.Name(), found, w)
		}
	}
	if err := (Claude{}).Plant(t.TempDir(), Canary{Token: "Bad Token"}); err == nil {
		t.Error("a token unusable as a name was accepted")
	}
}

func TestPersonalAncestors(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "a", "proj")
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"CLAUDE.md", "AGENTS.md", "GEMINI.md", "a/CLAUDE.local.md", "a/.claude/rules/r.md"} {
		write(name, "Ancestor line that the operator wrote in "+name+"\n")
	}
	write("a/proj/CLAUDE.md", "The project's own file, which is not personal\n")
	write("a/proj/AGENTS.md", "The project's own file, which is not personal\n")
	home := t.TempDir()
	wants := map[string][]string{
		"claude": {"CLAUDE.md", "a/CLAUDE.local.md", "a/.claude/rules/r.md"},
		"codex":  {"AGENTS.md"},
		"pi":     {"AGENTS.md", "CLAUDE.md"},
		"gemini": {"GEMINI.md"},
		"agy":    {"GEMINI.md", "AGENTS.md"},
	}
	for _, a := range All() {
		var got []string
		for _, s := range a.Personal(home, project) {
			if rel, err := filepath.Rel(root, s.Path); err == nil && !strings.HasPrefix(rel, "..") {
				got = append(got, rel)
				if s.Kind != KindInstructions || len(s.Fingerprints) != 1 || !strings.HasPrefix(s.Fingerprints[0], "Ancestor line") {
					t.Errorf("%s: %s: %+v", a.Name(), rel, s)
				}
			}
		}
		slices.Sort(got)
		w := wants[a.Name()]
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: ancestor files %q, want %q", a.Name(), got, w)
		}
	}
}

func TestLines(t *testing.T) {
	text := "---\nname: x\ndescription: front matter is not text\n---\n" +
		"# Instructions\n\n- Always write tests before the code.\n" +
		"  1. Run gofmt on every file you touch.\n> Quoted advice that is long enough\n" +
		"short line\n```go\nfmt.Println(\"code fences skipped\")\n```\n|---|---|\n" +
		"- Always write tests before the code.\n"
	got := lines([]byte(text))
	want := []string{"Always write tests before the code.", "Run gofmt on every file you touch.",
		"Quoted advice that is long enough", `fmt.Println("code fences skipped")`}
	if !slices.Equal(got, want) {
		t.Errorf("lines:\n got %q\nwant %q", got, want)
	}
	// A file of headings only still gives its headings.
	if got := lines([]byte("# A heading that is long enough\n## tiny\n")); !slices.Equal(got, []string{"A heading that is long enough"}) {
		t.Errorf("headings only: %q", got)
	}
}

func TestBase64FormsFindAnEmailInsideAJWT(t *testing.T) {
	email := "operator@example.org"
	for _, prefix := range []string{`{"email":"`, `{"a":1,"email":"`, `{"xx":"yy","email":"`} {
		payload := base64.RawURLEncoding.EncodeToString([]byte(prefix + email + `","exp":1}`))
		found := false
		for _, form := range base64Forms(email) {
			if strings.Contains(payload, form) {
				found = true
			}
		}
		if !found {
			t.Errorf("no form of %q found in the payload of %s", email, prefix)
		}
		if strings.Contains(payload, base64Forms("someone.else@example.org")[0]) {
			t.Errorf("another address matched")
		}
	}
}

// TestTerseFilesHaveFingerprints: four short rules and a skill called pdf described in
// three words are recognisable by what the agents put in front of the model; a file of
// one two-word rule is not, and says why.
func TestTerseFilesHaveFingerprints(t *testing.T) {
	prints, unseen := textPrints([]byte("- Use tabs.\n- Be terse.\n- No emoji.\n- Never push.\n"))
	if len(prints) == 0 || unseen != "" {
		t.Fatalf("four short rules: fingerprints %q, unseen %q", prints, unseen)
	}
	// As Claude Code, Codex and pi show the file: verbatim, white space aside.
	shown := strings.Join(strings.Fields("Contents of CLAUDE.md:\n\n- Use tabs.\n- Be terse.\n- No emoji.\n- Never push.\n"), " ")
	for _, p := range prints {
		if !strings.Contains(shown, p) {
			t.Errorf("fingerprint %q is not in the file as shown", p)
		}
	}
	if prints, unseen := textPrints([]byte("---\nname: x\n---\nBe terse.\n")); len(prints) != 0 || !strings.Contains(unseen, "too short to recognise (9 characters") {
		t.Errorf("one short rule: fingerprints %q, unseen %q", prints, unseen)
	}
	if prints, unseen := textPrints([]byte("\n \n")); len(prints) != 0 || unseen != "" {
		t.Errorf("an empty file has nothing to see: fingerprints %q, unseen %q", prints, unseen)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "pdf", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\nname: pdf\ndescription: Fill PDF forms.\n---\nUse pdftk.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, ok := markdownDefinition(p, KindSkill, "pdf")
	if !ok || src.Unseen != "" {
		t.Fatalf("skill pdf: %+v", src)
	}
	// Claude Code's and Codex's skill lists, and pi's, with white space read as one space.
	for _, shown := range []string{"- pdf: Fill PDF forms. (file: r0/pdf/SKILL.md)", "<skill> <name>pdf</name> <description>Fill PDF forms.</description>"} {
		if !slices.ContainsFunc(src.Fingerprints, func(fp string) bool { return strings.Contains(shown, fp) }) {
			t.Errorf("no fingerprint of skill pdf %q is in %q", src.Fingerprints, shown)
		}
	}
	if err := os.WriteFile(p, []byte("---\nname: pdf\ndescription: PDF.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if src, _ := markdownDefinition(p, KindSkill, "pdf"); len(src.Fingerprints) != 0 || !strings.Contains(src.Unseen, `"pdf"`) {
		t.Errorf("skill pdf described as PDF.: %+v", src)
	}
}
