package probe

import (
	"tare/engine/browser"
	"tare/sandbox"
	"tare/sandbox/inroom"
)

// InRoom runs one of the entry points tare serves inside a room as /opt/tare/tare (those of
// tare-room, and inspect and screenshot), if args name one, and returns its exit code. They
// parse their own arguments and must start fast, so callers dispatch them before anything else.
func InRoom(args []string) (code int, ok bool) {
	return inroom.Run("tare", args, map[string]inroom.Main{"inspect": sandbox.InspectMain, "screenshot": browser.Main})
}
