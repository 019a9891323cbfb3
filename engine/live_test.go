package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/engine/journal"
	"tare/engine/run"
	"tare/modelserver"
)

// TestTailStopsWhenItsToolCallsCannotBeJournaled: a real agent on tare's model server, whose
// run's journal stops taking writes after its first tool call. The tail stops there (its
// agent does not go on through the script's other turns unrecorded) and runTail says the run
// cannot go on.
func TestTailStopsWhenItsToolCallsCannotBeJournaled(t *testing.T) {
	needRooms(t)
	const turns = 20
	var src strings.Builder
	for i := range turns {
		fmt.Fprintf(&src, "[[turn]]\ntext = \"Step %d.\"\nshell = \"echo %d >> steps.txt\"\n\n", i, i)
	}
	src.WriteString("[[turn]]\ntext = \"Done.\"\n")
	script, err := modelserver.ParseScript([]byte(src.String()), "steps.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptServer(t, script)
	env, start := newTestRun(t, "codex", srv.Addr(), "true")
	bus := journal.NewBus()
	r, err := run.Create(filepath.Join(t.TempDir(), "run"), bus)
	if err != nil {
		t.Fatal(err)
	}
	env.run = r
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sub := bus.Subscribe(ctx, 64)
	go func() {
		for e := range sub.C() {
			if e.ToolCall != nil {
				r.Close() // the journal's file is gone from under the run
				return
			}
		}
	}()
	spec := tailSpec{ID: "t", Side: journal.Side{Key: "a", Agent: "codex"}, How: "fresh", Prompt: "Do the steps.", Start: start}
	err = runTail(ctx, env, spec)
	if n := len(srv.Requests()); n >= turns {
		t.Fatalf("the agent made %d model calls of the script's %d: it went on unrecorded after the journal failed", n, turns+1)
	}
	if err == nil || !strings.Contains(err.Error(), "the journal cannot be written, so the run stops") {
		t.Fatalf("runTail: %v, want the run stopped for its journal", err)
	}
	t.Logf("stopped after %d model calls of %d", len(srv.Requests()), turns+1)
}
