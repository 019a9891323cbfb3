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

// TestPagerFromAProjectIsRefused is red-team case 09 for the app's pager: a less planted in
// an activated project .venv/bin (first on PATH), or $PAGER naming one in the working
// folder, is refused in one line naming it, the entry and the fix; no pager is started.
func TestPagerFromAProjectIsRefused(t *testing.T) {
	project := t.TempDir()
	bin := filepath.Join(project, ".venv", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".venv", "pyvenv.cfg"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "less"), []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "stderr.log")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	for _, c := range []struct{ pager, want string }{
		{"", "the PATH entry " + bin + " holds a less"},
		{filepath.Join(bin, "less") + " -R", filepath.Join(bin, "less") + " (from $PAGER)"},
	} {
		t.Setenv("PAGER", c.pager)
		if c.pager != "" {
			t.Chdir(project)
		}
		tm := newTestModel(t, t.TempDir(), newStub(), 100, 30)
		if cmd := tm.openPager([]string{file}); cmd != nil {
			t.Errorf("PAGER=%q: openPager would start a pager from %s", c.pager, bin)
		}
		if !tm.statusErr || !strings.Contains(tm.status, c.want) || !strings.Contains(tm.status, "fix:") {
			t.Errorf("PAGER=%q: status %q, want one naming %q and the fix", c.pager, tm.status, c.want)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the planted less ran")
	}
}
