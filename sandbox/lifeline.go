package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The lifeline closes a window --die-with-parent leaves open. bwrap's child
// in the room (the room's pid 1) sets its parent-death signal only once the
// room is set up, after the mounts. A tare killed during that window kills
// bwrap, but the child, now an orphan, finishes the setup, arms its
// parent-death signal against its new parent (the host's init or a
// subreaper, which never dies) and starts the agent: a room nobody owns.
//
// So every room also gets the read end of a pipe of its own whose write end
// only this process holds (close-on-exec, never passed to any child, closed
// by Wait). The room's command starts under `tare relay --lifeline FD`, which
// ends the room when the pipe reports a hang-up: when tare is gone, however
// it went. The relay makes itself non-dumpable, so the agent cannot reopen
// the pipe through /proc/2/fd (a pipe opened there for writing would keep
// the lifeline from ever hanging up); and one pipe per room means no room
// can touch another's.
func newLifeline() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("room: lifeline pipe: %v", err)
	}
	return r, w, nil
}

// errLifelineCut means the process that started the room is gone.
var errLifelineCut = errors.New("tare, which started this room, is gone")

// watchLifeline takes fd (the lifeline's read end) away from the command the
// relay starts, reports at once whether tare is already gone, and otherwise
// calls cut from a goroutine once it is.
func watchLifeline(fd int, cut func()) error {
	syscall.CloseOnExec(fd)
	if gone, err := lifelineCut(fd, 0); err != nil {
		return err
	} else if gone {
		return errLifelineCut
	}
	go func() {
		for {
			gone, err := lifelineCut(fd, -1)
			if gone || err != nil {
				cut()
				return
			}
		}
	}()
	return nil
}

// lifelineCut polls fd for up to timeout milliseconds (-1: forever) and
// reports whether its writer is gone. Nothing is ever written to the pipe,
// so any event means the write end was closed.
func lifelineCut(fd, timeout int) (bool, error) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("--lifeline %d: %v", fd, err)
		}
		if pfd[0].Revents&unix.POLLNVAL != 0 {
			return false, fmt.Errorf("--lifeline %d: not an open descriptor", fd)
		}
		return n > 0, nil
	}
}

// endRoom kills every other process of the room. The relay is the room's
// pid 2: kill(-1) reaches every process of its pid namespace but pid 1 and
// itself, and bwrap's pid 1 exits once it has no child left.
func endRoom() {
	_ = syscall.Kill(-1, syscall.SIGKILL)
}
