// Package gitguard keeps a room that writes the real project (an attached agent) from
// changing what git on the host later runs: hooks, config, a planted .git.
package gitguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"tare/engine/journal"
	"tare/sandbox"
)

// gitRuns are the entries of a git folder from which git on the host runs commands or takes
// its settings: the config (core.fsmonitor, core.sshCommand, filters, aliases), the hooks,
// info/ (attributes naming filter drivers), the per-worktree config, commondir (which moves
// all of the above elsewhere), and the git folders of submodules and worktrees.
var gitRuns = []string{"config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees"}

// Guard keeps an attached run, whose room writes the real project, from changing what git
// on the host later runs: what exists is bound read-only in the room (Paths, for
// sandbox.Room.Guard); what the room creates in its place is moved aside after the run and
// named (After). The agent's ordinary git work (objects, the index, refs, logs) still
// reaches the project.
type Guard struct {
	project string
	git     string          // the host's git (sandbox.LookHost), "" when there is none
	Paths   []string        // guarded paths, relative to the project
	dirs    []string        // git folders whose gitRuns entries are checked after the run
	had     map[string]bool // relative paths that existed before the run
	watch   []string        // paths git would read that did not exist: checked after the run
	repo    bool            // the project is in a git work tree (its index may gain submodules)
}

