package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadEndKeepsOnlyTheEnd: the tail detail keeps the end of an agent's stderr, however
// big the agent made it, reading no more than that end.
func TestReadEndKeepsOnlyTheEnd(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stderr.log")
	body := strings.Repeat("noise line\n", 10000) + "the last line\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data, cut, err := readEnd(p, stderrTail)
	if err != nil || !cut || len(data) != stderrTail || !strings.HasSuffix(string(data), "the last line\n") {
		t.Fatalf("readEnd: %d bytes, cut %v, err %v", len(data), cut, err)
	}
	small := filepath.Join(t.TempDir(), "small.log")
	if err := os.WriteFile(small, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, cut, err := readEnd(small, stderrTail); err != nil || cut || string(data) != "one\n" {
		t.Fatalf("a small file: %q, cut %v, err %v", data, cut, err)
	}
}
