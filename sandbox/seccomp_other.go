//go:build !amd64 && !arm64

package sandbox

// auditArch is zero where tare has no filter: Start refuses to build a room.
const auditArch = 0

// foreignABIBit is unused without a filter.
const foreignABIBit = 0

// seccompLegacyModeCalls is unused without a filter.
var seccompLegacyModeCalls []modeArg
