package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStreamFileReadsOnFromItsOffset: each Read passes only the complete lines added since
// the last, at most max bytes of the file a call; a line split across Reads arrives whole;
// a replaced file is read from its start and says so; a line longer than the longest kept is
// skipped, not held.
func TestStreamFileReadsOnFromItsOffset(t *testing.T) {
	p := filepath.Join(t.TempDir(), "events.jsonl")
	f := &StreamFile{Path: p, Longest: 64}
	var got []string
	collect := func(l []byte) { got = append(got, string(l)) }
	if reset, more, err := f.Read(8, collect); reset || more || err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v %v %q", reset, more, err, got)
	}
	os.WriteFile(p, []byte("{\"a\":1}\n{\"b\":2}\n{\"c\""), 0o644)
	for more := true; more; {
		var err error
		if _, more, err = f.Read(5, collect); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, "|") != `{"a":1}|{"b":2}` || string(f.Pending()) != `{"c"` || f.offset != 20 {
		t.Fatalf("lines %q pending %q offset %d", got, f.Pending(), f.offset)
	}
	fh, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(":3}\n" + strings.Repeat("x", 200) + "\n{\"d\":4}\n")
	fh.Close()
	got = nil
	for more := true; more; {
		_, more, _ = f.Read(16, collect)
	}
	if strings.Join(got, "|") != `{"c":3}|{"d":4}` {
		t.Fatalf("after the append: %q (the overlong line must be skipped)", got)
	}
	// A new file in its place (a resume moved the stream aside): read from its start.
	os.Remove(p)
	os.WriteFile(p, []byte("{\"e\":5}\n"), 0o644)
	got = nil
	resets := 0
	f.Reset = func() { resets++ }
	if reset, _, _ := f.Read(0, collect); !reset || resets != 1 || strings.Join(got, "|") != `{"e":5}` {
		t.Fatalf("replaced file: reset %v (%d) lines %q", reset, resets, got)
	}
}
