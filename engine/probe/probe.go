// Package probe proves the room an agent runs in (package room) clean: the probe runs the
// agent in the room and in twins of it, its detectors read what reached the model and what
// the in-room inspection and the MCP canary saw, and the Reading says "tare: 0.00" or names
// each leak. InRoom dispatches the entry points tare serves inside a room.
package probe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"tare/agent"
	"tare/config"
	"tare/engine/room"
	"tare/modelserver"
	"tare/sandbox"
)

// ProbeOptions says which agent to probe, for which project.
type ProbeOptions struct {
	Agent   agent.Agent
	Project string
	Config  *config.Config
	// Progress receives one line per phase; nil for none.
	Progress io.Writer
	// HostHome is the operator's home folder (default: the current user's).
	HostHome string
	// HostNetwork probes a room that shares the host's network (the --network-host opt-in).
	HostNetwork bool
	// Requests, when set, receives every request that reached the model in the clean room,
	// one JSON object per line, as the model server recorded it (secrets redacted).
	Requests io.Writer
	// NoControl skips the control twin: every detector is then blind. For tests of the verdict.
	NoControl bool
	// twinRequests, when set, receives the requests of the twin with a copy of the operator's
	// setup, as Requests does the clean room's: the tests read what that twin's agent sent.
	twinRequests io.Writer
	// helper is the tare-room the rooms run from (room.Plan.Helper): the benchmark's own build.
	helper string
	// AllowDirty probes a project that is the host root, the operator's home or holds it
	// (refused otherwise, before anything starts); its reading names the secrets in it.
	AllowDirty bool
	// HostUser is the operator's login name, watched for in the room (default: the current
	// user's, when HostHome is their home).
	HostUser string
}

// probePrompt is what the agent is asked in the probe; the model server answers it with a
// short text, so no tool runs.
const probePrompt = "tare probe: reply with one word."

// probeTimeout bounds one agent start in the probe.
const probeTimeout = 90 * time.Second

