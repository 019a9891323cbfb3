// Package config reads tare's settings file, $XDG_CONFIG_HOME/tare/config.toml.
//
// Every setting has a default, so the file is optional. A bad file is refused with one line
// that names the file, the line, the key and the fix; tare never runs on a half-read config.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Config is tare's settings after defaults are applied.
type Config struct {
	// StateDir holds runs, probe readings and the capsule stores.
	StateDir string `toml:"state_dir"`
	// Bwrap is the bubblewrap executable; empty means $PATH, then /usr/bin/bwrap.
	Bwrap string `toml:"bwrap"`
	// Agents maps an agent name (claude, codex, pi, agy) to its settings.
	Agents map[string]Agent `toml:"agents"`
	// Network is what a room may reach when it talks to a real provider.
	Network Network `toml:"network"`
	// Room holds extra settings for every room.
	Room Room `toml:"room"`
	// Check is the room a run's --check runs in.
	Check Check `toml:"check"`
	// Tails is how tails are watched: when one is stalled.
	Tails Tails `toml:"tails"`
	// Cluster is where --on slurm sends tails.
	Cluster Cluster `toml:"cluster"`
	// Programs maps a program tare runs on the host (git, less) to its absolute path; unset,
	// it is taken from PATH, never from a PATH entry an agent can write (sandbox.LookHost).
	Programs map[string]string `toml:"programs"`

	// Path is the file this config was read from, or "" when none exists.
	Path string `toml:"-"`
}

// Agent is one agent CLI's settings.
type Agent struct {
	// Bin is the CLI's executable; empty means search agents/NAME/node_modules/.bin beside tare, then PATH.
	Bin string `toml:"bin"`
	// Args are added to every run of this agent (for example a model).
	Args []string `toml:"args"`
}

// Network bounds what the room's proxy to real providers lets through.
type Network struct {
	// Allow, when set, narrows each room's proxy: a room reaches only the host:port pairs
	// its agent needs (its reading declares them) that are also listed here. Unset: each
	// agent's own list.
	Allow []string `toml:"allow"`
}

// Room holds settings added to every room.
type Room struct {
	// ReadOnly lists host paths bound read-only into every room at the same path.
	ReadOnly []string `toml:"read_only"`
}

// Check is the room a check runs in: the finished workspace at /work, a fresh HOME, nothing
// of the operator's environment, no network, and only what this section names. The check runs
// what the agent wrote (a test suite, a script), so nothing here is given to it by default.
type Check struct {
	// ReadOnly lists host folders bound read-only, "HOST" at the same path or "HOST:ROOM"
	// (toolchains such as /usr/local/go).
	ReadOnly []string `toml:"read_only"`
	// Caches lists host folders bound read-write, "HOST" or "HOST:ROOM": what the check writes
	// there stays on the host, where the operator's own tools later read it.
	Caches []string `toml:"caches"`
	// Path lists folders inside the room put before /usr/local/bin:/usr/bin:/bin on PATH.
	Path []string `toml:"path"`
	// Env names variables of tare's own environment passed into the check's room.
	Env []string `toml:"env"`
	// Network gives the check the host's network (host loopback included); the report says so.
	Network bool `toml:"network"`
}

// SplitBind splits a [check] bind, "HOST" or "HOST:ROOM", into its host and room paths, with
// "~" in HOST expanded to the operator's home. The room path of "HOST" is HOST itself.
func SplitBind(entry string) (host, room string) {
	host, room, ok := strings.Cut(entry, ":")
	host = expand(host)
	if !ok {
		room = host
	}
	return host, room
}

// File is where tare reads its config: $XDG_CONFIG_HOME/tare/config.toml, or
// ~/.config/tare/config.toml when XDG_CONFIG_HOME is unset.
func File() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "tare", "config.toml")
}

// DefaultStateDir is $XDG_STATE_HOME/tare, or ~/.local/state/tare.
func DefaultStateDir() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "tare")
}

// Load reads the config at path. A missing file is not an error: the defaults are returned.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return defaults(&Config{}), nil
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	cfg, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	cfg.Path = path
	return cfg, nil
}

// Parse reads config text; name is the file it came from, for error messages.
func Parse(data []byte, name string) (*Config, error) {
	var cfg Config
	meta, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return nil, describe(err, name)
	}
	if undecoded := meta.Undecoded(); len(undecoded) > 0 {
		key := undecoded[0].String()
		return nil, fmt.Errorf("%s:%d: unknown key %q; fix: remove it or check its spelling against config.example.toml",
			name, lineOf(data, undecoded[0]), key)
	}
	if err := cfg.validate(name, data); err != nil {
		return nil, err
	}
	return defaults(&cfg), nil
}

