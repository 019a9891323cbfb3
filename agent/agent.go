// Package agent holds one adapter per coding-agent CLI tare runs in a room:
// Claude Code, Codex CLI, pi, Gemini CLI and Antigravity (agy).
//
// An adapter knows where its CLI is installed, which model API it speaks,
// what its fresh HOME must hold (config pointing at tare's model server or a
// real provider, the login copy when asked, tare's hooks), how to start,
// resume and attach it, where its session file lands, how to read its output
// stream (whole, or line by line as it comes), how to read its session file
// as a trail of steps and cut it after one, and which of the operator's
// personal files it would read (for the probe). RenderHandoff turns a trail
// into the prompt that lets any agent continue another's run.
//
// The package imports neither sandbox nor modelserver: it describes rooms,
// the engine builds them.
package agent

import (
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
)

// Fixed paths inside a room. They equal the sandbox package's constants of
// the same meaning; they are repeated here so the two packages stay apart.
const (
	Home     = "/home/agent"    // the room's fresh HOME
	Work     = "/work"          // the workspace, also the agent's cwd
	AgentDir = "/opt/agent"     // the agent runtime folder, bound read-only
	TareBin  = "/opt/tare/tare" // the tare binary, bound read-only
)

// File is a file an adapter wants placed in the room's fresh HOME.
// Path is absolute inside the room and below Home.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Provider names the model API an agent speaks: what tare's model server
// must answer, or which real provider it reaches.
type Provider string

// The model APIs.
const (
	Anthropic       Provider = "anthropic-messages" // POST /v1/messages
	OpenAIResponses Provider = "openai-responses"   // POST /v1/responses
	OpenAIChat      Provider = "openai-chat"        // POST /v1/chat/completions
	// GoogleCodeAssist is Antigravity's own backend (cloudcode-pa.googleapis.com).
	// tare's model server does not speak it: agy runs against the real provider only.
	GoogleCodeAssist Provider = "google-code-assist"
)

// Agent is one coding-agent CLI.
type Agent interface {
	// Name is the agent's short name: "claude", "codex", "pi", "gemini", "agy".
	Name() string
	// Verified is false for an adapter written from public docs only and
	// never run here (agy); the probe says so in its reading.
	Verified() bool
	// Find locates the CLI, its version and the runtime folder to bind at AgentDir.
	Find(o FindOptions) (Install, error)
	// Provider is the model API the agent speaks.
	Provider() Provider
	// Room is what the room's HOME and env must hold for the agent to reach
	// tare's model server (o.BaseURL) or the real provider.
	Room(o RoomOptions) (Setup, error)
	// RunArgs are the arguments (without the command) of a headless run with
	// streamed JSON output, permission prompts off inside the room. Extra
	// arguments are the user's and pass through. Stdin must be empty (Codex
	// reads it otherwise).
	RunArgs(prompt string, extra []string) []string
	// ResumeArgs continue session (an id from Result.SessionID) headless with prompt.
	ResumeArgs(session, prompt string, extra []string) []string
	// AttachArgs start the agent interactive on a terminal; yolo turns its
	// permission prompts off (the room stays).
	AttachArgs(extra []string, yolo bool) []string
	// SessionGlob is the glob, absolute inside the room, where the agent's
	// session files land.
	SessionGlob() string
	// PlaceSession gives the files that let a resume in a brand-new HOME find
	// session id, given the session file's content (possibly cut short).
	PlaceSession(data []byte, id string) []File
	// ParseStream reads the agent's stdout of a headless run.
	ParseStream(r io.Reader) (Result, error)
	// Personal lists the operator's personal files this agent would read when
	// started in project on the host, with fingerprints for the probe.
	Personal(hostHome, project string) []Source
	// Plant writes the probe's dirty twin home: canary instructions, an MCP
	// server, a skill and the like, each carrying c.Token.
	Plant(home string, c Canary) error
}

// SessionPresetter is an Agent whose session id can be chosen before a
// headless run (Claude Code's --session-id). Prepend the arguments to extra.
type SessionPresetter interface {
	PresetSessionArgs(id string) []string
}