// Probe starts the agent in a clean room against tare's model server in probe mode, then in
// a control twin with a planted dirty home (and, where the operator has a real setup, in a twin
// with a copy of it), and reads what reached the model and what each room could see.
func Probe(ctx context.Context, o ProbeOptions) (*Reading, error) {
	began := time.Now()
	if o.HostHome == "" {
		o.HostHome, _ = os.UserHomeDir()
	}
	if o.Config == nil {
		o.Config, _ = config.Parse(nil, "defaults")
	}
	if !o.AllowDirty {
		if err := CheckProject(o.Project, o.HostHome); err != nil {
			return nil, err
		}
	}
	if o.HostUser == "" {
		o.HostUser = operatorName(o.HostHome)
	}
	if !o.Agent.Verified() {
		progress(o.Progress, "probe %s: note: %s's adapter is written from its public docs and has not been verified here", o.Agent.Name(), o.Agent.Name())
	}
	// The CLI's version is asked beside the rooms (it is only reported): they need only
	// where the CLI is. A CLI that cannot say its version fails the probe as before.
	fo := room.FindOptions(o.Config, []string{o.Project})
	fo.VersionLater = true
	inst, err := o.Agent.Find(fo)
	if err != nil {
		return nil, err
	}
	versioned := make(chan error, 1)
	canary, err := newCanaryListener()
	if err != nil {
		return nil, err
	}
	defer canary.Close()

	r := &Reading{
		Agent: o.Agent.Name(), Version: inst.Version, Verified: o.Agent.Verified(), Project: o.Project, Room: probedRoom(o.HostNetwork),
		At: began.UTC(), ControlSaw: map[string]string{},
	}
	operator := subject{
		home: o.HostHome, project: o.Project, sources: o.Agent.Personal(o.HostHome, o.Project),
		loopback: canary.Addr(), show: tilde, runtime: inst.Runtime, user: o.HostUser,
	}
	cleanPlan := room.Plan{Agent: o.Agent, Inst: inst, Config: o.Config, Workspace: o.Project, ReadOnly: true, HostNet: o.HostNetwork, Helper: o.helper}

	// The clean room, the control twin and the twin with a copy of the operator's setup share
	// nothing but the agent's install and the canary listener (each has its own model server,
	// home and network), so they run at the same time: the probe takes about as long as its
	// slowest room, not their sum. Each is read exactly as if it had run alone.
	var personal []agent.Source
	if !o.NoControl {
		personal = copyable(operator.sources)
	}
	rooms := "clean room"
	if !o.NoControl {
		rooms += ", control twin in a planted dirty home"
	}
	if len(personal) > 0 {
		rooms += fmt.Sprintf(", twin with a copy of your setup (%d files)", len(personal))
	}
	progress(o.Progress, "probe %s: %s", o.Agent.Name(), rooms)
	// The first room to fail stops the others; its error is the probe's. The bwrap check
	// runs beside them: when it fails, it stops them too, and its error, which says what is
	// wrong with bwrap, is the probe's whatever a room said.
	roomsCtx, stopRooms := context.WithCancel(ctx)
	defer stopRooms()
	go func() {
		var err error
		if r.Version, err = inst.AskVersion(ctx); err != nil {
			stopRooms()
		}
		versioned <- err
	}()
	var bw sandbox.BwrapInfo
	checked := make(chan error, 1)
	go func() {
		var err error
		if bw, err = sandbox.CheckBwrap(ctx, o.Config.Bwrap); err != nil {
			stopRooms()
		}
		checked <- err
	}()
	g, gctx := errgroup.WithContext(roomsCtx)
	var (
		ev      evidence
		setup   room.Setup
		saw     map[string][]Leak
		planted []agent.Source
		kept    []Leak
	)
	// The control, the slowest room (its agent reads the planted setup), goes first: the
	// clean room starts once the control's home is planted, not beside the planting.
	controlPlanted := make(chan struct{})
	plantedOnce := sync.OnceFunc(func() { close(controlPlanted) })
	if o.NoControl {
		plantedOnce()
	}
	g.Go(func() (err error) {
		select {
		case <-controlPlanted:
		case <-gctx.Done():
			return gctx.Err()
		}
		ev, setup, err = observe(gctx, cleanPlan, operator, canary.Addr(), nil, nil)
		return err
	})
	if !o.NoControl {
		g.Go(func() (err error) {
			defer plantedOnce()
			if saw, planted, err = control(gctx, cleanPlan, canary.Addr(), plantedOnce); err != nil {
				return fmt.Errorf("probe %s: control twin: %w", o.Agent.Name(), err)
			}
			return nil
		})
	}
	if len(personal) > 0 {
		g.Go(func() (err error) {
			if kept, err = realTwin(gctx, cleanPlan, operator, personal, canary.Addr(), o.twinRequests); err != nil {
				return fmt.Errorf("probe %s: twin with your setup: %w", o.Agent.Name(), err)
			}
			return nil
		})
	}
	roomsErr := g.Wait()
	if err := <-versioned; err != nil {
		<-checked
		if ctx.Err() != nil {
			return nil, ctx.Err() // the CLI was ended with the probe
		}
		return nil, err
	}
	if err := <-checked; err != nil {
		return nil, err
	}
	if roomsErr != nil {
		return nil, roomsErr
	}
	r.Bwrap = bw.Version.String()

	if err := writeRequests(o.Requests, ev.raw); err != nil {
		return nil, err
	}
	r.Requests = ev.requests
	r.Network = networkLine(o.HostNetwork, false)
	r.Kernel = ev.sight.kernel
	r.Declared = append(setup.Declared, roomDeclared(ev.sight.room, operator)...)
	operator.env = setup.EnvNames
	for _, leaks := range detect(ev, operator) {
		r.Leaks = append(r.Leaks, leaks...)
	}
	loginDeclared, loginLeaked := loginReading(cleanPlan, o.HostHome, operator)
	r.Declared, r.Leaks = append(r.Declared, loginDeclared...), append(r.Leaks, loginLeaked...)
	sortLeaks(r.Leaks)

	if o.NoControl {
		for _, d := range Detectors {
			r.blind(d, "", "")
		}
	} else {
		uses := applicable(planted)
		for _, d := range Detectors {
			if !uses[d] {
				r.NotApplicable = append(r.NotApplicable, d)
				continue
			}
			if len(saw[d]) == 0 {
				r.blind(d, "", "")
				continue
			}
			r.ControlSaw[d] = saw[d][0].What
		}
		r.KeptOut = kept
	}
	// A personal file a detector cannot recognise makes that detector blind: its silence
	// says nothing about that file, however well the control's long canary was seen. (A
	// detector of a mechanism the agent lacks has nothing to see.)
	for _, src := range operator.sources {
		if det := detectorOf[src.Kind]; det != "" && src.Unseen != "" && !slices.Contains(r.NotApplicable, det) {
			r.blind(det, src.Unseen, tilde(src.Path))
		}
	}
	markBlind(r, ev.sight.room, operator)
	r.Took = time.Since(began).Seconds()
	return r, nil
}

