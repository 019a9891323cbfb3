package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tare/engine/journal"
)

// A launched process that refuses its arguments is reported with its own last line, once;
// one that writes the run's journal is reported started.
func TestLaunchWaitsForTheJournalOrTheRefusal(t *testing.T) {
	state, run := t.TempDir(), t.TempDir()
	l, err := Launch("/bin/sh", state, run, "-c", `echo starting; echo 'tare: --side "clod": unknown agent'; exit 2`)
	if err != nil {
		t.Fatal(err)
	}
	err = l.WaitForJournal(context.Background(), run, time.Minute)
	if err == nil || err.Error() != `tare -c did not start: --side "clod": unknown agent` {
		t.Fatalf("refusal: %v", err)
	}
	if filepath.Dir(l.Log) != filepath.Join(state, "logs") {
		t.Fatalf("log %s is not under the state's logs", l.Log)
	}
	l, err = Launch("/bin/sh", state, run, "-c", "touch "+journal.JournalFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WaitForJournal(context.Background(), run, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, journal.JournalFile)); err != nil {
		t.Fatal(err)
	}
}