// RoomOptions say what a room's agent talks to.
type RoomOptions struct {
	// BaseURL is tare's model server as seen inside the room, e.g.
	// "http://127.0.0.1:8787" (no /v1). Empty: the real provider.
	BaseURL string
	// Model is the model id to ask for; empty leaves the agent's default
	// (pi, which needs one, gets DefaultModel with tare's model server).
	Model string
	// Proxy is the in-room HTTP CONNECT proxy for the real provider, e.g.
	// "http://127.0.0.1:3128". Empty with no BaseURL: the room's network.
	Proxy string
	// AllowOnly, when non-nil, narrows the hosts the proxy lets through for
	// the real provider to those also listed here (tare's network.allow);
	// nil leaves the agent's own list.
	AllowOnly []string
	// HostHome is the operator's real HOME, the only source of a login copy.
	HostHome string
	// Login copies the agent's login file from HostHome (real provider only).
	Login bool
	// APIKey is given to the agent by env for the real provider without Login.
	APIKey string
	// Hooks are commands the agent runs on its events: Claude Code's
	// settings.json hooks, Codex's [hooks] in config.toml (marked trusted),
	// pi's through an extension tare writes. HookKind tells whether an agent
	// has them.
	Hooks []Hook
	// Base is a host folder the room HOME starts from (the probe's planted
	// twin). Config files tare writes are merged into the ones there instead
	// of replacing them, so planted MCP servers survive.
	Base string
	// Inert turns off everything in Base's config files that would run a command of the
	// operator's when the agent starts or ends a turn (hooks, status lines, key helpers,
	// notify programs): the probe's twin with a copy of the operator's setup looks at what
	// their files put in front of the model, and must not run their code. Not with Hooks.
	Inert bool
}

// Hook is a command run on an agent event, named as Claude Code names it,
// e.g. Event "PostToolUse". The command gets a JSON object on stdin with
// hook_event_name, session_id, cwd and, for tool events, tool_name,
// tool_input and tool_use_id (the id the agent's session file gives the call).
type Hook struct {
	Event   string
	Command string
}

// DefaultModel is the model id written for agents that need one when tare's
// model server answers and RoomOptions.Model is empty.
const DefaultModel = "tare-model"

// tareKey is the API key given to agents talking to tare's model server.
// It is long enough that Claude Code's approval (its last 20 characters) is exact.
const tareKey = "sk-tare-local-0000000000000000"

// tareKeyEnv is the env var holding tareKey for agents whose config names a variable.
const tareKeyEnv = "TARE_API_KEY"

// Setup is what the room must hold for an agent.
type Setup struct {
	Files []File            // placed in the fresh HOME
	Env   map[string]string // added to the room's base env
	Path  []string          // PATH entries before the system ones
	// Args are arguments this room needs on the agent's command line, put
	// before the caller's extra arguments of RunArgs, ResumeArgs and
	// AttachArgs. No adapter needs any today; Codex would need
	// --dangerously-bypass-hook-trust if its hook trust could not be written
	// into config.toml (see codexHooks).
	Args []string
	// Allow are the "host:port" the room's proxy must let through for the real provider.
	Allow []string
	// ModelHosts are the hosts among Allow that serve the model's API: the ones tare's relay
	// may read to meter and cap the calls (never a login or token-refresh host).
	ModelHosts []string
	// Logins are the login copies among Files, with the keys of the one login each keeps:
	// the probe reads them back and names whatever else they hold.
	Logins []Login
	// Declared are lines for the probe's reading: what tare itself put in the room, e.g.
	// "login copy: ~/.claude/.credentials.json (0600), only claudeAiOauth: accessToken, ...".
	Declared []string
}

// Result is what a headless run's stream tells.
type Result struct {
	SessionID string
	Text      string // the final assistant text
	IsError   bool
	Error     string   // why, when IsError
	Warnings  []string // harmless errors the agent reported (Codex's missing model metadata)
	Usage     Usage
	// Models is what each model used, where the agent says (Claude's modelUsage): a run
	// whose subagents or side calls use a cheaper model is priced per model.
	Models []ModelUsage
}

// Usage is the tokens and cost of a run. Input excludes cache reads and
// writes for every agent (OpenAI's input_tokens include cached ones; they are
// split out here).
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
	CostUSD                              float64
	CostReported                         bool // the agent reported CostUSD itself
	Model                                string
	// Thread is true when the stream reports the session's running total, not
	// this run's alone (Codex after a resume); subtract CodexSessionUsage of
	// the placed session file.
	Thread bool
}