// twin describes how a twin differs from the clean room (the room it builds) and where its
// inspection looks.
type twin struct {
	room.Twin
	// walk is the one folder the twin's inspection's walk from / looks into ("" = the whole
	// room): the control's, whose files are all planted in its home, looks into that only.
	walk string
}

// build builds p's room, as twin tw when set.
func build(p room.Plan, upstream string, tw *twin) (sandbox.Room, room.Setup, error) {
	if tw != nil {
		p.Twin = &tw.Twin
	}
	return room.Build(p, upstream)
}

// observe runs the inspection and the agent in one room shape (clean, or a twin) against a
// fresh model server in probe mode and gathers the evidence. The inspection runs beside the
// agent where it cannot see anything the agent does: in the clean room (a read-only
// workspace, and each room its own home), or in the twin look plants alike in a folder of its
// own (planted beside the agent's run, off its path); otherwise (a twin whose agent may write
// in what the inspection walks) before it.
func observe(ctx context.Context, p room.Plan, s subject, loopback string, tw *twin, look func() (*aside, error)) (evidence, room.Setup, error) {
	srv, err := modelserver.New(modelserver.Options{})
	if err != nil {
		return evidence{}, room.Setup{}, err
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return evidence{}, room.Setup{}, fmt.Errorf("model server: %v", err)
	}
	defer srv.Close()

	box, setup, err := build(p, srv.Addr(), tw)
	if err != nil {
		return evidence{}, room.Setup{}, err
	}
	// The inspection runs in a room of the same shape, so it sees what the agent would.
	beside := look != nil || tw == nil && p.ReadOnly && p.RunStore == "" && p.Sessions == ""
	lookCtx, stopLook := context.WithCancel(ctx)
	defer stopLook()
	var view sandbox.View
	var lookErr error
	looked := make(chan struct{})
	go func() {
		defer close(looked)
		lookRoom, lookS, lookTw := box, s, tw
		if look != nil {
			a, err := look()
			if err == nil {
				lookRoom, _, err = build(a.p, srv.Addr(), a.tw)
			}
			if err != nil {
				lookErr = err
				return
			}
			lookS, lookTw = a.s, a.tw
		}
		lookErr = inspectRoom(lookCtx, lookRoom, lookS, loopback, lookTw, &view)
	}()
	if !beside {
		if <-looked; lookErr != nil {
			return evidence{}, room.Setup{}, lookErr
		}
	}

	wrap := func(argv []string) []string { return argv }
	if tw != nil {
		wrap = func(argv []string) []string { return twinArgv(tw, argv) }
	}
	reqs, err := askAgent(ctx, p, box, setup, wrap, srv)
	if err != nil {
		stopLook()
		<-looked
		return evidence{}, room.Setup{}, err
	}
	if <-looked; lookErr != nil {
		return evidence{}, room.Setup{}, lookErr
	}
	bodies := make([][]byte, len(reqs))
	for i, rq := range reqs {
		bodies[i] = rq.Body
	}
	ev := scanRequests(bodies)
	ev.raw = reqs
	ev.sight = sightOf(&view, loopback)
	return ev, setup, nil
}

// inspectRoom runs the in-room inspection for subject s in room (as twin tw runs its
// commands, when set) and decodes what it saw into view.
func inspectRoom(ctx context.Context, box sandbox.Room, s subject, loopback string, tw *twin, view *sandbox.View) error {
	// A twin runs its commands in its planted home; a clean room in its own.
	box.Argv = inspectArgv(s, loopback, "", "")
	if tw != nil {
		box.Argv = twinArgv(tw, inspectArgv(s, loopback, tw.Home, tw.walk))
	}
	var out, lookErr strings.Builder
	box.Stdout, box.Stderr, box.Stdin = &out, &lookErr, nil
	code, err := room.Run(ctx, box)
	if err != nil {
		return fmt.Errorf("inspection room: %v", err)
	}
	if code != 0 {
		return fmt.Errorf("inspection room exited %d: %s", code, strings.TrimSpace(lookErr.String()))
	}
	if err := json.Unmarshal([]byte(out.String()), view); err != nil {
		return fmt.Errorf("inspection room: unreadable view: %v", err)
	}
	return nil
}

