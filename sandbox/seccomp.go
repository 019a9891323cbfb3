package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// The room's seccomp filter, handed to bwrap with --seccomp and applied to
// the room's command just before it runs (bwrap's own setup is not
// filtered). Every other defence of the room stands without it; the filter
// takes away the kernel interfaces an agent never needs and an escape or a
// leak would start from:
//
//   - io_uring, whose operations bypass every other syscall rule here;
//   - ptrace and process_vm_readv/writev: attaching to another process and
//     copying its memory (they do not cover /proc/PID/mem, which the kernel
//     opens for any dumpable process of the same uid: bwrap's pid 1 has it
//     masked, see initMem, and tare's own processes are not dumpable, see
//     NotDumpable; the agent and its tools can read each other's);
//   - keyctl, add_key, request_key: the kernel keyrings, where a login's
//     secrets may live (the room also starts in a fresh session keyring);
//   - mount, the new mount API, unshare, setns, pivot_root: reshaping the
//     room from inside;
//   - bpf, perf_event_open, userfaultfd: the usual exploit primitives;
//   - modules, kexec, swap, reboot, acct, quotactl, open_by_handle_at;
//   - ioctl TIOCSTI and TIOCLINUX: typing into a terminal;
//   - socket(AF_PACKET) and socket(AF_VSOCK): raw frames and the hypervisor;
//   - a file mode with set-uid or set-gid (see seccompModeCalls).
//
// Each is answered with EPERM, so a program that probes for a feature sees
// it missing. A syscall of another ABI (32-bit x86, x32) kills the process:
// its numbers mean other calls, and the filter would not see them.
var seccompDenied = []uintptr{
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_QUOTACTL,
	unix.SYS_OPEN_BY_HANDLE_AT,
}

// seccompModeCalls are the calls that take a file mode, with the argument
// that holds it: the filter refuses (EPERM) a mode with S_ISUID or S_ISGID.
// The room's user is the operator's uid on the host, and the room's nosuid
// mounts end with the room: a set-uid file the agent makes in the workspace
// is the operator's set-uid file on the host (root's when tare runs as
// root), which any local user could run. chmod sets the bits, and so do
// open, creat and mknod: the kernel keeps S_ISUID from their mode (and
// S_ISGID when the group is the caller's). mkdir is not here: the kernel
// keeps only the permissions and sticky bit of its mode (a folder inherits
// S_ISGID from a parent that has it, such as a set-gid project of the
// operator's: the strip at the room's end takes it off). The legacy calls (chmod, open, creat, mknod)
// exist on amd64 only: seccompLegacyModeCalls.
//
// openat2 takes its mode inside a struct the filter cannot read: it is
// answered ENOSYS, as by a kernel before 5.6, and its callers fall back to
// openat. File capabilities (setxattr of security.capability) are left to
// the kernel, which refuses them without CAP_SETFCAP: the room has no
// capability (--cap-drop ALL) and cannot make a user namespace that would
// give it one (--disable-userns, unshare refused above). The attribute's name
// is behind a pointer the filter cannot read, and refusing every setxattr
// would break user.* attributes for nothing. What the room wrote is also
// stripped of all three when the room ends (stripSetID).
var seccompModeCalls = slices.Concat(seccompLegacyModeCalls, []modeArg{
	{unix.SYS_FCHMOD, 1, "fchmod"}, {unix.SYS_FCHMODAT, 2, "fchmodat"}, {unix.SYS_FCHMODAT2, 2, "fchmodat2"},
	{unix.SYS_OPENAT, 3, "openat"}, {unix.SYS_MKNODAT, 2, "mknodat"},
})

// modeArg is a call that takes a mode, the index of its mode argument, and
// its name.
type modeArg struct {
	nr   uintptr
	arg  int
	name string
}

// setIDBits are the mode bits no call in the room may set.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// seccompIoctls are the ioctl requests the room may not make (compared on
// the low 32 bits, as the kernel reads the request as an unsigned int).
var seccompIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// seccompSocketFamilies are the socket families the room may not open.
var seccompSocketFamilies = []uint32{unix.AF_PACKET, unix.AF_VSOCK}

// Offsets into struct seccomp_data: the syscall number, the audit arch, and
// the low 32 bits of an argument (little-endian: amd64 and arm64).
const (
	offNr   = 0
	offArch = 4
)

