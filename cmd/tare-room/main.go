// Command tare-room serves the in-room entry points that a room starts on every run or
// every tool call: `relay` (every room's command runs under it), `snap` (the agent's hook
// after each tool call) and `snap-watch` (the watcher the hook asks). They are tare's own
// (roomrelay.Main, capsule.SnapMain, capsule.WatchMain); this binary holds them without
// tare's terminal UI and command line libraries, nor the host side of package sandbox, so it
// starts in a fraction of tare's time.
// tare binds it read-only at /opt/tare/tare-room when it finds it beside itself
// (sandbox.FindHelper); scripts/setup builds it as bin/tare-room.
package main

import (
	"fmt"
	"os"

	"tare/capsule"
	"tare/sandbox/roomrelay"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "tare-room: want relay, snap or snap-watch (tare runs it inside its rooms)")
		os.Exit(2)
	}
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "relay":
		os.Exit(roomrelay.Main(args))
	case "snap", "snap-watch":
		// They run beside the agent (snap-watch as its parent), whose tools could read or
		// rewrite their memory: as tare's own in-room entry points do (probe.InRoom).
		if err := roomrelay.NotDumpable(); err != nil {
			fmt.Fprintf(os.Stderr, "tare-room %s: %v\n", cmd, err)
			os.Exit(2)
		}
		if cmd == "snap" {
			os.Exit(capsule.SnapMain(args))
		}
		os.Exit(capsule.WatchMain(args))
	default:
		fmt.Fprintf(os.Stderr, "tare-room: unknown command %q: want relay, snap or snap-watch\n", cmd)
		os.Exit(2)
	}
}
