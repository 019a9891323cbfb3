package modelserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseScript: a script is the operator's file, typed by hand. Whatever it holds,
// parsing never panics, and a refusal is one line that names the file.
func FuzzParseScript(f *testing.F) {
	for _, glob := range []string{"testdata/*.toml", "../demo/*.toml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("[[turn]]\np = \"hi\"\ntext = \"hello\"\n"))
	f.Add([]byte("[[turn]]\nerror = 529\nerror_times = -1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseScript(data, "the-script.toml")
		if err == nil {
			return
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "the-script.toml") {
			t.Fatalf("the refusal is not one line naming the file: %q", msg)
		}
	})
}