func offArgLow(i int) uint32 { return uint32(16 + 8*i) }

// bpfProg is a classic BPF program under construction, with jumps to
// labels resolved by assemble.
type bpfProg struct {
	ins    []unix.SockFilter
	jumps  []bpfJump
	labels map[string]int
}

type bpfJump struct {
	at              int
	onTrue, onFalse string // "" falls through
}

func (p *bpfProg) stmt(code uint16, k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

func (p *bpfProg) load(off uint32) { p.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

func (p *bpfProg) ret(v uint32) { p.stmt(unix.BPF_RET|unix.BPF_K, v) }

// jump compares the accumulator with k (BPF_JEQ, BPF_JGE, or BPF_JSET:
// true when they share a bit) and goes to label onTrue or onFalse; an empty
// label is the next instruction.
func (p *bpfProg) jump(op uint16, k uint32, onTrue, onFalse string) {
	p.jumps = append(p.jumps, bpfJump{at: len(p.ins), onTrue: onTrue, onFalse: onFalse})
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (p *bpfProg) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.ins)
}

// assemble resolves the jumps and returns the program in the byte layout
// bwrap's --seccomp reads (struct sock_filter, native order).
func (p *bpfProg) assemble() ([]byte, error) {
	rel := func(at int, name string) (uint8, error) {
		if name == "" {
			return 0, nil
		}
		to, ok := p.labels[name]
		d := to - at - 1
		if !ok || d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp: jump from %d to %q (%d) out of reach", at, name, to)
		}
		return uint8(d), nil
	}
	for _, j := range p.jumps {
		var err error
		if p.ins[j.at].Jt, err = rel(j.at, j.onTrue); err != nil {
			return nil, err
		}
		if p.ins[j.at].Jf, err = rel(j.at, j.onFalse); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	if err := binary.Write(&b, binary.NativeEndian, p.ins); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// seccompFilter returns the room's filter for this build's architecture.
// noModes leaves the mode rules out (the mutation tests' hook).
func seccompFilter(noModes bool) ([]byte, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("room: no seccomp filter for %s: tare's rooms run on amd64 and arm64", runtime.GOARCH)
	}
	var p bpfProg
	p.load(offArch)
	p.jump(unix.BPF_JEQ, auditArch, "", "kill")
	p.load(offNr)
	if foreignABIBit != 0 {
		p.jump(unix.BPF_JGE, foreignABIBit, "kill", "")
	}
	for _, nr := range seccompDenied {
		p.jump(unix.BPF_JEQ, uint32(nr), "deny", "")
	}
	p.jump(unix.BPF_JEQ, unix.SYS_IOCTL, "ioctl", "")
	p.jump(unix.BPF_JEQ, unix.SYS_SOCKET, "socket", "")
	args := map[int]bool{}
	if !noModes {
		for _, c := range seccompModeCalls {
			p.jump(unix.BPF_JEQ, uint32(c.nr), "mode"+strconv.Itoa(c.arg), "")
			args[c.arg] = true
		}
		p.jump(unix.BPF_JEQ, unix.SYS_OPENAT2, "nosys", "")
	}
	p.ret(unix.SECCOMP_RET_ALLOW)

	// The mode is a 32-bit mode_t (the kernel reads no more): its low word.
	for _, i := range slices.Sorted(maps.Keys(args)) {
		p.label("mode" + strconv.Itoa(i))
		p.load(offArgLow(i))
		p.jump(unix.BPF_JSET, setIDBits, "deny", "")
		p.ret(unix.SECCOMP_RET_ALLOW)
	}

	p.label("ioctl")
	p.load(offArgLow(1))
	for _, req := range seccompIoctls {
		p.jump(unix.BPF_JEQ, req, "deny", "")
	}
	p.ret(unix.SECCOMP_RET_ALLOW)

	p.label("socket")
	p.load(offArgLow(0))
	for _, fam := range seccompSocketFamilies {
		p.jump(unix.BPF_JEQ, fam, "deny", "")
	}
	p.ret(unix.SECCOMP_RET_ALLOW)

	p.label("nosys")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	p.label("deny")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	p.label("kill")
	p.ret(unix.SECCOMP_RET_KILL_PROCESS)
	return p.assemble()
}
