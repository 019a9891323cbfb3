package sandbox

import "tare/sandbox/roomrelay"

// RelayMain is `tare relay`, run inside a room as its command: roomrelay.Main.
func RelayMain(args []string) int { return roomrelay.Main(args) }

// NotDumpable takes this process out of reach of the room's other processes:
// roomrelay.NotDumpable.
func NotDumpable() error { return roomrelay.NotDumpable() }
