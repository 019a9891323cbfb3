package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// roomPrefix starts the name of every room's host temp folder, followed by the pid of the
// tare that made it: "tare-room-<pid>-<random>".
const roomPrefix = "tare-room-"

// sweepRooms removes the temp folders of rooms whose tare is gone: a tare killed with
// SIGKILL cannot remove its own, so the next room started in the same place does. A folder
// whose pid is alive (or cannot be told) is left alone.
func sweepRooms(tempDir string) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	entries, err := os.ReadDir(tempDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), roomPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(tempDir, e.Name()))
		}
	}
}
