// Package inroom dispatches the entry points tare serves inside a room, for tare and for
// tare-room alike: one table of the entry points a room starts on every run or tool call, and
// one rule for which of them first take their memory out of the agent's reach.
package inroom

import (
	"fmt"
	"os"

	"tare/agent/mcpcanary"
	"tare/capsule"
	"tare/sandbox/roomrelay"
)

// Main is an in-room entry point: it parses its own arguments and returns the exit code.
type Main func(args []string) int

// light are the entry points a room starts on every run or every tool call: every room's
// command runs under the relay, the agent's hook runs snap after each tool call and asks
// snap-watch, and the probe's control plants mcp-canary as an MCP server. tare-room serves
// these and nothing else, so it needs none of tare's other libraries and starts fast.
var light = map[string]Main{
	"relay":      roomrelay.Main,
	"snap":       capsule.SnapMain,
	"snap-watch": capsule.WatchMain,
	"mcp-canary": mcpcanary.Main,
}

// guarded are the entry points that run beside the agent (snap-watch as its parent), whose
// tools could read or rewrite their memory. The relay does the same itself; inspect runs
// alone in the probe's inspection room and reads its own /proc, which this would hide from it.
var guarded = map[string]bool{"snap": true, "snap-watch": true, "mcp-canary": true}

// Run runs the entry point args[0] names, if it is one of the light ones or of more (tare
// adds its heavier ones), and returns its exit code; ok is false when args name none. prog
// names the binary in an error. Entry points must start fast, so callers dispatch them
// before anything else.
func Run(prog string, args []string, more map[string]Main) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	main, ok := light[args[0]]
	if !ok {
		if main, ok = more[args[0]]; !ok {
			return 0, false
		}
	}
	if guarded[args[0]] {
		if err := roomrelay.NotDumpable(); err != nil {
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", prog, args[0], err)
			return 2, true
		}
	}
	return main(args[1:]), true
}