// Known agent names; a config section for any other agent is a typo.
var knownAgents = []string{"agy", "claude", "codex", "pi"}

var hostPort = regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]{1,5}$`)

func (c *Config) validate(name string, data []byte) error {
	agents := make([]string, 0, len(c.Agents))
	for a := range c.Agents {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	for _, a := range agents {
		if !slices.Contains(knownAgents, a) {
			return fmt.Errorf("%s:%d: key agents.%s: unknown agent; fix: use one of %s",
				name, lineOf(data, toml.Key{"agents", a}), a, strings.Join(knownAgents, ", "))
		}
		if bin := c.Agents[a].Bin; bin != "" && !filepath.IsAbs(bin) {
			return fmt.Errorf("%s:%d: key agents.%s.bin: %q is not an absolute path; fix: give the full path to the %s executable",
				name, lineOf(data, toml.Key{"agents", a, "bin"}), a, bin, a)
		}
	}
	for _, h := range c.Network.Allow {
		if !hostPort.MatchString(h) {
			return fmt.Errorf("%s:%d: key network.allow: %q is not host:port; fix: write it as \"api.example.com:443\"",
				name, lineOf(data, toml.Key{"network", "allow"}), h)
		}
	}
	for _, p := range c.Room.ReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%s:%d: key room.read_only: %q is not an absolute path; fix: give the full host path",
				name, lineOf(data, toml.Key{"room", "read_only"}), p)
		}
		if bad := Sensitive(p); bad != "" {
			return fmt.Errorf("%s:%d: key room.read_only: %q would bring %s into every room; fix: bind a narrower folder",
				name, lineOf(data, toml.Key{"room", "read_only"}), p, bad)
		}
	}
	if err := c.Check.validate(name, data); err != nil {
		return err
	}
	if err := c.Cluster.validate(name, data); err != nil {
		return err
	}
	if err := c.Tails.validate(name, data); err != nil {
		return err
	}
	programs := make([]string, 0, len(c.Programs))
	for p := range c.Programs {
		programs = append(programs, p)
	}
	sort.Strings(programs)
	for _, p := range programs {
		line := lineOf(data, toml.Key{"programs", p})
		if p == "" || strings.ContainsAny(p, "/ ") {
			return fmt.Errorf("%s:%d: key programs.%s: not a program name; fix: name the program alone, e.g. programs.git", name, line, p)
		}
		if !filepath.IsAbs(c.Programs[p]) {
			return fmt.Errorf("%s:%d: key programs.%s: %q is not an absolute path; fix: give the full path, e.g. \"/usr/bin/%s\"", name, line, p, c.Programs[p], p)
		}
	}
	if c.Bwrap != "" && !filepath.IsAbs(c.Bwrap) {
		return fmt.Errorf("%s:%d: key bwrap: %q is not an absolute path; fix: give the full path to bwrap, or remove the key to use $PATH",
			name, lineOf(data, toml.Key{"bwrap"}), c.Bwrap)
	}
	if c.StateDir != "" && !filepath.IsAbs(expand(c.StateDir)) {
		return fmt.Errorf("%s:%d: key state_dir: %q is not an absolute path; fix: give the full path (~ is allowed)",
			name, lineOf(data, toml.Key{"state_dir"}), c.StateDir)
	}
	return nil
}

func (c Check) validate(name string, data []byte) error {
	for _, l := range []struct {
		key     string
		entries []string
		mode    string
	}{{"read_only", c.ReadOnly, "read-only"}, {"caches", c.Caches, "read-write"}} {
		line := lineOf(data, toml.Key{"check", l.key})
		for _, e := range l.entries {
			host, room := SplitBind(e)
			if !filepath.IsAbs(host) || !filepath.IsAbs(room) {
				return fmt.Errorf("%s:%d: key check.%s: %q is not an absolute path; fix: give the full host path, or HOST:ROOM with both absolute",
					name, line, l.key, e)
			}
			if bad := Sensitive(host); bad != "" {
				return fmt.Errorf("%s:%d: key check.%s: %q would bring %s into the check's room (%s); fix: bind a narrower folder",
					name, line, l.key, e, bad, l.mode)
			}
		}
	}
	for _, p := range c.Path {
		if !filepath.IsAbs(p) || strings.Contains(p, ":") {
			return fmt.Errorf("%s:%d: key check.path: %q is not an absolute folder without ':'; fix: give the folder as the room sees it, e.g. \"/usr/local/go/bin\"",
				name, lineOf(data, toml.Key{"check", "path"}), p)
		}
	}
	for _, v := range c.Env {
		switch {
		case !envName.MatchString(v):
			return fmt.Errorf("%s:%d: key check.env: %q is not a variable name; fix: give names only, e.g. \"GOFLAGS\"",
				name, lineOf(data, toml.Key{"check", "env"}), v)
		case v == "HOME" || v == "USER" || v == "PATH":
			return fmt.Errorf("%s:%d: key check.env: %s is set by the room itself; fix: remove it (use check.path for PATH entries)",
				name, lineOf(data, toml.Key{"check", "env"}), v)
		}
	}
	return nil
}

// Cluster is how tails are sent to a Slurm cluster (--on slurm): each tail is one sbatch job
// that runs `tare worker` on a node, with its workspace and results passing through Shared.
type Cluster struct {
	// Partition is the sbatch --partition; empty means the cluster's default.
	Partition string `toml:"partition"`
	// Account is the sbatch --account; empty means the operator's default.
	Account string `toml:"account"`
	// Time is the sbatch --time of one tail (Slurm's forms: "30", "1:00:00"); empty: 60 minutes.
	Time string `toml:"time"`
	// Memory is the sbatch --mem of one tail ("4G"); empty: 4G.
	Memory string `toml:"memory"`
	// CPUs is the sbatch --cpus-per-task of one tail; 0: 1.
	CPUs int `toml:"cpus"`
	// Flags are extra sbatch arguments, each one word (["--gres=gpu:0", "--qos=short"]).
	Flags []string `toml:"flags"`
	// Shared is a folder every node sees at the same path (a shared $HOME or scratch): the
	// tails' workspaces, events and results pass through it. Empty: <state_dir>/slurm, which
	// is right only when the state folder is itself shared.
	Shared string `toml:"shared"`
	// Tare is the tare executable as the nodes see it; empty: this tare's own path.
	Tare string `toml:"tare"`
	// BinDir is the folder holding Slurm's commands (sbatch, squeue, scancel, sinfo, srun);
	// empty: PATH, never an entry an agent can write.
	BinDir string `toml:"bin_dir"`
	// CallbackAddr is the host the nodes reach this machine at, for tare's model server and
	// proxy; empty: 127.0.0.1, right only when the nodes are this machine.
	CallbackAddr string `toml:"callback_addr"`
	// Transport is how workspaces and results travel: "shared" (the default: through
	// Shared, which every node sees) or "http" (tare serves them to the nodes over HTTP on
	// callback_addr, for nodes that do not share a filesystem with this machine).
	Transport string `toml:"transport"`
}

func (c Cluster) validate(name string, data []byte) error {
	if c.Shared != "" && !filepath.IsAbs(expand(c.Shared)) {
		return fmt.Errorf("%s:%d: key cluster.shared: %q is not an absolute path; fix: give the folder every node sees, e.g. \"/scratch/you/tare\"",
			name, lineOf(data, toml.Key{"cluster", "shared"}), c.Shared)
	}
	if c.Tare != "" && !filepath.IsAbs(c.Tare) {
		return fmt.Errorf("%s:%d: key cluster.tare: %q is not an absolute path; fix: give the full path of tare as the nodes see it",
			name, lineOf(data, toml.Key{"cluster", "tare"}), c.Tare)
	}
	if c.BinDir != "" && !filepath.IsAbs(c.BinDir) {
		return fmt.Errorf("%s:%d: key cluster.bin_dir: %q is not an absolute path; fix: give the folder holding sbatch and sinfo, e.g. \"/usr/bin\"",
			name, lineOf(data, toml.Key{"cluster", "bin_dir"}), c.BinDir)
	}
	if c.CPUs < 0 {
		return fmt.Errorf("%s:%d: key cluster.cpus: %d; fix: give 1 or more", name, lineOf(data, toml.Key{"cluster", "cpus"}), c.CPUs)
	}
	if c.Memory != "" && !memory.MatchString(c.Memory) {
		return fmt.Errorf("%s:%d: key cluster.memory: %q is not a size; fix: write it as sbatch --mem does, e.g. \"4G\" or \"512M\"",
			name, lineOf(data, toml.Key{"cluster", "memory"}), c.Memory)
	}
	if c.Time != "" && !slurmTime.MatchString(c.Time) {
		return fmt.Errorf("%s:%d: key cluster.time: %q is not a Slurm time; fix: write minutes or H:MM:SS, e.g. \"30\" or \"1:00:00\"",
			name, lineOf(data, toml.Key{"cluster", "time"}), c.Time)
	}
	for _, f := range c.Flags {
		if !strings.HasPrefix(f, "-") || strings.ContainsAny(f, " \t\n") {
			return fmt.Errorf("%s:%d: key cluster.flags: %q is not one sbatch option; fix: give each as one word, e.g. \"--qos=short\"",
				name, lineOf(data, toml.Key{"cluster", "flags"}), f)
		}
	}
	if c.Transport != "" && c.Transport != "shared" && c.Transport != "http" {
		return fmt.Errorf("%s:%d: key cluster.transport: %q; fix: give \"shared\" (through cluster.shared) or \"http\" (tare serves the nodes)",
			name, lineOf(data, toml.Key{"cluster", "transport"}), c.Transport)
	}
	if c.CallbackAddr != "" && strings.ContainsAny(c.CallbackAddr, ":/ ") {
		return fmt.Errorf("%s:%d: key cluster.callback_addr: %q is not a host; fix: give the host or IP the nodes reach this machine at, without a port",
			name, lineOf(data, toml.Key{"cluster", "callback_addr"}), c.CallbackAddr)
	}
	return nil
}

var (
	memory    = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
	slurmTime = regexp.MustCompile(`^([0-9]+-)?[0-9]+(:[0-9]{1,2}){0,2}$`)
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Sensitive names what a read-only bind of p would expose that the room exists to keep out
// ("" when nothing): the host root, /etc, or the home folder (p is it or holds it).
func Sensitive(p string) string {
	clean := filepath.Clean(p)
	home, _ := os.UserHomeDir()
	switch {
	case clean == "/":
		return "the whole host"
	case clean == "/etc":
		return "all of /etc"
	case home != "" && (clean == home || strings.HasPrefix(home, clean+"/")):
		return "your home folder"
	}
	return ""
}

func defaults(c *Config) *Config {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir()
	}
	c.StateDir = expand(c.StateDir)
	c.Cluster.Shared = expand(c.Cluster.Shared)
	if c.Agents == nil {
		c.Agents = map[string]Agent{}
	}
	if c.Programs == nil {
		c.Programs = map[string]string{}
	}
	return c
}

func expand(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, _ := os.UserHomeDir()
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p
}

// describe turns a TOML decode error into one line with the file, line, key and fix.
func describe(err error, name string) error {
	var perr toml.ParseError
	if errors.As(err, &perr) {
		return fmt.Errorf("%s:%d: %s; fix: correct the TOML syntax on that line", name, perr.Position.Line, perr.Message)
	}
	// Type mismatches come as plain errors: "toml: line 2 (last key "a.b"): incompatible types: TOML value
	// has type int64; destination has type string".
	if m := mismatch.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s:%s: key %s: the value is %s but must be %s; fix: write it as %s (see config.example.toml)",
			name, m[1], m[2], typeName(m[3]), typeName(m[4]), typeName(m[4]))
	}
	if m := tableMismatch.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s:%s: key %s: the value is %s but must be %s; fix: write it as a [%s] section (see config.example.toml)",
			name, m[1], m[2], typeName(m[4]), typeName(m[3]), m[2])
	}
	return fmt.Errorf("%s: %v", name, err)
}

var tableMismatch = regexp.MustCompile(`line (\d+) \(last key "([^"]*)"\): type mismatch for \S+: expected (\S+) but found (\S+)`)

