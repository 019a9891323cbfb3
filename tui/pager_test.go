package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPagerGetsPrintableCopies: the pager is given copies of a tail's files with the
// agent's escape sequences escaped, never the files as the agent wrote them.
func TestPagerGetsPrintableCopies(t *testing.T) {
	src := filepath.Join(t.TempDir(), "stderr.log")
	if err := os.WriteFile(src, []byte("ok\n\x1b]52;c;cHduZWQ=\x07\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, copies, err := printableCopies([]string{src})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if len(copies) != 1 || copies[0] == src {
		t.Fatalf("copies %v of %s", copies, src)
	}
	b, err := os.ReadFile(copies[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(string(b), "\x1b\x07") || !strings.Contains(string(b), `\x1b]52`) {
		t.Fatalf("the pager's copy: %q", b)
	}
}
