package room

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCopyHomeFallsBackToTheBind: a planted home is copied into memory only when it holds
// nothing but regular files and folders (the working folder may be empty); a link, or another
// empty folder, which a copy would lose, leaves the twin on the bind of its host folder.
func TestCopyHomeFallsBackToTheBind(t *testing.T) {
	home := t.TempDir()
	cwd := filepath.Join(home, "proj")
	for _, d := range []string{cwd, filepath.Join(home, ".codex")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("x = 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	files, ok := copyHome(home, cwd)
	if !ok || len(files) != 1 || files[0].Path != filepath.Join(home, ".codex", "config.toml") || files[0].Mode != 0o640 || string(files[0].Data) != "x = 1\n" {
		t.Fatalf("copy of a home of files: %+v, %v", files, ok)
	}
	if err := os.Mkdir(filepath.Join(home, ".empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := copyHome(home, cwd); ok {
		t.Error("a home with an empty folder was copied: the copy would not hold the folder")
	}
	if err := os.Remove(filepath.Join(home, ".empty")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".codex/config.toml", filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	if _, ok := copyHome(home, cwd); ok {
		t.Error("a home with a link was copied: the copy would not hold the link")
	}
}
