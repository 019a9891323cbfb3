package sandbox

import (
	"fmt"
	"os"
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
// by Wait). The room's command starts under `tare relay --lifeline FD`
// (package roomrelay), which ends the room when the pipe reports a hang-up: when tare is gone, however
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
