package sandbox

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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

// trySetID tries, on new files in a temporary folder, every call of
// seccompModeCalls with mode 04755 (mknod's as a regular file), chmod g+s
// of a folder, openat2 creating a file 04755, and setting a file
// capability (cap_net_raw+ep). Each Probe's Target names the try.
func trySetID() []Probe {
	dir, err := os.MkdirTemp("", ".tare-setid-")
	if err != nil {
		return []Probe{{Target: "temp folder", Err: errName(err)}}
	}
	defer os.RemoveAll(dir)
	n := 0
	fresh := func() string { n++; return filepath.Join(dir, strconv.Itoa(n)) }
	file := func() string {
		p := fresh()
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
		return p
	}
	var out []Probe
	add := func(what string, err error) {
		if e, ok := err.(unix.Errno); ok && e == 0 {
			err = nil
		}
		out = append(out, Probe{Target: what, OK: err == nil, Err: errName(err)})
	}
	cwd := unix.AT_FDCWD
	for _, c := range seccompModeCalls {
		var a [6]uintptr
		mode, pathArg := uintptr(0o4755), 0
		if c.name != "creat" && (strings.HasSuffix(c.name, "at") || strings.HasSuffix(c.name, "at2")) {
			a[0], pathArg = uintptr(cwd), 1
		}
		var p string
		switch c.name {
		case "fchmod":
			fd, err := unix.Open(file(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				add(c.name+" 4755", err)
				continue
			}
			defer unix.Close(fd)
			a[0], pathArg = uintptr(fd), -1
		case "chmod", "fchmodat", "fchmodat2":
			p = file()
		case "open", "openat":
			p = fresh()
			a[c.arg-1] = unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY | unix.O_CLOEXEC
		case "mknod", "mknodat":
			p, mode = fresh(), mode|unix.S_IFREG
		default: // creat
			p = fresh()
		}
		a[c.arg] = mode
		b, _ := unix.BytePtrFromString(p)
		if pathArg >= 0 {
			a[pathArg] = uintptr(unsafe.Pointer(b))
		}
		r, _, e := unix.Syscall6(c.nr, a[0], a[1], a[2], a[3], a[4], a[5])
		runtime.KeepAlive(b)
		if e == 0 && (strings.Contains(c.name, "open") || c.name == "creat") {
			unix.Close(int(r))
		}
		add(c.name+" 4755", e)
	}
	d := fresh()
	os.Mkdir(d, 0o755)
	add("chmod g+s folder", unix.Fchmodat(cwd, d, 0o2755, 0))
	fd, err := unix.Openat2(cwd, fresh(), &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC, Mode: 0o4755})
	if err == nil {
		unix.Close(fd)
	}
	add("openat2 4755", err)
	// struct vfs_cap_data: VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE,
	// then cap_net_raw permitted.
	capData := make([]byte, 20)
	binary.LittleEndian.PutUint32(capData, 0x02000000|1)
	binary.LittleEndian.PutUint32(capData[4:], 1<<unix.CAP_NET_RAW)
	add("setxattr security.capability", unix.Setxattr(file(), "security.capability", capData, 0))
	return out
}