// askAgent runs the agent once in room on the probe's prompt and returns the requests that
// reached srv: one agent run, the unit the probe's time is measured against.
func askAgent(ctx context.Context, p room.Plan, box sandbox.Room, setup room.Setup, wrap func([]string) []string, srv *modelserver.Server) ([]modelserver.Request, error) {
	box.Argv = p.Agent.RunArgs(probePrompt, append(setup.Args, p.Config.Agents[p.Agent.Name()].Args...))
	box.Argv = wrap(append([]string{p.Inst.Command}, box.Argv...))
	var agentOut, agentErr strings.Builder
	box.Stdout, box.Stderr = &agentOut, &agentErr
	runCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := room.Run(runCtx, box); err != nil {
		return nil, fmt.Errorf("agent room: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s sent nothing to the model server; its output: %s",
			p.Agent.Name(), clip(agentErr.String()+agentOut.String(), 400))
	}
	return reqs, nil
}

// twinArgv starts argv as a twin does: in the twin's cwd (below its planted home, not
// /work), with HOME at the planted home and a canary descriptor open (fd 7 on a planted
// file). The room itself fixes HOME and passes no descriptors, so the twin plants these in
// its own command, the one place that is not the room's promise.
func twinArgv(tw *twin, argv []string) []string {
	return append([]string{"/bin/sh", "-c", `cd "$0" && HOME="$1" && export HOME && exec 7<"$1/.tare-canary-fd" && shift && exec "$@"`, tw.Cwd, tw.Home}, argv...)
}

// applicable is the set of detectors that apply to an agent, from what its adapter planted
// in the control's dirty home: an agent that reads no MCP servers (pi) has none to leak, and
// its MCP detector has nothing to prove. Detectors of the room itself always apply.
func applicable(planted []agent.Source) map[string]bool {
	uses := map[string]bool{DetHomePath: true, DetEnv: true, DetFDs: true, DetHostFiles: true, DetSecrets: true, DetLoopback: true, DetOtherHosts: true}
	for _, src := range planted {
		if d := detectorOf[src.Kind]; d != "" {
			uses[d] = true
		}
		if src.Kind == agent.KindMCP {
			uses[DetMCP] = true
		}
	}
	return uses
}

// control runs the twin in a planted dirty home and returns what each detector saw there,
// and the personal files the adapter planted. Its inspection runs beside its agent in a second
// home planted alike (the same canaries), which the agent's writes never reach: what reached
// the model is read against the agent's home, what the room showed against the inspection's.
// planted is called once the agent's home is planted, before its room starts.
func control(ctx context.Context, p room.Plan, loopback string, planted func()) (map[string][]Leak, []agent.Source, error) {
	token := newToken()
	dir, err := os.MkdirTemp("", "tare-control-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	lookDir, err := os.MkdirTemp("", "tare-control-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(lookDir)
	q, s, tw, err := plantControl(p, filepath.Join(dir, "home"), token, loopback)
	if err != nil {
		return nil, nil, err
	}
	tw.Mem = true // its room is read only through what reaches the model; look's by (dev, ino)
	planted()
	var look aside
	plantLook := func() (*aside, error) {
		var err error
		look.p, look.s, look.tw, err = plantControl(p, filepath.Join(lookDir, "home"), token, loopback)
		if err == nil {
			// Every file the control proves a detector on is planted in its home; the rest of
			// the room (the system, the agent's install) is the clean room's and walked there.
			look.tw.walk = look.tw.Home
		}
		return &look, err
	}
	ev, setup, err := observe(ctx, q, s, loopback, tw, plantLook)
	if err != nil {
		return nil, nil, err
	}
	s.env, look.s.env = setup.EnvNames, setup.EnvNames
	return detectApart(ev, s, look.s), s.sources, nil
}

// realTwin runs a twin in a copy of the operator's personal files and returns what the
// clean room kept out of their real setup.
func realTwin(ctx context.Context, p room.Plan, operator subject, files []agent.Source, loopback string, requests io.Writer) ([]Leak, error) {
	dir, err := os.MkdirTemp("", "tare-twin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, src := range files {
		data, err := os.ReadFile(src.Path)
		if err != nil {
			continue
		}
		if declaresMCP(operator.sources, src.Path) {
			// The servers keep their names; each command is tare's canary, never theirs. A
			// config that cannot be rewritten is not copied.
			if data, _, err = stubMCP(src.Path, data, canaryServer(p)); err != nil {
				continue
			}
		}
		dst := filepath.Join(dir, src.Path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			return nil, err
		}
	}
	home := filepath.Join(dir, operator.home)
	proj := filepath.Join(dir, operator.project)
	if err := os.MkdirAll(proj, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, ".tare-canary-fd"), nil, 0o644); err != nil {
		return nil, err
	}
	s := subject{
		home: home, project: proj, sources: p.Agent.Personal(home, proj), loopback: loopback,
		show: func(path string) string { return tilde(strings.TrimPrefix(path, dir)) },
	}
	// The copy is the operator's: its twin gets a room like the clean one (its own network,
	// out only to the model server), the agent starts with its hooks and helpers off, and
	// each MCP server is tare's canary under the server's name: a probe runs none of the
	// operator's code.
	tw := &twin{Twin: room.Twin{Home: home, Cwd: proj, Binds: []string{dir}}}
	q := p
	q.Workspace, q.ReadOnly, q.HostNet, q.Inert = proj, false, false, true
	ev, setup, err := observe(ctx, q, s, loopback, tw, nil)
	if err != nil {
		return nil, err
	}
	if err := writeRequests(requests, ev.raw); err != nil {
		return nil, err
	}
	s.env = setup.EnvNames
	var kept []Leak
	for _, d := range []string{DetInstructions, DetMCP, DetSkills, DetPlugins, DetEmail} {
		kept = append(kept, detect(ev, s)[d]...)
	}
	sortLeaks(kept)
	return kept, nil
}

