package sandbox

import "golang.org/x/sys/unix"

// auditArch is the only ABI the room's filter lets through.
const auditArch = unix.AUDIT_ARCH_X86_64

// foreignABIBit marks x32 syscall numbers, which share AUDIT_ARCH_X86_64:
// any number at or above it is killed.
const foreignABIBit = 0x40000000