// New looks at the project's git folder and those of its submodules before the run. git is
// the git executable tare's config names (programs.git), "" to take it from PATH; either way
// never from a folder the room writes.
func New(ctx context.Context, project, git string) (*Guard, error) {
	git, err := hostGit(project, git)
	if err != nil {
		return nil, err
	}
	g := &Guard{project: project, git: git, had: map[string]bool{}}
	st, err := os.Lstat(filepath.Join(project, ".git"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The project may still sit in a repository whose git would see what the room adds.
	case err != nil:
		return nil, fmt.Errorf("the project's .git: %v", err)
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s/.git is a symlink, so tare cannot keep git's config and hooks out of the room's reach; fix: run tare on a checkout whose .git is a folder", project)
	case !st.IsDir():
		g.guard(".git") // a gitfile: "gitdir: <elsewhere>", which git follows
	default:
		if err := g.guardDir(ctx, ".git"); err != nil {
			return nil, err
		}
	}
	repos, inRepo, err := innerRepos(ctx, project, git)
	if err != nil {
		return nil, fmt.Errorf("listing the repositories inside the project: %v; fix: repair the repository (git status shows what is wrong)", err)
	}
	g.repo = inRepo
	for _, sub := range repos {
		rel := path.Join(sub, ".git")
		st, err := os.Lstat(filepath.Join(project, filepath.FromSlash(rel)))
		switch {
		case err != nil:
			continue // a submodule not checked out; after() looks again
		case st.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s/%s is a symlink, so tare cannot keep that repository's git config out of the room's reach; fix: make it a folder or a gitfile", project, rel)
		case st.IsDir():
			if err := g.guardDir(ctx, rel); err != nil {
				return nil, err
			}
		default:
			g.guard(rel)
		}
	}
	return g, nil
}

func (g *Guard) guard(rel string) {
	g.Paths = append(g.Paths, rel)
	g.had[rel] = true
}

// guardDir guards the gitRuns entries of the git folder rel that exist.
func (g *Guard) guardDir(ctx context.Context, rel string) error {
	g.dirs = append(g.dirs, rel)
	g.had[rel] = true
	for _, name := range gitRuns {
		p := path.Join(rel, name)
		st, err := os.Lstat(filepath.Join(g.project, filepath.FromSlash(p)))
		if err != nil {
			continue
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s/%s is a symlink, so tare cannot keep it out of the room's reach; fix: replace it with what it points to", g.project, p)
		}
		g.guard(p)
	}
	return g.guardIncludes(ctx, path.Join(rel, "config"), 0)
}

// guardIncludes guards the files inside the project that the config file rel includes
// (include.path, includeIf.*.path: a repository may include a tracked file such as
// ../.gitconfig), and what those include in turn; one that does not exist yet is checked
// after the run.
func (g *Guard) guardIncludes(ctx context.Context, rel string, depth int) error {
	abs := filepath.Join(g.project, filepath.FromSlash(rel))
	if _, err := os.Stat(abs); err != nil || depth > 8 {
		return nil
	}
	if g.git == "" {
		return nil
	}
	out, err := exec.CommandContext(ctx, g.git, "config", "--file", abs, "--null", "--get-regexp", `^include(if\..*)?\.path$`).Output()
	if err != nil {
		return nil // exit 1: no include
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		_, target, ok := strings.Cut(rec, "\n")
		if !ok || target == "" || strings.HasPrefix(target, "~") {
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		inc, err := filepath.Rel(g.project, filepath.Clean(target))
		if err != nil || inc == ".." || strings.HasPrefix(inc, "../") || g.had[filepath.ToSlash(inc)] {
			continue // outside the project: the room cannot write it
		}
		inc = filepath.ToSlash(inc)
		st, err := os.Lstat(target)
		switch {
		case err != nil:
			g.watch = append(g.watch, inc)
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s includes %s, a symlink, so tare cannot keep it out of the room's reach; fix: include the real file", abs, target)
		default:
			g.guard(inc)
			if err := g.guardIncludes(ctx, inc, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// After moves aside what the room made where git on the host would run it (a .git where
// there was none, a new hooks folder or commondir, a submodule's git folder), one line each
// on w. It runs once the room is gone, so nothing races it.
func (g *Guard) After(ctx context.Context, w io.Writer) {
	if !g.had[".git"] {
		g.aside(w, ".git")
	}
	for _, dir := range g.dirs {
		for _, name := range gitRuns {
			if p := path.Join(dir, name); !g.had[p] {
				g.aside(w, p)
			}
		}
	}
	for _, p := range g.watch {
		g.aside(w, p)
	}
	if !g.repo {
		return
	}
	repos, _, err := innerRepos(ctx, g.project, g.git)
	if err != nil {
		fmt.Fprintf(w, "tare: could not list the repositories inside the project after the run (%v); before running git in %s, look for .git folders the agent made\n", err, g.project)
		return
	}
	for _, sub := range repos {
		if p := path.Join(sub, ".git"); !g.had[p] {
			g.aside(w, p)
		}
	}
}

// aside renames rel to rel-from-room (or -from-room.N) when it exists, and says so. rel may
// come from the room (a gitlink it put in the index), so the rename happens in rel's folder
// opened below the project with no symlink on the way: a planted "x -> /elsewhere" cannot make
// the host move a folder outside the project.
func (g *Guard) aside(w io.Writer, rel string) {
	src := filepath.Join(g.project, filepath.FromSlash(rel))
	dir, base := path.Split(rel)
	if dir = strings.TrimSuffix(dir, "/"); dir == "" {
		dir = "."
	}
	root, err := unix.Open(g.project, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(root)
	parent, err := unix.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return
	}
	if err != nil {
		fmt.Fprintf(w, "%s\n", journal.Printable(fmt.Sprintf("tare: the agent pointed git at %s, which lies below a symlink (%v); tare moves nothing through it: remove the link before running git in %s", src, err, g.project)))
		return
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	name := base + "-from-room"
	for n := 2; unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil; n++ {
		name = fmt.Sprintf("%s-from-room.%d", base, n)
	}
	dst := filepath.Join(filepath.Dir(src), name)
	if err := unix.Renameat(parent, base, parent, name); err != nil {
		fmt.Fprintf(w, "%s\n", journal.Printable(fmt.Sprintf("tare: the agent made %s, which git on the host would run from, and moving it aside failed (%v); remove it before running git in %s", src, err, g.project)))
		return
	}
	fmt.Fprintf(w, "%s\n", journal.Printable(fmt.Sprintf("tare: the agent made %s, which git on the host would run from; moved it to %s: review it before moving it back", src, dst)))
}

// innerRepos lists the repositories inside the project that git on the host would run
// git in, with their own config: the submodules of the index (mode 160000 entries; git
// status runs git in each) and the untracked repositories (a "git add -A" makes them
// submodules). inRepo is false when the project is in no git work tree, or there is no git
// on the host: then there is nothing to list.
func innerRepos(ctx context.Context, project, git string) (repos []string, inRepo bool, err error) {
	if git == "" {
		return nil, false, nil
	}
	list := func(args ...string) ([]string, error) {
		// ls-files runs no hook; fsmonitor is switched off all the same.
		cmd := exec.CommandContext(ctx, git, append([]string{"-C", project, "-c", "core.fsmonitor=false", "ls-files", "-z"}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("git ls-files: %v: %s", err, strings.TrimSpace(errb.String()))
		}
		return strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00"), nil
	}
	staged, err := list("--stage")
	if err != nil {
		if _, serr := os.Lstat(filepath.Join(project, ".git")); errors.Is(serr, fs.ErrNotExist) && strings.Contains(err.Error(), "not a git repository") {
			return nil, false, nil
		}
		return nil, false, err
	}
	for _, rec := range staged {
		meta, name, ok := strings.Cut(rec, "\t")
		if ok && strings.HasPrefix(meta, "160000 ") {
			repos = append(repos, name)
		}
	}
	others, err := list("--others", "--exclude-standard")
	if err != nil {
		return nil, false, err
	}
	for _, name := range others {
		if dir, ok := strings.CutSuffix(name, "/"); ok {
			repos = append(repos, dir) // git lists an untracked repository as "dir/"
		}
	}
	return repos, true, nil
}

// hostGit is the git tare runs on the host ("" when there is none): configured, or from
// PATH, refused when it lies in the project or another folder an agent writes (sandbox.LookHost):
// PATH may name a folder of the project (direnv's PATH_add), which the room writes.
func hostGit(project, configured string) (string, error) {
	git, err := sandbox.LookHost(sandbox.HostProgram{Name: "git", Path: configured, Key: `programs.git = "/usr/bin/git"`, Avoid: []string{project}})
	if errors.Is(err, sandbox.ErrNoProgram) {
		return "", nil
	}
	return git, err
}
