package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/capsule"
	"tare/engine/journal"
)

// demoStore gives the demo run's store real capsules: "start" (the project before the run)
// and a-1's end, which changed a Go file line by line, a binary file and a big log, and
// added a file; so the diff views are drawn from what engine.TailChanges makes of them.
func demoStore(t testing.TB, calDir string) {
	t.Helper()
	store, err := capsule.Open(filepath.Join(calDir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cart strings.Builder
	cart.WriteString("package cart\n\n")
	for i := 0; i < 30; i++ {
		cart.WriteString("// line " + string(rune('a'+i%26)) + "\n")
	}
	cart.WriteString("func Total() int {\n\treturn sum\n}\n")
	write("src/cart.go", cart.String())
	write("logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	write("build.log", strings.Repeat("ok\n", 100<<10))
	ctx := context.Background()
	if _, err := store.Snap(ctx, ws, "start"); err != nil {
		t.Fatal(err)
	}
	write("src/cart.go", strings.Replace(cart.String(), "\treturn sum\n", "\treturn round(sum)\n", 1))
	write("src/round.go", "package cart\n\nfunc round(x int) int { return x }\n")
	write("logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR2")
	write("build.log", strings.Repeat("fail\n", 100<<10))
	if _, err := store.Snap(ctx, ws, "a-1-end"); err != nil {
		t.Fatal(err)
	}
}

// realDiff makes the stub answer CapsuleDiff with the real engine's TailChanges.
func realDiff(s *stubEngine) {
	s.capsuleDiff = journal.TailChanges
}

// d shows what the tail changed as a unified diff with the content (not names only), binary
// and big files in a line each; the pane scrolls; moving the selection keeps it open.
func TestTailDiffShowsContent(t *testing.T) {
	stateDir, cal, _ := demoState(t)
	demoStore(t, cal)
	stub := newStub()
	realDiff(stub)
	tm := newTestModel(t, stateDir, stub, 100, 30)
	tm.send(openRunMsg{cal})
	tm.send(openTailMsg{cal, "a-1"})
	selectRow(t, tm.tail.calls, "2")
	tm.key("d")
	if tm.tail.diff == nil {
		t.Fatalf("no diff pane:\n%s", tm.View())
	}
	tm.tail.diff.GotoTop()
	whole := ""
	for {
		whole += tm.tail.diff.View() + "\n"
		if tm.tail.diff.AtBottom() {
			break
		}
		tm.key("pgdown") // the diff has the focus after d
	}
	for _, want := range []string{
		"what tail a-1 changed", "--- a/src/cart.go", "+++ b/src/cart.go", "-    return sum", "+    return round(sum)",
		"--- /dev/null", "+++ b/src/round.go", "+func round(x int) int { return x }",
		"modified logo.png: 16 → 17 bytes (binary), not shown", "modified build.log: 307200 → 512000 bytes (over 256 KiB), not shown",
	} {
		if !strings.Contains(whole, want) {
			t.Errorf("the diff lacks %q:\n%s", want, whole)
		}
	}
	if !strings.Contains(tm.View(), "Changes of tail a-1") {
		t.Errorf("title:\n%s", tm.View())
	}
	tm.key("tab") // back to the list; the diff stays open as the selection moves
	tm.key("j")
	if tm.tail.diff == nil || tm.tail.onDiff {
		t.Fatal("moving the selection closed the diff or took the focus")
	}
}
