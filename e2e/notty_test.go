package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/engine/journal"
)

// Without a terminal the app writes no screen codes: `tare` says in one line what to use
// instead and exits 2, leaving no state behind; `tare watch DIR` prints the run's events as
// plain lines and ends with the run.
func TestAppWithoutATerminal(t *testing.T) {
	r := newRun(t, "")
	r.tare(t) // stdin is /dev/null, stdout and stderr are pipes
	if r.code != 2 {
		t.Errorf("tare without a terminal exited %d, want 2", r.code)
	}
	if r.stdout != "" || strings.Contains(r.stderr, "\x1b") {
		t.Errorf("screen codes or output where there is no screen: stdout %q stderr %q", r.stdout, r.stderr)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(r.stderr, "tare watch DIR") {
		t.Errorf("want one line naming what to use instead, got %q", r.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(r.home, ".local", "state")); len(entries) > 0 {
		t.Errorf("left state behind: %v", entries)
	}

	dir := filepath.Join(t.TempDir(), "calibrate-x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := journal.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []journal.Event{
		{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 1, Jobs: 1, Sides: []journal.Side{{Key: "a", Agent: "pi"}}}},
		{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}},
		{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusPassed, Passed: true, Detail: "check ok"}},
		{RunFinished: &journal.RunFinished{Report: "a 1/1"}},
	} {
		if err := j.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	r.tare(t, "watch", dir)
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, "\x1b") {
		t.Fatalf("tare watch | cat: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"calibrate-x calibrate started", "tail a-0 passed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tare watch | cat lacks %q:\n%s", want, r.stdout)
		}
	}
}