// ModelUsage is one model's tokens in a run, and its requests one by one where the stream
// shows them: a request's prompt size decides whether it pays a long-context price.
type ModelUsage struct {
	Model                                string
	Input, Output, CacheRead, CacheWrite int64
	Requests                             []Request
}

// Request is one model request's tokens as the stream shows them. Claude's stream shows the
// input side exactly and the output only as it stood when the answer began.
type Request struct {
	Input, Output, CacheRead, CacheWrite int64
}

// RequestLister is an agent whose session file shows each model request's tokens where its
// stream shows only totals (Codex): a request's size decides its long-context price.
type RequestLister interface {
	// SessionRequests lists the requests of session after those of placed (nil: a fresh run).
	SessionRequests(session, placed []byte) []Request
}

// ModelNamer is an agent whose session file names the model its stream
// leaves out (Codex): tare needs the name to price the run.
type ModelNamer interface {
	SessionModel(session []byte) string
}

// OwnUsage is a run's own usage given what its stream reported and the
// session file placed for it (nil for a fresh session): a stream that
// reports the thread's running total (Codex) has what the placed session
// already held taken off.
func OwnUsage(u Usage, placed []byte) Usage {
	if u.Thread && len(placed) > 0 {
		return u.Sub(CodexSessionUsage(placed))
	}
	return u
}

// Sub is u minus v, for a resumed Codex run's own usage.
func (u Usage) Sub(v Usage) Usage {
	u.Input -= v.Input
	u.Output -= v.Output
	u.CacheRead -= v.CacheRead
	u.CacheWrite -= v.CacheWrite
	u.CostUSD -= v.CostUSD
	u.Thread = false
	return u
}

// Kind is what a personal file is to an agent.
type Kind string

// The kinds of personal files.
const (
	KindInstructions Kind = "instructions" // text the agent puts in its prompt
	KindMCP          Kind = "mcp"          // MCP servers it starts
	KindSkill        Kind = "skill"
	KindPlugin       Kind = "plugin"
	KindAgent        Kind = "agent"   // subagent definitions
	KindCommand      Kind = "command" // slash commands, prompt templates
	KindSettings     Kind = "settings"
	KindLogin        Kind = "login"
	KindEmail        Kind = "email" // where the account email lives
	// KindEnvFile is a file of variables the agent loads into its own environment (and so
	// its tools'): Gemini CLI's .env, whose GEMINI_SYSTEM_MD swaps in a system prompt.
	KindEnvFile Kind = "env file"
)

// Source is one of the operator's personal files an agent reads.
type Source struct {
	Path string // host path
	Kind Kind
	// Fingerprints are strings a probe can search for in what reached the
	// model: distinctive instruction lines, MCP server names, skill names and
	// descriptions, the account email. Never secrets.
	Fingerprints []string
	// Unseen says why a probe could not recognise this file in what reached the model (it
	// is too short to tell from the agent's own text); empty when it can, or when the file
	// holds nothing that could reach the model. A probe reads such a file's detector blind.
	Unseen string
	Note   string // how the agent uses it, when not obvious
}

// Canary marks everything Plant writes. Token must be lowercase letters,
// digits and hyphens (it becomes skill and MCP server names), e.g. "tare-canary-3f9a2c".
type Canary struct {
	Token string
	// Server is the in-room path of the binary that serves the planted MCP server
	// (`mcp-canary TOKEN`): "" is TareBin; the probe gives the room's tare-room when it has one.
	Server string
}

// All returns every adapter, in a stable order.
func All() []Agent {
	return []Agent{Claude{}, Codex{}, NewPi(Anthropic), Gemini{}, Agy{}}
}

// ByName returns the adapter called name.
func ByName(name string) (Agent, error) {
	var known []string
	for _, a := range All() {
		if a.Name() == name {
			return a, nil
		}
		known = append(known, a.Name())
	}
	sort.Strings(known)
	return nil, fmt.Errorf("unknown agent %q (known: %s)", name, strings.Join(known, ", "))
}
