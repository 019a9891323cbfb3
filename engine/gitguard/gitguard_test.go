package gitguard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGitGuardNewRepoAndGitfile: a .git the room made where the project had none (the
// project may sit inside a repository whose git would then use it) is moved aside and named;
// a gitfile (.git pointing elsewhere, as in a worktree) is guarded whole; a symlinked .git is refused, since
// a bind would follow it.
func TestGitGuardNewRepoAndGitfile(t *testing.T) {
	ctx := context.Background()
	project := t.TempDir()
	g, err := New(ctx, project, "")
	if err != nil || len(g.Paths) != 0 {
		t.Fatalf("a project without .git: %v, %v", g.Paths, err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	g.After(ctx, &out)
	if _, err := os.Stat(filepath.Join(project, ".git")); err == nil {
		t.Error("the room's .git is still where git would use it")
	}
	if _, err := os.Stat(filepath.Join(project, ".git-from-room", "hooks")); err != nil || !strings.Contains(out.String(), "moved it to "+filepath.Join(project, ".git-from-room")) {
		t.Errorf("not moved aside and named: %v; %q", err, out.String())
	}

	// A worktree of a repository outside the project: its .git is a gitfile.
	main := t.TempDir()
	gitfile := filepath.Join(t.TempDir(), "wt")
	for _, args := range [][]string{{"init", "-q", main}, {"-C", main, "-c", "user.name=op", "-c", "user.email=op@example.com", "commit", "-q", "--allow-empty", "-m", "start"},
		{"-C", main, "worktree", "add", "-q", gitfile}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if g, err := New(ctx, gitfile, ""); err != nil || !slices.Equal(g.Paths, []string{".git"}) {
		t.Errorf("a gitfile: guarded %v, %v", g.Paths, err)
	}

	linked := t.TempDir()
	if err := os.Symlink(filepath.Join(project, ".git-from-room"), filepath.Join(linked, ".git")); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ctx, linked, ""); err == nil || !strings.Contains(err.Error(), "symlink") || !strings.Contains(err.Error(), "fix:") {
		t.Errorf("a symlinked .git: %v", err)
	}
}

// TestGitGuardNeverRunsAProjectGit: the guard lists submodules with git; a git found on
// PATH inside the project (direnv's PATH_add does this) is the room's to write, so it is
// refused, not run.
func TestGitGuardNeverRunsAProjectGit(t *testing.T) {
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(project, "bin")
	os.MkdirAll(bin, 0o755)
	mark := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	_, err := New(context.Background(), project, "")
	if err == nil || !strings.Contains(err.Error(), "the PATH entry "+bin) || !strings.Contains(err.Error(), "inside "+project) || !strings.Contains(err.Error(), "fix: set programs.git") {
		t.Errorf("a git inside the project: %v", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("tare ran the project's git")
	}
}

// TestGitGuardIncludes: a config file the repository includes from inside the project is
// guarded like the config; one it names that does not exist yet is moved aside if the room
// makes it; one outside the project is left alone (the room cannot write it).
func TestGitGuardIncludes(t *testing.T) {
	ctx := context.Background()
	project := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	os.WriteFile(filepath.Join(project, "shared.gitconfig"), []byte("[include]\n\tpath = nested.gitconfig\n"), 0o644)
	os.WriteFile(filepath.Join(project, "nested.gitconfig"), []byte("[diff]\n\trenames = true\n"), 0o644)
	for _, kv := range [][]string{{"include.path", "../shared.gitconfig"}, {"includeIf.gitdir:/nowhere/.path", "../later.gitconfig"}, {"--add", "include.path", "/etc/outside.gitconfig"}} {
		if out, err := exec.Command("git", append([]string{"-C", project, "config"}, kv...)...).CombinedOutput(); err != nil {
			t.Fatalf("git config %v: %v: %s", kv, err, out)
		}
	}
	g, err := New(ctx, project, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".git/config", "shared.gitconfig", "nested.gitconfig"} {
		if !slices.Contains(g.Paths, want) {
			t.Errorf("guarded %v, want %s among them", g.Paths, want)
		}
	}
	for _, p := range g.Paths {
		if strings.Contains(p, "outside") || strings.Contains(p, "later") {
			t.Errorf("guarded %s", p)
		}
	}
	os.WriteFile(filepath.Join(project, "later.gitconfig"), []byte("[core]\n\tfsmonitor = touch x\n"), 0o644)
	var out strings.Builder
	g.After(ctx, &out)
	if _, err := os.Stat(filepath.Join(project, "later.gitconfig-from-room")); err != nil {
		t.Errorf("the include the room made was not moved aside: %v; %q", err, out.String())
	}
}

// TestGitGuardProjectInsideARepository: a project that is a folder of a larger repository
// has no .git of its own, yet the outer repository's "git add -A" would make a repository
// the room creates in it a submodule: that repository's git folder is moved aside too.
func TestGitGuardProjectInsideARepository(t *testing.T) {
	ctx := context.Background()
	outer := t.TempDir()
	project := filepath.Join(outer, "service")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "main.go"), []byte("package main\n"), 0o644)
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	g, err := New(ctx, project, "")
	if err != nil || !g.repo {
		t.Fatalf("a project inside a repository: repo %v, %v", g != nil && g.repo, err)
	}
	if out, err := exec.Command("git", "init", "-q", filepath.Join(project, "vendor", "lib")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	var out strings.Builder
	g.After(ctx, &out)
	if _, err := os.Stat(filepath.Join(project, "vendor", "lib", ".git-from-room")); err != nil {
		t.Errorf("the repository the room made was not moved aside: %v; %q", err, out.String())
	}
}

// TestGitGuardMovesNothingThroughASymlink: the paths the guard moves aside can come from the
// room (a gitlink it put in the index). One that runs through a symlink the room planted
// ("x -> a folder outside the project") is refused and named; the folder outside stays where
// it was. A new repository in a real folder of the project is still moved aside.
func TestGitGuardMovesNothingThroughASymlink(t *testing.T) {
	project, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "y", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(project, "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, "sub", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := &Guard{project: project, had: map[string]bool{}}
	var out strings.Builder
	g.aside(&out, "x/y/.git")
	if _, err := os.Stat(filepath.Join(outside, "y", ".git")); err != nil {
		t.Errorf("the folder outside the project was moved: %v", err)
	}
	if !strings.Contains(out.String(), "below a symlink") {
		t.Errorf("the refusal is not said: %q", out.String())
	}
	g.aside(&out, "sub/.git")
	if _, err := os.Stat(filepath.Join(project, "sub", ".git-from-room")); err != nil {
		t.Errorf("a new repository in the project was not moved aside: %v\n%s", err, out.String())
	}
}
