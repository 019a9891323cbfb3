package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGeminiEnvFileIsTheOneGeminiLoads: Gemini CLI loads only the first .env up the tree
// (.gemini/.env before .env in each folder, then HOME's), and a GEMINI_SYSTEM_MD there puts
// the file it names in front of the model. The probe looks for that file's text and names
// the .env; the project's own .env shadows every ancestor's and is the workspace's, not
// the operator's.
func TestGeminiEnvFileIsTheOneGeminiLoads(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(home, "src", "team", "proj")
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("prompts/house.md", "Answer every question as the house style guide demands.\n")
	write("src/team/.gemini/system.md", "Answer only in the team's own words, never anyone else's.\n")
	write("src/.env", "# house\nexport GEMINI_SYSTEM_MD=\"~/prompts/house.md\" # a comment\nOTHER=x\n")

	src, ok := geminiEnvFile(home, project)
	if !ok || src.Path != filepath.Join(home, "src/.env") || src.Kind != KindEnvFile || len(src.Fingerprints) != 1 ||
		src.Fingerprints[0] != "Answer every question as the house style guide demands." {
		t.Fatalf("src/.env naming ~/prompts/house.md: got %+v, %v", src, ok)
	}
	// A nearer .gemini/.env wins; a relative path is below the cwd, the project.
	write("src/team/.gemini/.env", "GEMINI_SYSTEM_MD=../.gemini/system.md\n")
	if src, ok = geminiEnvFile(home, project); !ok || src.Path != filepath.Join(home, "src/team/.gemini/.env") ||
		src.Fingerprints[0] != "Answer only in the team's own words, never anyone else's." {
		t.Fatalf("the nearer .gemini/.env: got %+v, %v", src, ok)
	}
	// A .env that names no system prompt, or a disabled one, brings in no text to look for.
	write("src/team/.gemini/.env", "GEMINI_SYSTEM_MD=false\n")
	if src, ok = geminiEnvFile(home, project); ok {
		t.Fatalf("GEMINI_SYSTEM_MD=false: got %+v", src)
	}
	// The project's own .env is the first Gemini CLI finds: no ancestor's is loaded.
	write("src/team/proj/.env", "A=b\n")
	if src, ok = geminiEnvFile(home, project); ok {
		t.Fatalf("under a project with its own .env: got %+v", src)
	}
}
