package capsule

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

type cmdError struct {
	err    error
	output string
}

func (e *cmdError) Error() string { return fmt.Sprintf("%v: %s", e.err, e.output) }

func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// runSnapMain runs `tare snap ARGS` as a process (this test binary as SnapMain) with stdin,
// returning stderr; stdout must stay empty.
func runSnapMain(t testing.TB, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TARE_TEST_SNAPMAIN=1")
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stdout.Len() > 0 {
		return stderr.String(), fmt.Errorf("tare snap wrote to stdout (the agent would see it): %q", stdout.String())
	}
	return stderr.String(), err
}

func TestSnapMainWithHookInput(t *testing.T) {
	hook, err := os.Open("testdata/claude_posttooluse.json") // from agents-offline/samples/claude_hooks_stdin.jsonl
	if err != nil {
		t.Fatal(err)
	}
	defer hook.Close()
	ws := t.TempDir()
	write(t, filepath.Join(ws, "hello.txt"), "hello from fake model (turn 1)\n", 0o644)
	if err := unix.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	storeDir := filepath.Join(t.TempDir(), "run")
	stderr, err := runSnapMain(t, hook, "--store", storeDir, "--work", ws)
	if err != nil || stderr != "" {
		t.Fatalf("tare snap: %v, stderr %q", err, stderr)
	}
	s, err := Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("%+v %v", list, err)
	}
	c := list[0]
	if c.Name() != "0000-toolu_7b03aaba8f5d4b33b0e2edfd" {
		t.Fatalf("capsule %s", c.Name())
	}
	if len(c.Unreadable) != 1 || c.Unreadable[0].Path != "pipe" || !strings.Contains(c.Unreadable[0].Error, "not a regular file") {
		t.Fatalf("unreadable %+v: exit 0 and recorded", c.Unreadable)
	}
	assertContent(t, s, c, "hello.txt", "hello from fake model (turn 1)\n")

	// --id wins over stdin, and the next capsule is step 1.
	if stderr, err := runSnapMain(t, strings.NewReader("not json"), "--store", storeDir, "--work", ws, "--id", "call_2"); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(storeDir, "capsules", "0001-call_2.json")); err != nil {
		t.Fatal(err)
	}
}

func TestSnapMainFailures(t *testing.T) {
	ws := t.TempDir()
	store := filepath.Join(t.TempDir(), "run")
	session, err := os.ReadFile("testdata/claude_sessionstart.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"hook without tool_use_id", string(session), nil, `the hook input (event "SessionStart") has no tool_use_id`},
		{"not JSON", "hello", nil, "read the hook input"},
		{"empty stdin", "", nil, "read the hook input"},
		{"missing workspace", "", []string{"--id", "x", "--work", "/nonexistent/ws"}, "open workspace"},
		{"bad id", "", []string{"--id", "../../etc"}, "snapshot id"},
		{"stray argument", "", []string{"extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--store", store, "--work", ws}, tt.args...)
			stderr, err := runSnapMain(t, strings.NewReader(tt.stdin), args...)
			var exit *exec.ExitError
			if err == nil || !asExit(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("want exit 1, got %v (stderr %q)", err, stderr)
			}
			if !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Fatalf("stderr %q, want one line containing %q", stderr, tt.want)
			}
		})
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}
