package sandbox

import (
	"encoding/binary"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What the room's seccomp filter and fresh session keyring take away, seen
// from inside: each try names the errno it met, or "ok".

// tryIOUring sets up a one-entry io_uring.
func tryIOUring() string {
	var params [120]byte // struct io_uring_params
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if e != 0 {
		return errName(e)
	}
	unix.Close(int(fd))
	return "ok"
}

// tryProcessVM reads eight bytes of this very process through
// process_vm_readv, the call that reads another process's memory.
func tryProcessVM() string {
	src := [8]byte{'t', 'a', 'r', 'e'}
	var dst [8]byte
	local := []unix.Iovec{{Base: &dst[0], Len: uint64(len(dst))}}
	remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: len(src)}}
	_, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0)
	return errName(err)
}

// tryPtrace peeks at the parent's memory. Without a filter the kernel
// answers ESRCH (not attached); the filter answers EPERM before that.
func tryPtrace() string {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, uintptr(os.Getppid()), 0, 0, 0, 0)
	if e != 0 {
		return errName(e)
	}
	return "ok"
}

// trySocket opens a socket of family fam.
func trySocket(fam int) string {
	fd, err := unix.Socket(fam, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.Close(fd)
	}
	return errName(err)
}

// readSessionKeys lists the session keyring the process holds: the
// description line of each key ("type;uid;gid;perm;description"), and
// "ok" or the errno keyctl met.
func readSessionKeys() ([]string, string) {
	id, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
	if err != nil {
		return nil, errName(err)
	}
	buf := make([]byte, 4096)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil {
		return nil, errName(err)
	}
	keys := []string{}
	for i := 0; i+4 <= min(n, len(buf)); i += 4 {
		k := int(int32(binary.NativeEndian.Uint32(buf[i:])))
		d, err := unix.KeyctlString(unix.KEYCTL_DESCRIBE, k)
		if err != nil {
			d = "key " + errName(err)
		}
		keys = append(keys, d)
	}
	return keys, "ok"
}

// readLines returns the lines of a file, nil when it is unreadable or empty.
func readLines(p string) []string {
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}
