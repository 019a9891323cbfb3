package sandbox

import (
	"bytes"
	"strings"
	"testing"
)

// TestRelayExitCodes: the relay, which starts every room's command, hands back what became
// of it: the command's own code, 128+n when signal n killed it, 127 for a command it cannot
// find and 126 for one it may not run, with a line on stderr naming the command.
func TestRelayExitCodes(t *testing.T) {
	requireBwrap(t)
	helper := buildHelper(t)
	for _, c := range []struct {
		argv   []string
		code   int
		stderr string
	}{
		{[]string{"/bin/sh", "-c", "exit 3"}, 3, ""},
		{[]string{"/bin/sh", "-c", "kill -USR1 $$"}, 128 + 10, ""},
		{[]string{"no-such-command"}, 127, "tare relay: start no-such-command"},
		{[]string{"/etc/passwd"}, 126, "tare relay: start /etc/passwd"},
	} {
		var errb bytes.Buffer
		r := Room{Workspace: t.TempDir(), Tare: testBinary(t), Helper: helper, Argv: c.argv, Stderr: &errb}
		p, err := Start(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		code, err := p.Wait()
		if err != nil || code != c.code || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("%q: exit %d, %v, stderr %q; want %d and %q", c.argv, code, err, errb.String(), c.code, c.stderr)
		}
	}
}
