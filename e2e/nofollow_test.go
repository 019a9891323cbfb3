package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/demo"
	"tare/engine/journal"
)

// hostFile is a file outside any run folder that a planted link points at; its text must
// never change.
func hostFile(t *testing.T) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "host-file")
	const text = "the operator's own file\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, text
}

func unchanged(t *testing.T, p, text, what string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != text {
		t.Errorf("%s wrote through the link: %s now holds %q (%v)", what, p, b, err)
	}
}

// TestGCRefusesASymlinkedLock is red-team case 26: tare gc on a run whose lock is a symlink
// to a host file refuses that run in one line naming its lock, collects none of its store,
// and leaves the host file as it was; the other runs are collected.
func TestGCRefusesASymlinkedLock(t *testing.T) {
	r := newRun(t, "")
	state := filepath.Join(r.home, ".local", "state", "tare")
	planted, plantedOrphan := gcRunDir(t, state, "planted", 4321)
	idle, idleOrphan := gcRunDir(t, state, "idle", 1234)
	target, text := hostFile(t)
	if err := os.Symlink(target, filepath.Join(planted, "lock")); err != nil {
		t.Fatal(err)
	}
	r.tare(t, "gc", "--keep-days", "0")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, filepath.Join(planted, "lock")+" is a symlink") {
		t.Errorf("tare gc on a run with a symlinked lock: exit %d, no line naming the link\n%s%s", r.code, r.stdout, r.stderr)
	}
	unchanged(t, target, text, "tare gc")
	if _, err := os.Stat(plantedOrphan); err != nil {
		t.Errorf("tare gc collected the store of the run it refused: %v", err)
	}
	if _, err := os.Stat(idleOrphan); !os.IsNotExist(err) {
		t.Errorf("tare gc left the orphan of %s, a run it may collect: %v", idle, err)
	}
}

// TestResumeRefusesLinksInTheRunFolder: a finished calibrate run whose journal.jsonl, then
// whose report.txt (its journal cut before the run's end, so resume writes the report
// again) is a symlink to a host file: tare resume refuses, naming the link, and the host
// file is as it was.
func TestResumeRefusesLinksInTheRunFolder(t *testing.T) {
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(r.home, "run")
	if r.tare(t, calibrateArgs(paths, paths.Script, out, 1, 1)...); r.code != 0 {
		t.Fatalf("tare calibrate: exit %d\n%s", r.code, r.stderr)
	}
	jpath := filepath.Join(out, journal.JournalFile)
	kept, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	target, text := hostFile(t)
	plant := func(name string) {
		p := filepath.Join(out, name)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}

	plant(journal.JournalFile)
	r.tare(t, "resume", out)
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, jpath+" is a symlink") {
		t.Errorf("tare resume with a symlinked journal: exit %d, want one line naming it\n%s%s", r.code, r.stdout, r.stderr)
	}
	unchanged(t, target, text, "tare resume (journal)")

	if err := os.Remove(jpath); err != nil {
		t.Fatal(err)
	}

	// The journal without its last line (the run's end): resume finishes the run and
	// writes its report.
	lines := strings.SplitAfter(strings.TrimSuffix(string(kept), "\n"), "\n")
	if err := os.WriteFile(jpath, []byte(strings.Join(lines[:len(lines)-1], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	plant("report.txt")
	r.tare(t, "resume", out)
	report := filepath.Join(out, "report.txt")
	if r.code == 0 || !strings.Contains(r.stderr, report+" is a symlink") {
		t.Errorf("tare resume with a symlinked report.txt: exit %d, want a line naming it\n%s%s", r.code, r.stdout, r.stderr)
	}
	unchanged(t, target, text, "tare resume (report)")
}
