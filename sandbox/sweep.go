package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// roomPrefix starts the name of every room's host temp folder, followed by the pid of the
// tare that made it: "tare-room-<pid>-<random>".
const roomPrefix = "tare-room-"

// sweepRooms removes the temp folders of rooms whose tare is gone: a tare killed with
// SIGKILL cannot remove its own, so the next room started in the same place does. A folder
// whose pid is alive (or cannot be told), or whose lock a running room holds, is left alone.
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
			removeUnlocked(filepath.Join(tempDir, e.Name()))
		}
	}
}

// lockRoomDir takes the lock a room holds on its temp folder for as long as it runs. A pid
// alone cannot say a folder is stranded: a tare in another pid namespace that shares this
// temp folder (a container, a job) names its rooms with pids this one cannot see, and pids
// are reused. The lock goes with its holder, whatever kills it.
func lockRoomDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeUnlocked removes a room's temp folder unless a live room holds its lock.
func removeUnlocked(dir string) {
	lock, err := lockRoomDir(dir)
	if err != nil {
		return // held (or unreadable): somebody's live room
	}
	defer lock.Close()
	_ = os.RemoveAll(dir)
}

// sweepStrandedOnce runs sweepStranded once per process, before its first room.
var sweepStrandedOnce sync.Once

// sweepStranded kills the rooms a killed tare may strand in bwrap's own setup. bwrap's
// outer process arms its parent-death signal and then lets the room's pid 1 go on; a
// tare killed between the two takes that outer process with it, and pid 1 then waits
// for its go-ahead forever (no lifeline reaches a room whose command never starts).
// Such a pid 1 is a bwrap of this uid, pid 1 of its own pid namespace, with no child,
// whose parent is no bwrap, and whose argv starts a relay of this very binary (Owner). Killing it
// ends its pid namespace. It returns the pids it killed.
func sweepStranded() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var killed []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !stranded(pid) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// strandedAge is how long a room's pid 1 must have been stuck before sweepStranded takes
// it for stranded: a room whose bwrap just died finishes its setup in milliseconds (and
// then its lifeline ends it), and a test may be holding one there on purpose.
var strandedAge = 2 * time.Second

// stranded reports whether pid is a room's pid 1 stuck in setup with its bwrap gone.
func stranded(pid int) bool {
	if comm(pid) != "bwrap" || age(pid) < strandedAge {
		return false
	}
	st := procStatus(pid)
	if uid := strings.Fields(st["Uid"]); len(uid) == 0 || uid[0] != strconv.Itoa(os.Getuid()) {
		return false
	}
	if ns := strings.Fields(st["NSpid"]); len(ns) < 2 || ns[len(ns)-1] != "1" {
		return false
	}
	ppid, err := strconv.Atoi(st["PPid"])
	if err != nil || comm(ppid) == "bwrap" || len(children(pid)) > 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	relay := strings.Contains(string(cmdline), "\x00"+TareBin+"\x00relay\x00") ||
		strings.Contains(string(cmdline), "\x00"+HelperBin+"\x00relay\x00")
	return err == nil && relay && strings.Contains(string(cmdline), "\x00--owner\x00"+Owner()+"\x00")
}

// Owner names the tare binary this process runs, as every room it starts carries it in its
// relay's argv (--owner): the file's device and inode. A sweep takes only the stranded rooms
// of its own binary, so one tare never ends rooms another install (or another test binary,
// running beside it) holds on purpose.
func Owner() string {
	ownerOnce.Do(func() {
		owner = "unknown"
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/self/exe", &st); err == nil {
			owner = fmt.Sprintf("%x-%x", st.Dev, st.Ino)
		}
	})
	return owner
}

var (
	ownerOnce sync.Once
	owner     string
)

// userHZ is the unit of the start time in /proc/PID/stat (USER_HZ, 100 on every
// architecture Linux runs tare on).
const userHZ = 100

// age is how long pid has run, or 0 when that cannot be told.
func age(pid int) time.Duration {
	f := statFields(pid)
	if len(f) < 20 {
		return 0
	}
	start, err1 := strconv.ParseUint(f[19], 10, 64) // field 22, starttime
	up, err2 := os.ReadFile("/proc/uptime")
	secs, _, _ := strings.Cut(string(up), " ")
	uptime, err3 := strconv.ParseFloat(secs, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0
	}
	// Both clocks tick in hundredths: a process started this very tick may come out a
	// hair below zero.
	return max(0, time.Duration(uptime*float64(time.Second))-time.Duration(start)*time.Second/userHZ)
}

// comm is pid's command name, or "" when it is gone.
func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// procStatus is pid's /proc status as field: value (empty when pid is gone).
func procStatus(pid int) map[string]string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	return parseStatus(b)
}

// parseStatus reads a /proc status file as field: value, the value's blanks
// (tabs between the ids of Uid, say) made single spaces.
func parseStatus(b []byte) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return m
}
