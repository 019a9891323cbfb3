package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"tare/sandbox"
)

// ErrNotInstalled is wrapped by Find's error when no candidate exists at all (as opposed to
// one that exists but cannot run): doctor shows such an agent as absent, not as a failure,
// since most operators use only some of the agents.
var ErrNotInstalled = errors.New("not found")

// FindOptions say where to look for an agent's CLI.
type FindOptions struct {
	// Bins maps an agent name to a binary path from tare's config
	// (agents.<name>.bin); it wins over every other place.
	Bins map[string]string
	// Search are folders that may hold <agent>/node_modules/.bin or
	// node_modules/.bin (tare's own agents/ folder next to its binary: an
	// install of each agent's CLI alone), tried in order. DefaultSearch gives
	// the usual list.
	Search []string
	// Avoid are folders no CLI may come from: the project, which an agent in
	// an attached run can write. tare runs the CLI it finds (`--version` on
	// the host, then in every room), so a CLI there would be the agent's own
	// code run as the operator.
	Avoid []string
	// PATH is searched last; empty means the process's PATH.
	PATH string
	// Sensitive, when set, names what binding a runtime path would expose
	// ("" when nothing); such a runtime is refused before anything runs.
	Sensitive func(path string) string
	// Home is the operator's HOME, for installers that drop the CLI in
	// ~/.local/bin without touching PATH; empty means os.UserHomeDir.
	Home string
	// VersionLater leaves Install.Version empty: the caller asks for it with
	// Install.AskVersion, beside work that needs only where the CLI is.
	VersionLater bool
}

// Install is a found CLI.
type Install struct {
	Name    string
	Bin     string // host path found (as given, symlinks not resolved)
	Version string // e.g. "2.1.197"
	// Runtime is the host path bound read-only at AgentDir/<its base name>:
	// for an npm install its node_modules folder, so .bin symlinks and the
	// package's dependencies resolve; for a standalone binary the file alone
	// (or the version folder it sits in).
	Runtime string
	// Command is the CLI's path inside the room, below AgentDir.
	Command string
	// Node is the host path of the node interpreter a script CLI runs on
	// ("" for a native binary). The room must hold it: /usr/bin/node is in
	// the /usr bind, any other place needs a bind of its own.
	Node string
}

// DefaultSearch is the usual search list: tare's own install, that is agents/
// next to the tare binary and one folder up from it (bin/tare in a checkout,
// as scripts/setup lays it out). Never the working dir: tare usually runs from
// the project, which the agent can write.
func DefaultSearch() []string {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dir := filepath.Dir(exe)
			dirs = append(dirs, filepath.Join(dir, "agents"), filepath.Join(filepath.Dir(dir), "agents"))
		}
	}
	return dirs
}

// inside returns the folder of avoid that holds p, or p's real path, or "".
func inside(p string, avoid []string) string {
	paths := []string{p}
	if abs, err := filepath.Abs(p); err == nil {
		paths = append(paths, abs)
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		paths = append(paths, real)
	}
	for _, dir := range avoid {
		if dir == "" {
			continue
		}
		dirs := []string{dir}
		if abs, err := filepath.Abs(dir); err == nil {
			dirs = append(dirs, abs)
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dirs = append(dirs, real)
		}
		for _, d := range dirs {
			for _, q := range paths {
				if within(q, d) {
					return dir
				}
			}
		}
	}
	return ""
}

// within says whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// cli describes how to find one agent's binary.
type cli struct {
	name    string // agent name, the config key agents.<name>.bin
	bin     string // binary name
	install string // how to install it, for errors
}

// find runs the common search: config, search list, PATH, ~/.local/bin.
func (c cli) find(o FindOptions) (Install, error) {
	bin, err := c.locate(o)
	if err != nil {
		return Install{}, err
	}
	inst, err := runtimeOf(c.name, bin)
	if err != nil {
		return Install{}, err
	}
	if o.Sensitive != nil {
		if bad := o.Sensitive(inst.Runtime); bad != "" {
			return Install{}, fmt.Errorf("%s: %s would bind %s, which holds %s, into every room; fix: install the CLI in a folder of its own and point agents.%s.bin in tare's config there",
				c.name, bin, inst.Runtime, bad, c.name)
		}
	}
	if inst.Node, err = interpreter(bin, o.PATH, o.Avoid); err != nil {
		return Install{}, fmt.Errorf("%s: %s: %w", c.name, bin, err)
	}
	if o.VersionLater {
		return inst, nil
	}
	if inst.Version, err = inst.AskVersion(context.Background()); err != nil {
		return Install{}, err
	}
	return inst, nil
}

