package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Where a run's capsules come from: the engine records it in the run's recipe.
const (
	// HookInAgent: the agent runs tare's hook command itself after every tool
	// call and waits for it before its next model request, so each capsule
	// is exactly the workspace the tool left (Claude Code's PostToolUse,
	// Codex's PostToolUse, pi's tool_result through tare's extension).
	HookInAgent = "hook"
	// HookFromStream: the agent cannot run tare's command; the engine takes
	// the capsule when the tool's result shows in the stream (ParseLine's
	// tool_end), by which time the agent may already run its next tool.
	HookFromStream = "stream"
)

// HookKind says whether a's capsules come from an in-agent hook
// (HookInAgent, install it with RoomOptions.Hooks) or must be taken from
// outside on each tool result in the stream (HookFromStream).
func HookKind(a Agent) string {
	if h, ok := a.(interface{ hookKind() string }); ok {
		return h.hookKind()
	}
	return HookFromStream
}

func (Claude) hookKind() string { return HookInAgent }
func (Codex) hookKind() string  { return HookInAgent }
func (Pi) hookKind() string     { return HookInAgent }

// AfterToolEvents are the hook events that, together, fire once after every tool call of a,
// whether the call succeeded or failed: a capsule hook goes on each. Claude Code fires
// PostToolUse only for calls that succeed and PostToolUseFailure for the others (a Bash that
// exits non-zero, an Edit that does not apply); Codex's PostToolUse and pi's tool_result
// (through tare's extension) fire for both. The engine's TestFailedToolCallsGetTheirCapsule
// runs each CLI with a failing call.
func AfterToolEvents(a Agent) []string {
	if _, ok := a.(Claude); ok {
		return []string{"PostToolUse", "PostToolUseFailure"}
	}
	return []string{"PostToolUse"}
}

// toolEvent says whether a hook event fires per tool call (it then gets a
// matcher that takes every tool).
func toolEvent(event string) bool {
	return event == "PreToolUse" || event == "PostToolUse" || event == "PostToolUseFailure"
}

// codexHookEvents are the events Codex 0.171 runs hooks on.
var codexHookEvents = []string{
	"SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
	"PreCompact", "PostCompact", "Stop", "SubagentStart", "SubagentStop",
}

// codexHooks is config.toml's [hooks] table: the same shape as Claude Code's
// settings.json hooks, as arrays of tables, plus [hooks.state] marking each
// of them trusted.
//
// Codex runs a non-managed hook only once its exact definition has been
// trusted (in its /hooks screen, which `codex exec` does not have) and skips
// it silently otherwise. Trust lives in config.toml: [hooks.state."KEY"]
// trusted_hash = "sha256:HEX". KEY is "CONFIG:EVENT:GROUP:HANDLER": the
// absolute path of the config file (the room's, so the trust holds in a room
// only), the event in snake case, the indexes of the matcher group and of
// the handler. HEX is the SHA-256 of the hook's normalized identity as
// compact JSON with sorted keys: event_name, matcher when set, and hooks:
// [{async: false, command, timeout: 600, type: "command"}], Codex's defaults
// filled in. That is Codex 0.171's own computation, not a documented format:
// the engine's TestHooksRunAfterEveryToolCall fails if a release changes it.
// The alternatives, both also seen to work: `--dangerously-bypass-hook-trust`
// on every command line (Setup.Args), or managed hooks in
// /etc/codex/requirements.toml (trusted by policy, but outside HOME).
func codexHooks(hooks []Hook, config string) (map[string]any, error) {
	out := map[string]any{}
	state := map[string]any{}
	for _, h := range hooks {
		if !slices.Contains(codexHookEvents, h.Event) {
			return nil, fmt.Errorf("codex: no hook event %q (Codex runs hooks on %s)", h.Event, strings.Join(codexHookEvents, ", "))
		}
		entry := map[string]any{"hooks": []map[string]any{{"type": "command", "command": h.Command}}}
		identity := map[string]any{
			"event_name": snakeCase(h.Event),
			"hooks":      []map[string]any{{"async": false, "command": h.Command, "timeout": 600, "type": "command"}},
		}
		if toolEvent(h.Event) {
			entry["matcher"] = "*"
			identity["matcher"] = "*"
		}
		list, _ := out[h.Event].([]map[string]any)
		key := fmt.Sprintf("%s:%s:%d:0", config, snakeCase(h.Event), len(list))
		hash, err := codexHookHash(identity)
		if err != nil {
			return nil, err
		}
		state[key] = map[string]any{"trusted_hash": hash}
		out[h.Event] = append(list, entry)
	}
	out["state"] = state
	return out, nil
}

