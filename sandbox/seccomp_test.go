package sandbox

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter executes the classic BPF program on one struct seccomp_data, as
// the kernel would, for the instructions the filter uses (LD W ABS, JEQ, JGE
// and JSET on K, RET K). The rooms themselves run the same bytes under the real
// kernel (checkSeccomp); this walks the corners a room cannot reach: other
// ABIs, ioctl requests with high bits set.
func runFilter(t *testing.T, prog []byte, arch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	ins := make([]unix.SockFilter, len(prog)/unix.SizeofSockFilter)
	if err := binary.Read(bytes.NewReader(prog), binary.NativeEndian, ins); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[offNr:], nr)
	binary.NativeEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(ins); pc++ {
		in := ins[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.NativeEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			ok := acc == in.K
			switch in.Code & 0xf0 {
			case unix.BPF_JGE:
				ok = acc >= in.K
			case unix.BPF_JSET:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// atCWD is AT_FDCWD as a syscall argument.
const atCWD = uint64(1<<64 - 100)

func TestSeccompFilterDecisions(t *testing.T) {
	prog, err := seccompFilter(false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(prog) / unix.SizeofSockFilter; n > unix.BPF_MAXINSNS || len(prog)%unix.SizeofSockFilter != 0 {
		t.Fatalf("program of %d bytes (%d instructions)", len(prog), n)
	}
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	kill := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	type call struct {
		name string
		arch uint32
		nr   uint32
		args [6]uint64
		want uint32
	}
	cases := []call{
		{"read", auditArch, unix.SYS_READ, [6]uint64{}, allow},
		{"execve", auditArch, unix.SYS_EXECVE, [6]uint64{}, allow},
		{"clone3", auditArch, unix.SYS_CLONE3, [6]uint64{}, allow},
		{"io_uring_setup", auditArch, unix.SYS_IO_URING_SETUP, [6]uint64{}, deny},
		{"keyctl", auditArch, unix.SYS_KEYCTL, [6]uint64{}, deny},
		{"mount_setattr", auditArch, unix.SYS_MOUNT_SETATTR, [6]uint64{}, deny},
		{"open_by_handle_at", auditArch, unix.SYS_OPEN_BY_HANDLE_AT, [6]uint64{}, deny},
		{"ioctl TCGETS", auditArch, unix.SYS_IOCTL, [6]uint64{0, unix.TCGETS}, allow},
		{"ioctl TIOCSTI", auditArch, unix.SYS_IOCTL, [6]uint64{0, unix.TIOCSTI}, deny},
		{"ioctl TIOCSTI with high bits", auditArch, unix.SYS_IOCTL, [6]uint64{0, 1<<32 | unix.TIOCSTI}, deny},
		{"ioctl TIOCLINUX", auditArch, unix.SYS_IOCTL, [6]uint64{0, unix.TIOCLINUX}, deny},
		{"socket AF_INET", auditArch, unix.SYS_SOCKET, [6]uint64{unix.AF_INET}, allow},
		{"socket AF_UNIX", auditArch, unix.SYS_SOCKET, [6]uint64{unix.AF_UNIX}, allow},
		{"socket AF_NETLINK", auditArch, unix.SYS_SOCKET, [6]uint64{unix.AF_NETLINK}, allow},
		{"socket AF_PACKET", auditArch, unix.SYS_SOCKET, [6]uint64{unix.AF_PACKET}, deny},
		{"socket AF_VSOCK with high bits", auditArch, unix.SYS_SOCKET, [6]uint64{1<<40 | unix.AF_VSOCK}, deny},
		{"another ABI", unix.AUDIT_ARCH_I386, 0, [6]uint64{}, kill},
		{"fchmod 0755", auditArch, unix.SYS_FCHMOD, [6]uint64{3, 0o755}, allow},
		{"fchmod 1777 (sticky)", auditArch, unix.SYS_FCHMOD, [6]uint64{3, 0o1777}, allow},
		{"fchmod 4755", auditArch, unix.SYS_FCHMOD, [6]uint64{3, 0o4755}, deny},
		{"fchmod 2755", auditArch, unix.SYS_FCHMOD, [6]uint64{3, 0o2755}, deny},
		{"fchmodat 0644", auditArch, unix.SYS_FCHMODAT, [6]uint64{atCWD, 0, 0o644}, allow},
		{"fchmodat 4755", auditArch, unix.SYS_FCHMODAT, [6]uint64{atCWD, 0, 0o4755}, deny},
		{"fchmodat 6755 with high bits", auditArch, unix.SYS_FCHMODAT, [6]uint64{atCWD, 0, 1<<32 | 0o6755}, deny},
		{"fchmodat2 2755", auditArch, unix.SYS_FCHMODAT2, [6]uint64{atCWD, 0, 0o2755, 0}, deny},
		{"fchmodat2 0700", auditArch, unix.SYS_FCHMODAT2, [6]uint64{atCWD, 0, 0o700, 0}, allow},
		{"openat O_CREAT 0644", auditArch, unix.SYS_OPENAT, [6]uint64{atCWD, 0, unix.O_CREAT, 0o644}, allow},
		{"openat O_CREAT 4755", auditArch, unix.SYS_OPENAT, [6]uint64{atCWD, 0, unix.O_CREAT, 0o4755}, deny},
		{"openat with S_ISUID in the flags, not the mode", auditArch, unix.SYS_OPENAT, [6]uint64{atCWD, 0, 0o4000, 0}, allow},
		{"mknodat S_IFREG|4755", auditArch, unix.SYS_MKNODAT, [6]uint64{atCWD, 0, unix.S_IFREG | 0o4755}, deny},
		{"mknodat S_IFIFO|0600", auditArch, unix.SYS_MKNODAT, [6]uint64{atCWD, 0, unix.S_IFIFO | 0o600}, allow},
		{"openat2", auditArch, unix.SYS_OPENAT2, [6]uint64{}, uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))},
		{"mkdirat 2755 (the kernel keeps 0777|sticky of it)", auditArch, unix.SYS_MKDIRAT, [6]uint64{atCWD, 0, 0o2755}, allow},
	}
	for _, c := range seccompLegacyModeCalls {
		var args [6]uint64
		args[c.arg] = 0o4755
		cases = append(cases, call{c.name + " 4755", auditArch, uint32(c.nr), args, deny})
		args[c.arg] = 0o755
		cases = append(cases, call{c.name + " 0755", auditArch, uint32(c.nr), args, allow})
	}
	if foreignABIBit != 0 {
		cases = append(cases, call{"x32 read", auditArch, foreignABIBit | unix.SYS_READ, [6]uint64{}, kill})
	}
	for _, c := range cases {
		if got := runFilter(t, prog, c.arch, c.nr, c.args); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

// TestBwrapFailureNamesSeccomp: a kernel without seccomp filters makes
// bwrap fail its prctl; the error says so instead of blaming namespaces.
func TestBwrapFailureNamesSeccomp(t *testing.T) {
	err := bwrapFailure("/usr/bin/bwrap", 1, "bwrap: prctl(PR_SET_SECCOMP): Invalid argument\n")
	if err == nil || !strings.Contains(err.Error(), "CONFIG_SECCOMP_FILTER") || strings.Contains(err.Error(), "namespaces") {
		t.Fatalf("error %v", err)
	}
}