// AskVersion runs the CLI with --version (on the host, in a throwaway HOME) and returns the
// version it prints: what Find fills Install.Version with. Ending ctx ends the CLI. A binary
// is asked once per process: the answer is kept by the file the command resolves to and its
// size and modification time (and the node that runs it), so a probe, a calibrate's sides and
// every tail pay for one start of a node CLI (seconds under load), and a changed binary is
// asked again.
func (i Install) AskVersion(ctx context.Context) (string, error) {
	key, keyed := versionKeyOf(i.Bin, i.Node)
	if keyed {
		if v, ok := versions.Load(key); ok {
			return v.(string), nil
		}
	}
	v, err := version(ctx, i.Name, i.Bin, i.Node)
	if err == nil && keyed {
		versions.Store(key, v)
	}
	return v, err
}

// versionKey names one binary as it is now: the file bin resolves to (an npm .bin entry is a
// link to the package's script), its size and modification time, and the node running it.
type versionKey struct {
	real, node  string
	size, mtime int64
	ino         uint64
}

// versions are the versions asked in this process, by versionKey.
var versions sync.Map

func versionKeyOf(bin, node string) (versionKey, bool) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return versionKey{}, false
	}
	st, err := os.Stat(real)
	if err != nil {
		return versionKey{}, false
	}
	k := versionKey{real: real, node: node, size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		k.ino = sys.Ino
	}
	return k, true
}

// locate returns the first existing binary.
func (c cli) locate(o FindOptions) (string, error) {
	if p := o.Bins[c.name]; p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s: agents.%s.bin = %q in tare's config: %v; fix the path or remove the key", c.name, c.name, p, err)
		}
		if dir := inside(p, o.Avoid); dir != "" {
			return "", fmt.Errorf("%s: agents.%s.bin = %q in tare's config is inside %s, which the agent can write; fix: install the CLI outside the project and point the key there", c.name, c.name, p, dir)
		}
		return p, nil
	}
	var tried []string
	// ok says whether p is a usable candidate, noting in tried why it is not.
	ok := func(p, label string) bool {
		if executable(p) != nil {
			tried = append(tried, label)
			return false
		}
		if dir := inside(p, o.Avoid); dir != "" {
			tried = append(tried, p+" (skipped: inside "+dir+", which the agent can write)")
			return false
		}
		return true
	}
	for _, dir := range o.Search {
		// The agent's own install first: its room binds that node_modules, which holds
		// its CLI and that CLI's dependencies, not every agent's.
		for _, p := range []string{filepath.Join(dir, c.name, "node_modules", ".bin", c.bin), filepath.Join(dir, "node_modules", ".bin", c.bin)} {
			if ok(p, p) {
				return p, nil
			}
		}
	}
	path := o.PATH
	if path == "" {
		path = os.Getenv("PATH")
	}
	safe := map[string]bool{}
	for _, dir := range sandbox.SafePATH(path, o.Avoid...) {
		safe[dir] = true
	}
	wd, _ := os.Getwd()
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, c.bin)
		if executable(p) != nil {
			continue
		}
		if !safe[dir] {
			root := inside(p, append([]string{wd}, o.Avoid...))
			if root == "" {
				root = "a project"
			}
			tried = append(tried, p+" (skipped: inside "+root+", which the agent can write)")
			continue
		}
		if ok(p, p) {
			return p, nil
		}
	}
	tried = append(tried, "PATH")
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home != "" {
		p := filepath.Join(home, ".local", "bin", c.bin)
		if ok(p, p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %s %w (looked in %s); install it with `%s`, or set agents.%s.bin in tare's config",
		c.name, c.bin, ErrNotInstalled, strings.Join(tried, ", "), c.install, c.name)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return errors.New("is a folder")
	}
	if st.Mode()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}

