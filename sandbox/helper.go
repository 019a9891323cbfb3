package sandbox

import (
	"os"
	"path/filepath"
	"sync"
)

// HelperBin is where tare-room is bound read-only when the room has one (Room.Helper).
const HelperBin = "/opt/tare/tare-room"

// HelperName is the file name of tare-room, the small binary (no terminal UI, no command
// line library) that serves the in-room entry points a room starts on every run or tool
// call: relay, snap and snap-watch. It is built beside tare (scripts/setup builds
// bin/tare-room next to bin/tare) from ./cmd/tare-room.
const HelperName = "tare-room"

// FindHelper returns the tare-room beside the running binary (its symlinks resolved), or ""
// when there is none: rooms then run those entry points from TareBin, only slower. It is
// looked up where tare itself is installed, never on PATH or in the project, which the
// agent can write.
func FindHelper() string {
	helperOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			return
		}
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			helper = p
		}
	})
	return helper
}

var (
	helperOnce sync.Once
	helper     string
)

// relayBin is the binary the room's relay runs from: tare-room when the room has it.
func (r Room) relayBin() string {
	if r.Helper != "" {
		return HelperBin
	}
	return TareBin
}
