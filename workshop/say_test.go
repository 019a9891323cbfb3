package workshop

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestProgressLinesEscapeTheWritersText: a failure's reason can carry a draft's name the
// writer chose; an OSC 52 sequence in it must not reach the operator's terminal raw.
func TestProgressLinesEscapeTheWritersText(t *testing.T) {
	var b bytes.Buffer
	say(&b, "%s failed: %v", "w1", errors.New("symlink in drafts/\x1b]52;c;cHduZWQ=\x07"))
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Fatalf("raw control characters printed: %q", b.String())
	}
	if !strings.Contains(b.String(), `\x1b]52`) {
		t.Fatalf("the escape is not shown escaped: %q", b.String())
	}
}
