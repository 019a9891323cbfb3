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
