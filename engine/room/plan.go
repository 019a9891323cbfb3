package room

import (
	"tare/agent"
	"tare/config"
	"tare/sandbox"
)

// Plan is everything needed to build one agent room.
type Plan struct {
	Agent     agent.Agent
	Inst      agent.Install
	Config    *config.Config
	Workspace string
	ReadOnly  bool
	HostNet   bool
	// Login places the agent's login copy (real providers only).
	Login bool
	// HostHome is the operator's home the login copy is read from (default: the current
	// user's).
	HostHome string
	// Sessions, when set, is a host folder bound at the agent's session folder, so the
	// session outlives the room (for resumes, trails and tails).
	Sessions string
	// Extra are files placed in HOME besides the agent's own (a session to resume).
	Extra []agent.File
	// Hooks are commands the agent runs on its events (tare snap after each tool call).
	Hooks []agent.Hook
	// RunStore is a host folder bound read-write at /tare-run: the room's capsule staging
	// folder, never the run's store.
	RunStore string
	// Guard are workspace paths the room sees read-only (sandbox.Room.Guard).
	Guard []string
	// Inert turns off whatever in the room's copied config would run a command (the twin
	// with a copy of the operator's setup).
	Inert bool
	// Model is the model the agent asks for (a workshop writer's); empty leaves its default.
	Model string
	// Image, when set, roots the room in an environment image (--env): its root read-only,
	// the workspace at its WORKDIR, its ENV; nil roots it on the host's /usr.
	Image *sandbox.Image
	// Twin, when set, makes the room one of the probe's twins instead of a clean room.
	Twin *Twin
	// Helper is the tare-room the room runs its relay and in-room servers from; empty means
	// the one beside tare, as an install has it. A test binary has none beside it, so the
	// probe's benchmark sets one it built.
	Helper string
}

// HelperBin is the tare-room the room runs its relay and in-room servers from ("" = none:
// they run from tare): p.Helper, else the one beside tare, as sandbox.Start would default it.
func (p Plan) HelperBin() string {
	if p.Helper != "" {
		return p.Helper
	}
	return sandbox.FindHelper()
}

// Setup is what building a room learned about it, for the caller that runs and reads it.
type Setup struct {
	Declared []string
	EnvNames map[string]bool
	// Args go on the agent's command line before the caller's (Codex's hook trust flag).
	Args []string
	// ModelHosts are the allowed hosts serving the model's API, which a metered room's
	// proxy reads.
	ModelHosts []string
	// Logins are the login copies the room holds, with the keys of the login each keeps.
	Logins []agent.Login
}

// Twin is how one of the probe's twins differs from the clean room: a planted home bound at
// its own host path, the cwd below it, canary variables and, for the control, the host's
// network. The probe reads what reaches the model from such a room; nothing else builds one.
type Twin struct {
	Home, Cwd string
	// Env are variables set in the room besides the agent's (the canary variables).
	Env map[string]string
	// Binds are extra host folders bound at their own path (the planted tree).
	Binds []string
	// HostNet shares the host's network: only the control, whose planted home is tare's own.
	HostNet bool
	// Mem gives the room a copy of the planted home in memory instead of a bind of it (the
	// control's agent, whose CLI writes its databases and caches there: on disk they cost
	// the probe fsyncs the clean room, whose home is in memory, does not pay). Only for a
	// room that nothing reads by (dev, ino), as the copies are other files.
	Mem bool
}
