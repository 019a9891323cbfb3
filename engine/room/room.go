package probe

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"tare/agent"
	"tare/config"
	"tare/sandbox"
)

// In-room ports of the relays: the room has its own loopback, so fixed ports never collide.
const (
	modelPort = 4000
	proxyPort = 4001
)

// FindAgent locates the agent's CLI, honouring the config's agents.NAME.bin. A CLI inside
// one of the projects is never used: the agent can write there.
func FindAgent(a agent.Agent, cfg *config.Config, projects ...string) (agent.Install, error) {
	return a.Find(findOptions(cfg, projects))
}

func findOptions(cfg *config.Config, projects []string) agent.FindOptions {
	bins := map[string]string{}
	for name, ac := range cfg.Agents {
		if ac.Bin != "" {
			bins[name] = ac.Bin
		}
	}
	return agent.FindOptions{Bins: bins, Search: agent.DefaultSearch(), Avoid: projects, Sensitive: config.Sensitive}
}

// BuildRoom turns a plan into a room whose agent talks to upstream (tare's model server) or,
// with p.login set and upstream empty, to its real provider through tare's proxy.
func BuildRoom(p Plan, upstream string, tw *twin) (sandbox.Room, RoomSetup, error) {
	opts := agent.RoomOptions{Hooks: p.Hooks, Inert: p.Inert, Model: p.Model}
	room := sandbox.Room{
		Workspace:         p.Workspace,
		WorkspaceReadOnly: p.ReadOnly,
		Guard:             p.Guard,
		Agent:             p.Inst.Runtime,
		RunStore:          p.RunStore,
		Bwrap:             p.Config.Bwrap,
		Helper:            roomHelper(),
	}
	for _, ro := range p.Config.Room.ReadOnly {
		room.Binds = append(room.Binds, sandbox.Bind{Source: ro, Dest: ro, Try: true})
	}
	if tw != nil {
		opts.Base = tw.home
	}
	switch {
	case tw != nil && tw.hostNet:
		// The control twin shares the host network on purpose (its loopback and other-hosts
		// detectors must see), and talks to the model server directly.
		room.Network = sandbox.NetHost
		opts.BaseURL = "http://" + upstream
	case upstream != "":
		opts.BaseURL = fmt.Sprintf("http://127.0.0.1:%d", modelPort)
		room.Relays = []sandbox.Relay{{Port: modelPort, Upstream: upstream}}
	default:
		opts.Proxy = fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
		opts.Login = p.Login
		if opts.HostHome = p.HostHome; opts.HostHome == "" {
			opts.HostHome, _ = os.UserHomeDir()
		}
		opts.AllowOnly = p.Config.Network.Allow
	}
	if p.HostNet {
		room.Network = sandbox.NetHost
	}
	setup, err := p.Agent.Room(opts)
	if err != nil {
		return sandbox.Room{}, RoomSetup{}, err
	}
	if opts.Proxy != "" {
		// Exactly the hosts this agent needs and its reading declares, never a global list.
		room.Relays = []sandbox.Relay{{Port: proxyPort, Allow: setup.Allow}}
	}
	room.Env = setup.Env
	room.Path = setup.Path
	for _, f := range append(setup.Files, p.Extra...) {
		room.Files = append(room.Files, sandbox.File{Path: f.Path, Data: f.Data, Mode: f.Mode})
	}
	if p.Sessions != "" {
		room.Binds = append(room.Binds, sandbox.Bind{Source: p.Sessions, Dest: "/" + agent.SessionRoot(p.Agent), Write: true})
	}
	if tw != nil {
		if err := moveHome(&room, tw); err != nil {
			return sandbox.Room{}, RoomSetup{}, err
		}
	}
	// The room's own variables: what tare sets, plus PWD, which bwrap sets for --chdir.
	names := map[string]bool{"PWD": true}
	for _, kv := range room.EnvList() {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	declared := append(room.Declared(), setup.Declared...)
	return room, RoomSetup{Declared: declared, EnvNames: names, Args: setup.Args, ModelHosts: setup.ModelHosts, Logins: setup.Logins}, nil
}

// moveHome turns a clean room into a twin: HOME is the planted folder at its own host path
// (tare's config files, already merged with the planted ones by the adapter, are written
// there), the canary variables are set, and the planted tree is bound read-write at its own
// path; a mem twin gets an in-memory copy of it instead (memHome).
func moveHome(room *sandbox.Room, tw *twin) error {
	if tw.mem {
		if files, ok := copyHome(tw.home, tw.cwd); ok {
			return memHome(room, tw, files)
		}
	}
	for _, f := range room.Files {
		dst := filepath.Join(tw.home, strings.TrimPrefix(f.Path, sandbox.HomeDir+"/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, f.Data, f.Mode|0o600); err != nil {
			return err
		}
	}
	room.Files = nil
	twinEnv(room, tw)
	for _, b := range tw.binds {
		room.Binds = append(room.Binds, sandbox.Bind{Source: b, Dest: b, Write: true})
	}
	return nil
}

// twinEnv points the room's variables at the twin's home and adds its canary variables.
func twinEnv(room *sandbox.Room, tw *twin) {
	env := map[string]string{}
	for k, v := range room.Env {
		env[k] = strings.ReplaceAll(v, sandbox.HomeDir, tw.home)
	}
	for k, v := range tw.env {
		env[k] = v
	}
	room.Env = env
}

// memHome is moveHome for a twin whose home is a folder in memory at the planted home's
// path: the planted files copied into it, then tare's config files over them (the adapter
// merged the planted ones into those), the working folder bound at its own path.
func memHome(room *sandbox.Room, tw *twin, planted []sandbox.File) error {
	byPath := map[string]int{}
	files := planted
	for i, f := range files {
		byPath[f.Path] = i
	}
	for _, f := range room.Files {
		f.Path = filepath.Join(tw.home, strings.TrimPrefix(f.Path, sandbox.HomeDir+"/"))
		f.Mode |= 0o600
		if i, ok := byPath[f.Path]; ok {
			files[i] = f
			continue
		}
		files = append(files, f)
	}
	room.Files = files
	twinEnv(room, tw)
	room.Binds = append(room.Binds, sandbox.Bind{Dest: tw.home, Tmpfs: true})
	if tw.cwd != tw.home {
		room.Binds = append(room.Binds, sandbox.Bind{Source: tw.cwd, Dest: tw.cwd, Write: true})
	}
	return nil
}

// copyHome reads the planted tree at home into Files at their own paths, or says false when
// it holds anything but folders and regular files (a link, or a folder other than the
// working one left empty), which only a bind shows as planted.
func copyHome(home, cwd string) ([]sandbox.File, bool) {
	var files []sandbox.File
	ok := true
	err := filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, sandbox.File{Path: p, Data: data, Mode: info.Mode().Perm()})
		case d.IsDir():
			if p == cwd {
				return nil
			}
			if ents, err := os.ReadDir(p); err != nil || len(ents) == 0 {
				ok = false
				return filepath.SkipAll
			}
		default:
			ok = false
			return filepath.SkipAll
		}
		return nil
	})
	return files, ok && err == nil
}

