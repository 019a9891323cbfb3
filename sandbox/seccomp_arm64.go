package sandbox

import "golang.org/x/sys/unix"

// auditArch is the only ABI the room's filter lets through.
const auditArch = unix.AUDIT_ARCH_AARCH64

// foreignABIBit is zero: arm64 has no second ABI under its audit arch.
const foreignABIBit = 0

// seccompLegacyModeCalls is empty: arm64 has chmod, open, creat and mknod
// only as their *at successors.
var seccompLegacyModeCalls []modeArg
