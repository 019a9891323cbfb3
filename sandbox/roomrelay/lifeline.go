package roomrelay

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// The lifeline is the read end of a pipe whose write end only the tare that started the
// room holds (see sandbox/lifeline.go for why every room has one).

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