// helperOverride, set only by this package's benchmark, is the tare-room its rooms run
// from, as an install's rooms do (the test binary has none beside it).
var helperOverride string

// roomHelper is the tare-room a room of the probe's runs its relay and in-room servers from
// ("" = none: they run from tare): the one beside tare, as sandbox.Start would default it.
func roomHelper() string {
	if helperOverride != "" {
		return helperOverride
	}
	return sandbox.FindHelper()
}

// RunRoom starts a room and waits for it.
func RunRoom(ctx context.Context, r sandbox.Room) (int, error) {
	proc, err := sandbox.Start(ctx, r)
	if err != nil {
		return -1, err
	}
	return proc.Wait()
}

// inspectArgv is the in-room inspection's command line for a subject: connect to the
// host's canary listener, look for the subject's personal files by (dev, ino) in the room (a
// walk from / that, with within set, looks into that folder only), and search the room's
// files for its account email.
func inspectArgv(s subject, loopback, home, within string) []string {
	o := sandbox.InspectOptions{Connect: []string{loopback}, Home: home, Within: within, Watch: watchFor(s)}
	for _, src := range s.sources {
		if id, err := sandbox.IdentOf(src.Path, src.Path); err == nil {
			o.Idents = append(o.Idents, id)
		}
		if src.Kind == agent.KindEmail {
			o.Needles = append(o.Needles, src.Fingerprints...)
		}
	}
	return append([]string{sandbox.TareBin}, o.Args()...)
}

// sightOf reduces the inspection's view to what the detectors read.
func sightOf(v *sandbox.View, loopback string) sight {
	out := sight{env: map[string]string{}, found: map[string]string{}, needles: map[string][]string{}}
	for _, kv := range v.Env {
		k, val, _ := strings.Cut(kv, "=")
		out.env[k] = val
	}
	for _, env := range v.Environ {
		for _, kv := range env {
			k, val, _ := strings.Cut(kv, "=")
			out.env[k] = val
		}
	}
	for _, fd := range v.FDs {
		if fd.FD > 2 && !fd.Runtime {
			out.fds = append(out.fds, fmt.Sprintf("%d (%s)", fd.FD, fd.Target))
		}
	}
	for _, f := range v.Found {
		if label, ok := strings.CutPrefix(f.Why, "ident "); ok {
			out.found[f.Path] = label
		}
	}
	for needle, files := range v.Needles {
		out.needles[needle] = files
	}
	for _, c := range v.Connect {
		if c.Target == loopback && c.OK {
			out.loopback = true
		}
	}
	for _, i := range v.Interfaces {
		if i != "lo" {
			out.interfaces = append(out.interfaces, i)
		}
	}
	sort.Strings(out.interfaces)
	out.routes = len(v.Routes)
	out.kernel = kernelLine(v)
	out.room = roomSightOf(v)
	return out
}

// kernelLine says, from the inspection's view, whether the room ran under its seccomp
// filter and whether any kernel key was in sight (keyctl on the session keyring, /proc/keys).
func kernelLine(v *sandbox.View) string {
	seccomp := "seccomp filter"
	if v.Status.Seccomp != "2" {
		seccomp = fmt.Sprintf("no seccomp filter (Seccomp: %q)", v.Status.Seccomp)
	}
	keys := "no kernel keys in sight"
	if n := len(v.SessionKeys) + len(v.ProcKeys); n > 0 {
		keys = fmt.Sprintf("%d kernel keys in sight", n)
	}
	return seccomp + " · " + keys
}
