// Command tare-room serves the in-room entry points that a room starts on every run or
// every tool call: `relay` (every room's command runs under it), `snap` (the agent's hook
// after each tool call), `snap-watch` (the watcher the hook asks) and `mcp-canary` (the
// MCP server the probe's control plants). They are tare's own (roomrelay.Main,
// capsule.SnapMain, capsule.WatchMain, mcpcanary.Main); this binary holds them without
// tare's terminal UI and command line libraries, nor the host side of package sandbox, so it
// starts in a fraction of tare's time.
// tare binds it read-only at /opt/tare/tare-room when it finds it beside itself
// (sandbox.FindHelper); scripts/setup builds it as bin/tare-room.
package main

import (
	"fmt"
	"os"

	"tare/agent/mcpcanary"
	"tare/capsule"
	"tare/sandbox/roomrelay"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "tare-room: want relay, snap, snap-watch or mcp-canary (tare runs it inside its rooms)")
		os.Exit(2)
	}
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "relay":
		os.Exit(roomrelay.Main(args))
	case "snap", "snap-watch", "mcp-canary":
		// They run beside the agent (snap-watch as its parent), whose tools could read or
		// rewrite their memory: as tare's own in-room entry points do (probe.InRoom).
		if err := roomrelay.NotDumpable(); err != nil {
			fmt.Fprintf(os.Stderr, "tare-room %s: %v\n", cmd, err)
			os.Exit(2)
		}
		switch cmd {
		case "snap":
			os.Exit(capsule.SnapMain(args))
		case "mcp-canary":
			os.Exit(mcpcanary.Main(args))
		}
		os.Exit(capsule.WatchMain(args))
	default:
		fmt.Fprintf(os.Stderr, "tare-room: unknown command %q: want relay, snap, snap-watch or mcp-canary\n", cmd)
		os.Exit(2)
	}
}
