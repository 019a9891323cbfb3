package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// roomSetIDScript runs in an attached room: it tries the ways an agent makes a set-uid
// file or a set-gid folder in the project (red-team H1), noting what the room let it do.
const roomSetIDScript = `exec > room.out 2>&1
printf '#!/bin/sh\nid\n' > rootsh && chmod 755 rootsh && echo FILE-MADE
chmod 4755 rootsh && echo SETUID-SET
chmod u+s,g+s rootsh && echo SETUID-SET-SYMBOLIC
mkdir shared && chmod g+s shared && echo SETGID-FOLDER-SET
install -m 4755 rootsh installed && echo INSTALL-SETUID-SET
perl -MFcntl -e 'sysopen(my $f, "created", O_CREAT|O_WRONLY, 04755) or exit 1' && echo CREAT-SETUID-SET
`

// runAttachedScript runs a real Claude Code attached to project, with tare's model server
// playing a model whose one tool call is shell, and returns the room.out the call wrote in
// the project and tare's output.
func runAttachedScript(t *testing.T, r *run, project, shell string) (room, out string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "attached.toml")
	if err := os.WriteFile(script, []byte("[[turn]]\ntext = \"Working.\"\nshell = \""+shell+"\"\n\n[[turn]]\ntext = \"Done.\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tareBin, "claude", "--offline", "--script", script, "--yolo", "--project", project, "--", "-p", "go")
	cmd.Env = r.env()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tare claude: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(project, "room.out"))
	if err != nil {
		t.Fatalf("the script did not run in the room: %v\n%s", err, stderr.String())
	}
	return string(b), stderr.String()
}

// TestAttachedRunLeavesNoSetID: a real Claude Code, attached to a project and driven by
// tare's model server, runs chmod 4755 (and g+s, install -m, open with a set-uid mode) in
// a tool call. Each fails in the room, and once the run is over no file in the project has
// set-uid or set-gid: the project is the operator's, and such a file would run the agent's
// code as the operator for any local user.
func TestAttachedRunLeavesNoSetID(t *testing.T) {
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "rt.sh"), []byte(roomSetIDScript), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	room, _ := runAttachedScript(t, r, project, "bash rt.sh")
	t.Logf("in the room:\n%s", room)
	if !strings.Contains(room, "FILE-MADE") {
		t.Fatalf("the room could not make an ordinary executable")
	}
	for _, refused := range []string{"SETUID-SET", "SETUID-SET-SYMBOLIC", "SETGID-FOLDER-SET", "INSTALL-SETUID-SET", "CREAT-SETUID-SET"} {
		if strings.Contains(room, refused+"\n") {
			t.Errorf("the room could do %s", refused)
		}
	}
	var bad []string
	err := filepath.WalkDir(project, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			bad = append(bad, fmt.Sprintf("%s %v", p, fi.Mode()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("set-uid or set-gid in the project after the run: %v", bad)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
