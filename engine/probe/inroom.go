package probe

import (
	"fmt"
	"os"

	"tare/agent/mcpcanary"
	"tare/capsule"
	"tare/engine/browser"
	"tare/sandbox"
)

// InRoom runs one of the entry points tare serves inside a room as /opt/tare/tare (relay,
// inspect, snap, snap-watch, mcp-canary, screenshot), if args name one, and returns its exit code. They parse their
// own arguments and must start fast, so callers dispatch them before anything else.
func InRoom(args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "snap", "snap-watch", "mcp-canary":
		// They run beside the agent (snap-watch as its parent), whose tools could read or
		// rewrite their memory. The relay does the same itself; inspect runs alone in the
		// probe's inspection room and reads its own /proc, which this would hide from it.
		if err := sandbox.NotDumpable(); err != nil {
			fmt.Fprintf(os.Stderr, "tare %s: %v\n", args[0], err)
			return 2, true
		}
	}
	switch args[0] {
	case "relay":
		return sandbox.RelayMain(args[1:]), true
	case "inspect":
		return sandbox.InspectMain(args[1:]), true
	case "snap":
		return capsule.SnapMain(args[1:]), true
	case "snap-watch":
		return capsule.WatchMain(args[1:]), true
	case "screenshot":
		return browser.Main(args[1:]), true
	case "mcp-canary":
		return mcpcanary.Main(args[1:]), true
	}
	return 0, false
}
