package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPrintable: whatever an agent wrote, its printable form is valid UTF-8 with no control
// character but newline and tab (no ESC, CR, C1), printing it again changes nothing, and text
// with nothing to escape comes back as it was.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "plain", "tab\tand\nnewline", "\x1b]52;c;aGk=\x07", "\x1b[2J", "over\rwrite", "\xff\xfe", "\u009b31m", "caf\u00e9 \U0001F600", `\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) = %q: not UTF-8", s, p)
		}
		for _, r := range p {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("Printable(%q) = %q holds control %U", s, p, r)
			}
		}
		if again := Printable(p); again != p {
			t.Fatalf("Printable is not idempotent on %q: %q then %q", s, p, again)
		}
		if clean(s) && p != s {
			t.Fatalf("clean %q came back as %q", s, p)
		}
	})
}

// FuzzReadJournal: a journal is a file anyone may have edited or a crash may have torn;
// reading it never panics, keeps only whole events (a torn last line is left out, not an
// error), and a bad line elsewhere is an error naming the file and line, on one line.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","run":"r","run_started":{"kind":"calibrate"}}` + "\n"))
	f.Add([]byte(`{"seq":1,"run":"r"}` + "\n" + `{"seq":2,"tail_finished":{"id":"a-0","status":"passed"}}` + "\n" + `{"seq":3,"tool_`))
	f.Add([]byte("not json\n{}\n"))
	f.Add([]byte(`{"seq":2,"tool_call":{"tail":"a-0","tool":"Bash","summary":"\u001b[2J"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, JournalFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		events, good, err := readJournal(filepath.Join(dir, JournalFile))
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, JournalFile+":") {
				t.Fatalf("the error is not one line naming the file and line: %q", msg)
			}
			return
		}
		if good < 0 || good > int64(len(data)) || (good > 0 && data[good-1] != '\n') {
			t.Fatalf("the well-formed prefix is %d bytes of %d", good, len(data))
		}
		if n := strings.Count(string(data[:good]), "\n"); n != len(events) {
			t.Fatalf("%d events from %d whole lines", len(events), n)
		}
		st := NewRunState("r")
		for _, e := range events {
			st.Apply(e)
		}
	})
}
