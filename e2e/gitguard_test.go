package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// roomGitScript runs in an attached room: it commits ordinary work, then tries every way
// it knows to make git on the host run its code (the config's fsmonitor, a hook, a config
// file the repository includes, a commondir pointing at a config of its own, a submodule
// with an fsmonitor, an untracked repository the operator's "git add -A" would make one),
// noting what the room let it do.
const roomGitScript = `exec > room.out 2>&1
echo made in the room > made.txt
git add made.txt && git -c user.name=room -c user.email=room@example.com commit -q -m "from the room" && echo COMMIT-OK
git config core.fsmonitor 'touch PWNED-fsmonitor; false' && echo FSMONITOR-SET
printf '#!/bin/sh\ntouch PWNED-hook\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo HOOK-SET
mv .git .git-old && echo GIT-MOVED && mv .git-old .git
printf '[core]\n\tfsmonitor = touch PWNED-include; false\n' >> shared.gitconfig && echo INCLUDE-SET
git init -q --bare evil && git -C evil config core.fsmonitor 'touch PWNED-commondir; false'
git init -q sub && git -C sub -c user.name=room -c user.email=room@example.com commit -q --allow-empty -m s
git -C sub config core.fsmonitor 'touch ../PWNED-submodule; false'
git add sub && echo SUBMODULE-ADDED
git init -q tools/x && git -C tools/x -c user.name=room -c user.email=room@example.com commit -q --allow-empty -m x && git -C tools/x config core.fsmonitor 'touch ../../PWNED-nested; false' && echo NESTED-MADE
echo ../evil > .git/commondir && echo COMMONDIR-SET
`

// TestAttachedRunCannotArmHostGit: a real Claude Code, attached to a project that is a git
// repository and driven by tare's model server, commits ordinary work and tries to leave
// code that git on the host would run. The commit lands in the project; the fsmonitor and
// hook writes fail in the room; the commondir and the git folders of the repositories it
// made are moved aside and named; the operator's git status, add and commit afterwards run
// nothing.
func TestAttachedRunCannotArmHostGit(t *testing.T) {
	project := t.TempDir()
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", project}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=op", "GIT_AUTHOR_EMAIL=op@example.com",
			"GIT_COMMITTER_NAME=op", "GIT_COMMITTER_EMAIL=op@example.com")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	host := func(args ...string) string {
		t.Helper()
		out, err := git(args...)
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return out
	}
	host("init", "-q")
	if err := os.WriteFile(filepath.Join(project, "rt.sh"), []byte(roomGitScript), 0o644); err != nil {
		t.Fatal(err)
	}
	// A repository that includes a tracked config file: the room must not write it either.
	if err := os.WriteFile(filepath.Join(project, "shared.gitconfig"), []byte("[diff]\n\trenames = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host("config", "include.path", "../shared.gitconfig")
	host("add", "rt.sh", "shared.gitconfig")
	host("commit", "-q", "-m", "start")
	r := newRun(t, "")
	room, out := runAttachedScript(t, r, project, "bash rt.sh")
	t.Logf("in the room:\n%s", room)
	for _, want := range []string{"COMMIT-OK", "SUBMODULE-ADDED", "NESTED-MADE", "COMMONDIR-SET"} {
		if !strings.Contains(room, want) {
			t.Errorf("the room could not do %s (ordinary git work must reach the project)", want)
		}
	}
	for _, refused := range []string{"FSMONITOR-SET", "HOOK-SET", "GIT-MOVED", "INCLUDE-SET"} {
		if strings.Contains(room, refused) {
			t.Errorf("the room could do %s", refused)
		}
	}
	for _, moved := range []string{".git/commondir", "sub/.git", "tools/x/.git"} {
		if !strings.Contains(out, filepath.Join(project, moved)+", which git on the host would run from; moved it to") {
			t.Errorf("tare did not name %s as moved aside:\n%s", moved, out)
		}
	}

	// The operator's git, afterwards, on the host.
	// git add -A would make the untracked repository a submodule, which status then enters.
	for _, args := range [][]string{{"status"}, {"add", "-A"}, {"status"}, {"commit", "-q", "--allow-empty", "-m", "operator"}} { // commit runs pre-commit
		if out, err := git(args...); err != nil {
			t.Errorf("git %v on the host after the run: %v: %s", args, err, out)
		}
	}
	if pwned, _ := filepath.Glob(filepath.Join(project, "PWNED-*")); len(pwned) > 0 {
		t.Errorf("git on the host ran what the room left: %v", pwned)
	}
	if log := host("log", "--format=%s"); !strings.Contains(log, "from the room") {
		t.Errorf("the room's commit is not in the project's history:\n%s", log)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