// runtimeOf works out what to bind under AgentDir and the in-room command: only the
// agent's own package, never the folder around it (a standalone binary in ~/.local/bin sits
// beside the operator's own scripts; a binary given as ~/claude sits in the home). The room
// binds Runtime at AgentDir/<its base name>.
func runtimeOf(name, bin string) (Install, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return Install{}, fmt.Errorf("%s: %s: %w", name, bin, err)
	}
	inst := Install{Name: name, Bin: bin}
	// <root>/node_modules/.bin/<x>: bind <root>/node_modules; the relative symlink resolves inside.
	if dir := filepath.Dir(abs); filepath.Base(dir) == ".bin" && filepath.Base(filepath.Dir(dir)) == "node_modules" {
		inst.Runtime = filepath.Dir(dir)
		inst.Command = filepath.Join(AgentDir, "node_modules", ".bin", filepath.Base(abs))
		return inst, nil
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Install{}, fmt.Errorf("%s: %s: %w", name, bin, err)
	}
	// A global npm install (/usr/local/lib/node_modules/pkg/...): bind the outermost
	// node_modules, so the package's own dependencies resolve.
	if i := strings.Index(real, "/node_modules/"); i > 0 {
		inst.Runtime = real[:i+len("/node_modules")]
		inst.Command = filepath.Join(AgentDir, real[i+1:])
		return inst, nil
	}
	// A standalone binary in a folder named for its version (share/agy/1.2.3/agy) may need
	// what sits beside it there: bind that folder. Any other: bind the file alone.
	if dir := filepath.Dir(real); versionRE.FindString(filepath.Base(dir)) == filepath.Base(dir) {
		inst.Runtime = dir
		inst.Command = filepath.Join(AgentDir, filepath.Base(dir), filepath.Base(real))
		return inst, nil
	}
	inst.Runtime = real
	inst.Command = filepath.Join(AgentDir, filepath.Base(real))
	return inst, nil
}

// interpreter returns the node binary a "#!/usr/bin/env node" script needs: from PATH, but
// never from a folder of the project or the working folder (sandbox.SafePATH), where an
// agent could have put one that tare would run on the host.
func interpreter(bin, path string, avoid []string) (string, error) {
	f, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := f.Read(head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) || !bytes.Contains(line, []byte("node")) {
		return "", nil
	}
	if path == "" {
		path = os.Getenv("PATH")
	}
	for _, dir := range append(sandbox.SafePATH(path, avoid...), "/usr/local/bin", "/usr/bin", "/bin") {
		if p := filepath.Join(dir, "node"); executable(p) == nil {
			return p, nil
		}
	}
	return "", errors.New("a node script, but node is not on PATH; install Node.js (apt-get install nodejs)")
}

// versionBound is how long a CLI's --version may take before it is taken to hang.
const versionBound = 10 * time.Minute

var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?`)

// version runs `bin --version` in a fresh empty HOME with a minimal env, so
// the CLI writes nothing of the operator's (codex creates $CODEX_HOME/tmp).
func version(ctx context.Context, name, bin, node string) (string, error) {
	home, err := os.MkdirTemp("", "tare-version-")
	if err != nil {
		return "", fmt.Errorf("%s: version check: %w", name, err)
	}
	defer os.RemoveAll(home)
	// A bound for a CLI that never answers, far past what a loaded machine takes: a node
	// CLI's --version took over 30 s at load 20, and a fixed 30 s killed it and failed a
	// probe that was fine. The caller's ctx (ctrl+c) ends it sooner.
	ctx, cancel := context.WithTimeout(ctx, versionBound)
	defer cancel()
	path := "/usr/local/bin:/usr/bin:/bin"
	if node != "" {
		path = filepath.Dir(node) + ":" + path
	}
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Dir = home
	cmd.WaitDelay = time.Second // a child that keeps its output open does not hold the caller
	cmd.Env = []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8",
		"DISABLE_AUTOUPDATER=1", "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0"}
	out, err := cmd.CombinedOutput() // pi prints its version on stderr
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("%s: `%s --version` did not answer in %s; fix: run it by hand to see why it hangs", name, bin, versionBound)
	}
	if err != nil {
		return "", fmt.Errorf("%s: `%s --version` failed: %v: %s", name, bin, err, firstLine(out))
	}
	// codex warns on stderr first; take the version from the line naming it.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "WARNING") {
			continue
		}
		if v := versionRE.FindString(line); v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s: `%s --version` printed no version: %q", name, bin, firstLine(out))
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}