// codexHookHash is "sha256:" and the hex SHA-256 of identity as compact JSON
// with sorted keys and "<>&" left as they are (serde_json's way).
func codexHookHash(identity map[string]any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(identity); err != nil {
		return "", fmt.Errorf("codex: hook identity: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// snakeCase is Codex's name for a hook event in trust keys: PostToolUse -> post_tool_use.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// piHookEvents maps tare's (Claude Code's) hook event names to the pi
// extension events that stand for them.
var piHookEvents = map[string]string{
	"PostToolUse":  "tool_result",
	"PreToolUse":   "tool_call",
	"SessionStart": "session_start",
	"Stop":         "agent_end",
}

// piExtension is where tare's hook extension lands; pi loads every
// ~/.pi/agent/extensions/*.ts at start (jiti, so plain JavaScript is fine).
const piExtension = piDir + "/extensions/tare-hooks.ts"

// piHookSource is the extension. pi awaits a tool_result handler before it
// emits tool_execution_end and before its next model request, so a hook that
// runs to completion inside it runs synchronously. Hooks run one at a time
// (parallel tool calls finish concurrently in pi) with a JSON object on stdin
// shaped like Claude Code's hook input: hook_event_name, session_id,
// transcript_path, cwd and, for tool events, tool_name, tool_input,
// tool_use_id (pi's tool call id) and tool_response. A hook's exit status is
// reported on stderr; it never blocks a tool.
const piHookSource = `// tare's hooks for pi: written by tare into the room's HOME, not the operator's.
import { spawn } from "node:child_process";

const hooks = %s;

let queue = Promise.resolve();

function run(command, input) {
  return new Promise((resolve) => {
    const child = spawn("/bin/sh", ["-c", command], { stdio: ["pipe", "ignore", "inherit"] });
    child.on("error", (err) => {
      process.stderr.write("tare hook: " + command + ": " + err.message + "\n");
      resolve();
    });
    child.on("close", (code, signal) => {
      if (code !== 0) process.stderr.write("tare hook: " + command + ": exit " + (signal || code) + "\n");
      resolve();
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(input));
  });
}

function serial(command, input) {
  queue = queue.then(() => run(command, input));
  return queue;
}

function base(name, ctx) {
  const sm = ctx && ctx.sessionManager;
  return {
    hook_event_name: name,
    session_id: sm ? sm.getSessionId() : undefined,
    transcript_path: sm ? sm.getSessionFile() : undefined,
    cwd: ctx ? ctx.cwd : process.cwd(),
  };
}

export default function (pi) {
  for (const h of hooks) {
    pi.on(h.on, async (event, ctx) => {
      const input = base(h.event, ctx);
      if (h.on === "tool_result" || h.on === "tool_call") {
        input.tool_name = event.toolName;
        input.tool_input = event.input;
        input.tool_use_id = event.toolCallId;
      }
      if (h.on === "tool_result") {
        input.tool_response = { content: event.content, is_error: event.isError };
      }
      await serial(h.command, input);
    });
  }
}
`

// piHooks is the extension file running hooks.
func piHooks(hooks []Hook) (File, error) {
	type hook struct {
		Event   string `json:"event"`
		On      string `json:"on"`
		Command string `json:"command"`
	}
	var list []hook
	for _, h := range hooks {
		on, ok := piHookEvents[h.Event]
		if !ok {
			return File{}, fmt.Errorf("pi: no hook event %q (tare runs pi hooks on PostToolUse, PreToolUse, SessionStart and Stop)", h.Event)
		}
		list = append(list, hook{h.Event, on, h.Command})
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return File{}, fmt.Errorf("pi: hooks: %w", err)
	}
	return File{Path: inRoom(piExtension), Data: fmt.Appendf(nil, piHookSource, data), Mode: 0o644}, nil
}
