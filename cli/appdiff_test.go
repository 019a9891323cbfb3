package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/capsule"
	"tare/engine/journal"
)

// The app's d shows what a tail changed with the content, as a unified diff: before, the
// engine listed "modified PATH" only, and the golden view showed a diff no code made.
func TestAppDiffHasContent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "calibrate-x")
	store, err := capsule.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	f := filepath.Join(ws, "greet.sh")
	os.WriteFile(f, []byte("#!/bin/sh\necho hello\n"), 0o755)
	ctx := context.Background()
	if _, err := store.Snap(ctx, ws, "start"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, []byte("#!/bin/sh\necho \"hello, tare\"\n"), 0o755)
	if _, err := store.Snap(ctx, ws, "a-0-end"); err != nil {
		t.Fatal(err)
	}
	j, err := journal.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []journal.Event{
		{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 1, Jobs: 1, Sides: []journal.Side{{Key: "a", Agent: "pi"}}}},
		{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}},
		{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusPassed, Passed: true}},
	} {
		j.Append(&e)
	}
	j.Close()
	text, err := (&appEngine{}).CapsuleDiff(ctx, dir, "a-0", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- a/greet.sh", "+++ b/greet.sh", "-echo hello", "+echo \"hello, tare\""} {
		if !strings.Contains(text, want) {
			t.Errorf("the diff lacks %q:\n%s", want, text)
		}
	}
}
