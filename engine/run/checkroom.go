package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tare/config"
	"tare/sandbox"
)

// checkGrace is how long a check that outlived its timeout has between SIGTERM and the kill
// of its whole room.
const checkGrace = time.Second

// CheckRoom is where a run's check runs, as recipe.json keeps it: a resume or a tail scores
// its workspaces where the run's first check was scored. The zero value is the plain room:
// the workspace at /work read-write, a fresh HOME, no variable of the operator's, no network.
type CheckRoom struct {
	// OnHost is the operator's explicit opt-in (--check-on-host) to run the check on the
	// host, as the operator, with the operator's environment, files and network.
	OnHost bool `json:"on_host,omitempty"`
	// ReadOnly and Caches are host folders bound read-only and read-write, as config [check]
	// spells them ("HOST" or "HOST:ROOM").
	ReadOnly []string `json:"read_only,omitempty"`
	Caches   []string `json:"caches,omitempty"`
	// Path is put before the room's /usr/local/bin:/usr/bin:/bin.
	Path []string `json:"path,omitempty"`
	// Env names variables of tare's environment passed in.
	Env []string `json:"env,omitempty"`
	// Network is the host's network, given by config [check] network = true.
	Network bool `json:"network,omitempty"`
	// Image, when set, roots the check's room in the run's environment image, the workspace
	// at its WORKDIR, as the agent's room is (the recipe keeps the environment in Env, and
	// the engine sets this from it).
	Image *sandbox.Image `json:"-"`
}

// NewCheckRoom is the check's room from config [check], or the host when onHost.
func NewCheckRoom(cfg *config.Config, onHost bool) CheckRoom {
	if onHost {
		return CheckRoom{OnHost: true}
	}
	c := cfg.Check
	return CheckRoom{ReadOnly: c.ReadOnly, Caches: c.Caches, Path: c.Path, Env: c.Env, Network: c.Network}
}

// OnHostWarning is what tare prints on stderr before a run whose check runs on the host (the
// report and the journal say it too, in their own words).
const OnHostWarning = "the check runs ON THE HOST (--check-on-host): as you, with your environment, files and network, " +
	"so code the agent wrote can read and change anything you can"

// String says in one line where the check runs, for the journal.
func (c CheckRoom) String() string { return strings.Join(c.lines(), "; ") }

// ReportLines is String for a report: one part a line, each line indented by indent.
func (c CheckRoom) ReportLines(indent string) string {
	return indent + strings.Join(c.lines(), "\n"+indent) + "\n"
}

func (c CheckRoom) lines() []string {
	if c.OnHost {
		return []string{"ON THE HOST (--check-on-host): as you, with your environment, files and network"}
	}
	parts := []string{"in a room of its own: the workspace at /work read-write, a fresh home, none of your variables"}
	if im := c.Image; im != nil {
		short := im.Digest
		if len(short) > 12 {
			short = short[:12]
		}
		parts[0] = fmt.Sprintf("in a room of its own rooted in environment %s (read-only): the workspace at %s read-write, a fresh home, none of your variables", short, orWork(im.WorkDir))
	}
	if c.Network {
		parts = append(parts, "network: HOST (check.network = true): host loopback and every network the host reaches")
	} else {
		parts[0] += ", no network"
	}
	for _, e := range c.ReadOnly {
		parts = append(parts, bindLine(e, "read-only"))
	}
	for _, e := range c.Caches {
		parts = append(parts, bindLine(e, "read-write"))
	}
	if len(c.Env) > 0 {
		parts = append(parts, "env: "+strings.Join(c.Env, " "))
	}
	return parts
}

func orWork(dir string) string {
	if dir == "" {
		return sandbox.WorkDir
	}
	return dir
}

func bindLine(entry, mode string) string {
	host, room := config.SplitBind(entry)
	if host == room {
		return fmt.Sprintf("%s (%s)", host, mode)
	}
	return fmt.Sprintf("%s at %s (%s)", host, room, mode)
}

// Mark is what a tail's check detail adds when the check was not in the plain room.
func (c CheckRoom) Mark() string {
	switch {
	case c.OnHost:
		return " (ON THE HOST)"
	case c.Network:
		return " (host network)"
	}
	return ""
}

// Validate refuses a check room that cannot be built, before anything is started: a bind
// whose host folder does not exist, or one at a path the room keeps for itself. origin names
// where the binds came from, for the one-line error.
func (c CheckRoom) Validate(origin string) error {
	if c.OnHost {
		return nil
	}
	for _, l := range []struct {
		key     string
		entries []string
		write   bool
	}{{"read_only", c.ReadOnly, false}, {"caches", c.Caches, true}} {
		for _, e := range l.entries {
			host, room := config.SplitBind(e)
			if _, err := os.Stat(host); err != nil {
				return fmt.Errorf("%s: key check.%s: %s: %v; fix: create it, or remove %q from [check]", origin, l.key, host, errors.Unwrap(err), e)
			}
			if !l.write && inUsr(host, room) {
				continue
			}
			r := sandbox.Room{Workspace: "/", Argv: []string{"/bin/sh"}, Binds: []sandbox.Bind{{Source: host, Dest: room, Write: l.write}}}
			if err := r.Validate(); err != nil {
				return fmt.Errorf("%s: key check.%s: %q: %v; fix: give it another room path, as HOST:ROOM", origin, l.key, e, strings.TrimPrefix(err.Error(), "room: "))
			}
		}
	}
	return nil
}

// inUsr reports a read-only bind the room has already: every room rooted on the host holds
// the host's /usr (/usr/local/go included) read-only at the same path.
func inUsr(host, room string) bool {
	return host == room && strings.HasPrefix(filepath.Clean(host)+"/", "/usr/")
}

// Room is the sandbox a check runs in: the workspace dir at /work (at the image's WORKDIR in
// an environment image), cwd there.
func (c CheckRoom) Room(check, dir, bwrap string, out io.Writer) sandbox.Room {
	r := sandbox.Room{
		Image:     c.Image,
		Workspace: dir,
		Argv:      []string{"/bin/sh", "-c", check},
		Bwrap:     bwrap,
		Path:      c.Path,
		Stdout:    out,
		Stderr:    out,
		Grace:     checkGrace,
	}
	if c.Network {
		r.Network = sandbox.NetHost
	}
	for _, e := range c.ReadOnly {
		if host, room := config.SplitBind(e); c.Image != nil || !inUsr(host, room) {
			r.Binds = append(r.Binds, sandbox.Bind{Source: host, Dest: room})
		}
	}
	for _, e := range c.Caches {
		host, room := config.SplitBind(e)
		r.Binds = append(r.Binds, sandbox.Bind{Source: host, Dest: room, Write: true})
	}
	for _, name := range c.Env {
		if v, ok := os.LookupEnv(name); ok {
			if r.Env == nil {
				r.Env = map[string]string{}
			}
			r.Env[name] = v
		}
	}
	return r
}
