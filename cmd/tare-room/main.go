// Command tare-room serves the in-room entry points that a room starts on every run or
// every tool call: `relay` (every room's command runs under it), `snap` (the agent's hook
// after each tool call), `snap-watch` (the watcher the hook asks) and `mcp-canary` (the
// MCP server the probe's control plants). They are tare's own, dispatched by the same table
// as in tare (package inroom); this binary holds them without tare's terminal UI and command
// line libraries, nor the host side of package sandbox, so it starts in a fraction of tare's
// time.
// tare binds it read-only at /opt/tare/tare-room when it finds it beside itself
// (sandbox.FindHelper); scripts/setup builds it as bin/tare-room.
package main

import (
	"fmt"
	"os"

	"tare/sandbox/inroom"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "tare-room: want relay, snap, snap-watch or mcp-canary (tare runs it inside its rooms)")
		os.Exit(2)
	}
	if code, ok := inroom.Run("tare-room", os.Args[1:], nil); ok {
		os.Exit(code)
	}
	fmt.Fprintf(os.Stderr, "tare-room: unknown command %q: want relay, snap, snap-watch or mcp-canary\n", os.Args[1])
	os.Exit(2)
}
