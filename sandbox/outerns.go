package sandbox

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// outerNamespace starts bwrap as pid 1 of a pid namespace of its own (in a user namespace
// that maps this user to itself and nothing else, which an unprivileged pid namespace
// needs), with a parent-death SIGKILL armed before bwrap runs a single instruction.
//
// This is what makes "a room outlives the tare that started it" impossible rather than
// swept after. bwrap's outer process arms its own parent-death signal (--die-with-parent)
// only once it runs, and the room's pid 1 arms its own only at the end of its setup; before
// that, pid 1 waits on an eventfd for bwrap's go-ahead, and an eventfd never reports that
// its writer died. A tare killed in that window used to leave pid 1 blocked forever with no
// child, no parent-death signal and no lifeline yet: a room no later tare could tell from a
// live one. Now every process of the room is also a member of bwrap's own pid namespace,
// and when the init of a pid namespace dies the kernel kills every member: the tare's
// death kills bwrap (Pdeathsig, on the locked thread that forked it, see Proc.run), and
// bwrap's death kills the whole room, whatever stage of its setup it was in.
//
// The extra user namespace maps only this uid and gid to themselves, so bwrap runs with no
// capability (execve drops them for a non-root uid) and sees the same ids as before;
// bwrap then makes the room's own user namespace inside it, as it always did.
func outerNamespace(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.Pdeathsig = syscall.SIGKILL
}

// hostPid is the host pid of the child of bwrap (host pid bwrap) whose pid in bwrap's own
// namespace is inner, or 0 when there is none.
func hostPid(bwrap, inner int) int {
	want := strconv.Itoa(inner)
	for _, c := range children(bwrap) {
		ns := strings.Fields(procStatus(c)["NSpid"])
		// NSpid: host pid, then bwrap's namespace's, then (for the room's pid 1) the room's.
		if len(ns) >= 2 && ns[1] == want {
			return c
		}
	}
	return 0
}
