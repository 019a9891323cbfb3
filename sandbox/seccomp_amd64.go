package sandbox

import "golang.org/x/sys/unix"

// auditArch is the only ABI the room's filter lets through.
const auditArch = unix.AUDIT_ARCH_X86_64

// foreignABIBit marks x32 syscall numbers, which share AUDIT_ARCH_X86_64:
// any number at or above it is killed.
const foreignABIBit = 0x40000000

// seccompLegacyModeCalls are amd64's calls that take a mode and have an *at
// successor (arm64 has only the successors).
var seccompLegacyModeCalls = []modeArg{
	{unix.SYS_CHMOD, 1, "chmod"}, {unix.SYS_OPEN, 2, "open"}, {unix.SYS_CREAT, 1, "creat"}, {unix.SYS_MKNOD, 1, "mknod"},
}