// declaresMCP reports whether the file at path is one of sources declaring MCP servers
// (~/.claude.json is also the account email's source).
func declaresMCP(sources []agent.Source, path string) bool {
	return slices.ContainsFunc(sources, func(s agent.Source) bool { return s.Path == path && s.Kind == agent.KindMCP })
}

// writeRequests writes each request as the model server recorded it, one JSON object a line.
func writeRequests(w io.Writer, reqs []modelserver.Request) error {
	if w == nil {
		return nil
	}
	enc := json.NewEncoder(w)
	for _, rq := range reqs {
		if err := enc.Encode(rq); err != nil {
			return fmt.Errorf("writing the requests: %v", err)
		}
	}
	return nil
}

// copyable is the operator's personal files a real-setup twin may copy: the ones a detector
// looks for in what reached the model. Never a login (Codex's auth.json is also where its
// email is), and never a file that is only settings: those hold hooks, helpers, providers and
// keys, nothing a detector reads, and running them is not the probe's business.
func copyable(sources []agent.Source) []agent.Source {
	login := map[string]bool{}
	for _, s := range sources {
		if s.Kind == agent.KindLogin {
			login[s.Path] = true
		}
	}
	var out []agent.Source
	seen := map[string]bool{}
	for _, s := range sources {
		// Nor an env file: its variables name host paths (a system prompt) the twin has not.
		if login[s.Path] || seen[s.Path] || s.Kind == agent.KindEnvFile || (detectorOf[s.Kind] == "" && s.Kind != agent.KindMCP) {
			continue
		}
		if info, err := os.Stat(s.Path); err == nil && info.Mode().IsRegular() && info.Size() < 1<<20 {
			seen[s.Path] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// canaryListener is a TCP listener on the host's loopback that a clean room must not reach.
type canaryListener struct {
	ln   net.Listener
	wg   sync.WaitGroup
	once sync.Once
}

func newCanaryListener() (*canaryListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("canary listener: %v", err)
	}
	c := &canaryListener{ln: ln}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	return c, nil
}

func (c *canaryListener) Addr() string { return c.ln.Addr().String() }

func (c *canaryListener) Close() {
	c.once.Do(func() { c.ln.Close(); c.wg.Wait() })
}

func newToken() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "tc" + hex.EncodeToString(b)
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

func networkLine(hostNet, provider bool) string {
	switch {
	case hostNet:
		return "network: HOST (--network-host: the room shares the host's network)"
	case provider:
		return "network: own namespace; out only through tare's proxy to network.allow"
	}
	return "network: own namespace; out only through a relay to tare's model server"
}
