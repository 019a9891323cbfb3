package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// sweepStranded kills the rooms a killed tare stranded in bwrap's own setup. Rooms started
// since outerNamespace die with their bwrap, so only a tare older than that (or a test that
// strands one on purpose) leaves one: bwrap's outer process armed its parent-death signal
// and died with its tare before it let the room's pid 1 go on, and pid 1 then waits for its
// go-ahead forever (no lifeline reaches a room whose command never starts). Such a pid 1 is
// a bwrap of this uid, pid 1 of its own pid namespace, with no child, whose parent is no
// bwrap, and whose argv starts tare's relay with an --owner: tare's marker, whatever binary
// started it. It is swept when that owner is a tare that is gone (ownerAlive); a room
// whose owner is still running is left to it, which may be holding it there on purpose.
// Killing pid 1 ends its pid namespace. It returns the pids it killed.
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
// then its lifeline ends it).
var strandedAge = 2 * time.Second

// legacyStrandedAge is how long a stranded room of a tare that named its owner by its
// binary alone (before owners named their process) must have waited: whether that tare
// still runs cannot be told, but a room stuck that long in a setup of milliseconds is
// nobody's.
var legacyStrandedAge = 10 * time.Minute

// stranded reports whether pid is a room's pid 1 stuck in setup with its bwrap and its tare gone.
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
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	relay := slices.ContainsFunc(args, func(a string) bool { return a == TareBin || a == HelperBin }) && slices.Contains(args, "relay")
	i := slices.Index(args, "--owner")
	if !relay || i < 0 || i+1 >= len(args) {
		return false
	}
	alive, known := ownerAlive(args[i+1])
	if !known {
		return age(pid) >= legacyStrandedAge
	}
	return !alive
}

// Owner names this process as every room it starts carries it in its relay's argv
// (--owner): "tare.PID.START", its pid and its start time in clock ticks since boot (a pid
// alone is reused). A sweep by any tare binary tells from it whether the room's tare still
// runs (ownerAlive).
func Owner() string {
	ownerOnce.Do(func() {
		owner = "tare." + strconv.Itoa(os.Getpid()) + "."
		if f := statFields(os.Getpid()); len(f) >= 20 {
			owner += f[19]
		}
	})
	return owner
}

// ownerAlive says whether the tare an --owner names still runs; known is false for an owner
// in the old form (the binary's device and inode), which names no process.
func ownerAlive(o string) (alive, known bool) {
	f := strings.Split(o, ".")
	if len(f) != 3 || f[0] != "tare" {
		return false, false
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return false, false
	}
	st := statFields(pid)
	return len(st) >= 20 && st[19] == f[2], true
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
