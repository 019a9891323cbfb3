package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SafePATH is the folders of path (a PATH value) that tare may take a program from: absolute,
// and neither the working folder nor inside it, nor inside any of avoid (the projects a room
// writes), nor a Python virtualenv's bin folder. An activated .venv/bin or direnv's
// node_modules/.bin is a folder of the project on the operator's PATH: an agent in an attached
// run can put a bwrap, a node or a CLI there, and tare would run it on the host, as the
// operator, before any room exists.
func SafePATH(path string, avoid ...string) []string {
	roots := untrustedRoots(avoid)
	var out []string
	for _, dir := range filepath.SplitList(path) {
		if untrusted(dir, roots) == "" {
			out = append(out, dir)
		}
	}
	return out
}

// HostProgram says where tare may take one program it runs on the host (outside any room)
// from, and how the operator overrides that.
type HostProgram struct {
	// Name is the program ("sinfo", "git", "less").
	Name string
	// Path is the executable the config names ("" when it names none): it wins over PATH.
	Path string
	// From says where Path was given, for messages: "cluster.bin_dir in tare's config"
	// (empty: Key in tare's config), or "$PAGER".
	From string
	// Key is the config key that sets Path, with an example value, for the fix
	// (`cluster.bin_dir = "/usr/bin"`).
	Key string
	// Avoid are folders an agent writes besides the working folder: the projects, the
	// state folder where tails' workspaces live, a cluster's shared folder.
	Avoid []string
	// PATH is searched; "" means the process's PATH.
	PATH string
}

// ErrNoProgram is wrapped by LookHost's error when no place holds the program at all (as
// opposed to one tare refuses).
var ErrNoProgram = errors.New("not found")

// LookHost is the one way tare finds a program it runs on the host: the config's path when
// set, else the first PATH entry holding it (none: ErrNoProgram, as the shell finds none). A
// PATH entry that holds it but is no place to take a program from (relative, the working
// folder, inside a project or another folder an agent writes, a virtualenv) is refused, not
// skipped: the operator's shell would run that copy, and tare says so in one line with the
// entry and the fix. So is a configured path inside such a folder.
func LookHost(p HostProgram) (string, error) {
	roots := untrustedRoots(p.Avoid)
	if p.Path != "" {
		from := p.From
		if from == "" {
			from, _, _ = strings.Cut(p.Key, " ")
			from += " in tare's config"
		}
		if err := executable(p.Path); err != nil {
			return "", fmt.Errorf("%s: %s (from %s): %v; fix: give the path of an installed %s there", p.Name, p.Path, from, err, p.Name)
		}
		if why := untrusted(filepath.Dir(p.Path), roots); why != "" {
			return "", fmt.Errorf("%s: %s (from %s) is %s, which an agent can write; tare runs no host program from there; fix: give a system copy there", p.Name, p.Path, from, why)
		}
		return p.Path, nil
	}
	path := p.PATH
	if path == "" {
		path = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "." // an empty entry is the working folder, as the shell reads it
		}
		bin := filepath.Join(dir, p.Name)
		if executable(bin) != nil {
			continue
		}
		if why := untrusted(dir, roots); why != "" {
			return "", fmt.Errorf("%s: the PATH entry %s holds a %s and is %s, which an agent can write; tare runs no host program from there; fix: set %s in tare's config, or take %s out of PATH",
				p.Name, dir, p.Name, why, p.Key, dir)
		}
		return bin, nil
	}
	return "", fmt.Errorf("%s %w on PATH; fix: install it, or set %s in tare's config", p.Name, ErrNoProgram, p.Key)
}

// executable says why p is not a file tare can run, nil when it is.
func executable(p string) error {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return unwrapPath(err)
	case st.IsDir():
		return errors.New("a folder")
	case st.Mode().Perm()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// untrustedRoots are the folders no program may come from: avoid and the working folder,
// each as given and with its symlinks resolved. The working folder comes first, so a message
// calls it that.
func untrustedRoots(avoid []string) []string {
	if wd, err := os.Getwd(); err == nil {
		avoid = append([]string{wd}, avoid...)
	}
	var roots []string
	for _, a := range avoid {
		if a == "" {
			continue
		}
		roots = append(roots, filepath.Clean(a))
		if real, err := filepath.EvalSymlinks(a); err == nil {
			roots = append(roots, real)
		}
	}
	return roots
}

// untrusted says why dir (a PATH entry) is no place to take a program from ("relative", "the
// folder /p or inside it", "a virtualenv's bin folder"), or "" when it is one.
func untrusted(dir string, roots []string) string {
	if dir == "" || !filepath.IsAbs(dir) {
		return "relative (the working folder's)"
	}
	forms := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		forms = append(forms, real)
	}
	if r := underAny(forms, roots); r != "" {
		if wd, err := os.Getwd(); err == nil && (r == wd || r == realPath(wd)) {
			return "inside the working folder " + r
		}
		return "inside " + r
	}
	// A virtualenv's bin: pip writes there whatever a project's requirements install, and an
	// activated one is on PATH from any working folder.
	if venv := os.Getenv("VIRTUAL_ENV"); venv != "" && filepath.IsAbs(venv) {
		if r := underAny(forms, []string{filepath.Clean(venv)}); r != "" {
			return "inside the activated virtualenv " + r
		}
	}
	for _, f := range forms {
		if _, err := os.Lstat(filepath.Join(filepath.Dir(f), "pyvenv.cfg")); err == nil {
			return "a virtualenv's bin folder (" + filepath.Dir(f) + ")"
		}
	}
	return ""
}

// realPath is p with its symlinks resolved, or p when that fails.
func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// underAny returns the root of roots that holds one of paths, or "".
func underAny(paths, roots []string) string {
	for _, p := range paths {
		for _, r := range roots {
			if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) || r == "/" {
				return r
			}
		}
	}
	return ""
}
