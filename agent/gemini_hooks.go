package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// geminiHookEvents maps tare's (Claude Code's) hook event names to Gemini CLI's.
var geminiHookEvents = map[string]string{
	"PostToolUse":  "AfterTool",
	"PreToolUse":   "BeforeTool",
	"SessionStart": "SessionStart",
	"Stop":         "AfterAgent",
}

// geminiHookTimeout is how long Gemini CLI waits for a hook (ms): a capsule of a large
// workspace must not be cut short.
const geminiHookTimeout = 600000

// geminiCallID is the tool-use id tare gives call k (from 0) of Gemini CLI's model turn
// msg (the id its session file gives the model message). Gemini CLI gives its hooks no
// call id (0.61.0's AfterTool input has tool_name, tool_input and tool_response only), and
// its own call ids hold the time the call was scheduled, which a hook cannot know; the
// model message is in the transcript before its tools run, so both the hook runner and
// Trail know it.
func geminiCallID(msg string, k int) string {
	return "gemini_" + unsafeID.ReplaceAllString(msg, "_") + "_" + strconv.Itoa(k)
}

// unsafeID is what may not be part of a capsule id.
var unsafeID = regexp.MustCompile(`[^A-Za-z0-9-]`)

// geminiHookSource is the hook runner Gemini CLI's settings point every tare hook at
// (node runs it: Gemini CLI is a node program, so node is on the room's PATH). It reads
// the hook input on stdin, adds tool_use_id to tool events and pipes it to each of tare's
// commands for the event, one after the other; Gemini CLI waits for it before its next
// model request. A call's id is geminiCallID of the model message on the transcript's
// last line holding one (the turn whose tools run) and the number the call claims by
// creating a file exclusively, from 0: calls of one turn finishing together get different
// numbers (which of them gets which does not matter: a step's capsule is the last of its
// calls'). The runner prints nothing (Gemini CLI reads a hook's stdout as its decision)
// and exits 0, so a failed command never blocks a tool; it says so on stderr.
const geminiHookSource = `// tare's hooks for Gemini CLI: written by tare into the room's HOME, not the operator's.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawnSync } = require("node:child_process");

const hooks = %s;
const event = process.argv[2];

function currentTurn(transcript) {
  let id = "";
  for (const line of fs.readFileSync(transcript, "utf8").split("\n")) {
    let e;
    try { e = JSON.parse(line); } catch { continue; }
    const list = e && e.$set && Array.isArray(e.$set.messages) ? e.$set.messages : [e];
    for (const m of list) if (m && m.type === "gemini" && typeof m.id === "string") id = m.id;
  }
  if (!id) throw new Error("no model turn in " + transcript);
  return id.replace(/[^A-Za-z0-9-]/g, "_");
}

function callID(input) {
  const turn = currentTurn(input.transcript_path);
  const dir = path.join(os.tmpdir(), "tare-gemini-calls", turn);
  fs.mkdirSync(dir, { recursive: true });
  for (let k = 0; ; k++) {
    try {
      fs.closeSync(fs.openSync(path.join(dir, String(k)), "wx"));
      return "gemini_" + turn + "_" + k;
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
    }
  }
}

let input = {};
try { input = JSON.parse(fs.readFileSync(0, "utf8")); } catch (err) {
  process.stderr.write("tare hook: reading the hook input: " + err.message + "\n");
}
const mine = hooks.filter((h) => h.on === event);
if (mine.length > 0) {
  input.hook_event_name = mine[0].event;
  if (event === "AfterTool") {
    try { input.tool_use_id = callID(input); } catch (err) {
      process.stderr.write("tare hook: naming the tool call: " + err.message + "\n");
    }
  }
  const data = JSON.stringify(input);
  for (const h of mine) {
    const r = spawnSync("/bin/sh", ["-c", h.command], { input: data, stdio: ["pipe", "ignore", "inherit"] });
    if (r.error) process.stderr.write("tare hook: " + h.command + ": " + r.error.message + "\n");
    else if (r.status !== 0) process.stderr.write("tare hook: " + h.command + ": exit " + (r.signal || r.status) + "\n");
  }
}
`

// geminiHooks are settings.json's "hooks" object, every event going through tare's hook
// runner, and the runner's file.
func geminiHooks(hooks []Hook) (map[string]any, File, error) {
	type hook struct {
		Event   string `json:"event"`
		On      string `json:"on"`
		Command string `json:"command"`
	}
	var list []hook
	out := map[string]any{}
	for _, h := range hooks {
		on, ok := geminiHookEvents[h.Event]
		if !ok {
			return nil, File{}, fmt.Errorf("gemini: no hook event %q (tare runs Gemini CLI hooks on PostToolUse, PreToolUse, SessionStart and Stop)", h.Event)
		}
		if _, seen := out[on]; !seen {
			entry := map[string]any{"hooks": []any{map[string]any{
				"name": "tare-" + h.Event, "type": "command", "timeout": geminiHookTimeout,
				"command": "node " + inRoom(geminiHookRunner) + " " + on,
			}}}
			if on == "AfterTool" || on == "BeforeTool" {
				entry["matcher"] = "*"
			}
			out[on] = []any{entry}
		}
		list = append(list, hook{h.Event, on, h.Command})
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, File{}, fmt.Errorf("gemini: hooks: %w", err)
	}
	return out, File{Path: inRoom(geminiHookRunner), Data: fmt.Appendf(nil, geminiHookSource, data), Mode: 0o644}, nil
}