var mismatch = regexp.MustCompile(`line (\d+) \(last key "([^"]*)"\): incompatible types: TOML value has type (\S+); destination has type (\S+)`)

// typeName says a Go or TOML type the way a config's reader knows it.
func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a number"
	case strings.HasPrefix(t, "float"):
		return "a decimal number"
	case t == "string":
		return "a string in quotes"
	case t == "bool", t == "boolean":
		return "true or false"
	case strings.HasPrefix(t, "[]"), t == "slice", strings.HasPrefix(t, "array"):
		return "a list in [ ]"
	case strings.HasPrefix(t, "map"), t == "struct", t == "table", strings.HasPrefix(t, "config."):
		return "a table"
	}
	return t
}

// lineOf finds the line on which key is set, for messages about keys the decoder accepted.
func lineOf(data []byte, key toml.Key) int {
	last := key[len(key)-1]
	table := strings.Join(key[:len(key)-1], ".")
	current := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			current = strings.Trim(t, "[] ")
			if current == strings.Join(key, ".") {
				return i + 1
			}
			continue
		}
		k, _, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		k = strings.Trim(strings.TrimSpace(k), `"`)
		full := k
		if current != "" {
			full = current + "." + k
		}
		if full == strings.Join(key, ".") || (current == table && k == last) {
			return i + 1
		}
	}
	return 0
}
