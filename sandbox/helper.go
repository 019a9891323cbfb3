package sandbox

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
)

// HelperBin is where tare-room is bound read-only when the room has one (Room.Helper).
const HelperBin = "/opt/tare/tare-room"

// HelperName is the file name of tare-room, the small binary (no terminal UI, no command
// line library) that serves the in-room entry points a room starts on every run or tool
// call: relay, snap, snap-watch and the probe control's mcp-canary. It is built beside tare (scripts/setup builds
// bin/tare-room next to bin/tare) from ./cmd/tare-room.
const HelperName = "tare-room"

// FindHelper returns the tare-room beside the running binary (its symlinks resolved), or ""
// when there is none, or when it may be of another build than this binary: older than it
// (bin/tare rebuilt without bin/tare-room; scripts/setup builds tare-room second), or built
// by another Go or from another commit when the binaries say. Rooms then run those entry
// points from TareBin, only slower, never a relay that may not speak this tare's command
// line. It is looked up where tare itself is installed, never on PATH or in the project,
// which the agent can write.
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
		if sameBuild(exe, p) {
			helper = p
		}
	})
	return helper
}

// sameBuild says whether the helper at p may be of this binary's (exe's) build: an
// executable file not older than exe, built by the same Go from the same commit (and the
// same dirty or clean tree) as far as the two binaries record it.
func sameBuild(exe, p string) bool {
	st, err := os.Stat(p)
	self, err2 := os.Stat(exe)
	if err != nil || err2 != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 || st.ModTime().Before(self.ModTime()) {
		return false
	}
	own, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	other, err := buildinfo.ReadFile(p)
	if err != nil {
		return false
	}
	stamp := func(bi *debug.BuildInfo) string {
		s := bi.GoVersion
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" || kv.Key == "vcs.modified" {
				s += " " + kv.Key + "=" + kv.Value
			}
		}
		return s
	}
	return stamp(own) == stamp(other)
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
