// Package room builds the room an agent runs in from a Plan: its sandbox.Room (workspace,
// relays to tare's model server or proxy, the agent's files, hooks and sessions) and what the
// room declares. Every tail, judge, writer, check and attached run starts its agent in one,
// and the probe proves the same rooms clean; Twin is the probe's variant of a room.
package room

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	return a.Find(FindOptions(cfg, projects))
}

// FindOptions is how FindAgent looks for an agent's CLI, for a caller that adjusts it (the
// probe asks the version later).
func FindOptions(cfg *config.Config, projects []string) agent.FindOptions {
	bins := map[string]string{}
	for name, ac := range cfg.Agents {
		if ac.Bin != "" {
			bins[name] = ac.Bin
		}
	}
	return agent.FindOptions{Bins: bins, Search: agent.DefaultSearch(), Avoid: projects, Sensitive: config.Sensitive}
}

// Build turns a plan into a room whose agent talks to upstream (tare's model server) or,
// with p.Login set and upstream empty, to its real provider through tare's proxy.
func Build(p Plan, upstream string) (sandbox.Room, Setup, error) {
	tw := p.Twin
	opts := agent.RoomOptions{Hooks: p.Hooks, Inert: p.Inert, Model: p.Model}
	room := sandbox.Room{
		Workspace:         p.Workspace,
		WorkspaceReadOnly: p.ReadOnly,
		Guard:             p.Guard,
		Agent:             p.Inst.Runtime,
		RunStore:          p.RunStore,
		Bwrap:             p.Config.Bwrap,
		Helper:            p.HelperBin(),
	}
	if p.Image != nil {
		// The agent works in /work, where its CLI's settings and sessions are, the WORKDIR
		// holding the same files (sandbox.Image.AtWork).
		im := *p.Image
		im.AtWork = true
		room.Image = &im
	}
	for _, ro := range p.Config.Room.ReadOnly {
		room.Binds = append(room.Binds, sandbox.Bind{Source: ro, Dest: ro, Try: true})
	}
	if tw != nil {
		opts.Base = tw.Home
	}
	switch {
	case tw != nil && tw.HostNet:
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
		return sandbox.Room{}, Setup{}, err
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
			return sandbox.Room{}, Setup{}, err
		}
	}
	// The room's own variables: what tare sets, plus PWD, which bwrap sets for --chdir.
	names := map[string]bool{"PWD": true}
	for _, kv := range room.EnvList() {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	declared := append(room.Declared(), setup.Declared...)
	return room, Setup{Declared: declared, EnvNames: names, Args: setup.Args, ModelHosts: setup.ModelHosts, Logins: setup.Logins}, nil
}

// moveHome turns a clean room into a twin: HOME is the planted folder at its own host path
// (tare's config files, already merged with the planted ones by the adapter, are written
// there), the canary variables are set, and the planted tree is bound read-write at its own
// path; a mem twin gets an in-memory copy of it instead (memHome).
func moveHome(room *sandbox.Room, tw *Twin) error {
	if tw.Mem {
		if files, ok := copyHome(tw.Home, tw.Cwd); ok {
			return memHome(room, tw, files)
		}
	}
	for _, f := range room.Files {
		dst := filepath.Join(tw.Home, strings.TrimPrefix(f.Path, sandbox.HomeDir+"/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, f.Data, f.Mode|0o600); err != nil {
			return err
		}
	}
	room.Files = nil
	twinEnv(room, tw)
	for _, b := range tw.Binds {
		room.Binds = append(room.Binds, sandbox.Bind{Source: b, Dest: b, Write: true})
	}
	return nil
}

// twinEnv points the room's variables at the twin's home and adds its canary variables.
func twinEnv(room *sandbox.Room, tw *Twin) {
	env := map[string]string{}
	for k, v := range room.Env {
		env[k] = strings.ReplaceAll(v, sandbox.HomeDir, tw.Home)
	}
	for k, v := range tw.Env {
		env[k] = v
	}
	room.Env = env
}

// memHome is moveHome for a twin whose home is a folder in memory at the planted home's
// path: the planted files copied into it, then tare's config files over them (the adapter
// merged the planted ones into those), the working folder bound at its own path.
func memHome(room *sandbox.Room, tw *Twin, planted []sandbox.File) error {
	byPath := map[string]int{}
	files := planted
	for i, f := range files {
		byPath[f.Path] = i
	}
	for _, f := range room.Files {
		f.Path = filepath.Join(tw.Home, strings.TrimPrefix(f.Path, sandbox.HomeDir+"/"))
		f.Mode |= 0o600
		if i, ok := byPath[f.Path]; ok {
			files[i] = f
			continue
		}
		files = append(files, f)
	}
	room.Files = files
	twinEnv(room, tw)
	room.Binds = append(room.Binds, sandbox.Bind{Dest: tw.Home, Tmpfs: true})
	if tw.Cwd != tw.Home {
		room.Binds = append(room.Binds, sandbox.Bind{Source: tw.Cwd, Dest: tw.Cwd, Write: true})
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

// Run starts a room and waits for it.
func Run(ctx context.Context, r sandbox.Room) (int, error) {
	proc, err := sandbox.Start(ctx, r)
	if err != nil {
		return -1, err
	}
	return proc.Wait()
}
