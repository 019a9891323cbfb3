package engine

import (
	"os"
	"testing"

	"tare/engine/probe"
)

// TestMain lets the rooms these tests start run this test binary as /opt/tare/tare: the
// in-room entry points (relay, inspect, snap, mcp-canary) are the real code, dispatched as
// tare's main.go dispatches them.
func TestMain(m *testing.M) {
	if code, ok := probe.InRoom(os.Args[1:]); ok {
		os.Exit(code)
	}
	if addr := os.Getenv("TARE_TEST_ECHO_DIAL"); addr != "" {
		os.Exit(echoDialMain(addr)) // see slurm_test.go
	}
	os.Exit(m.Run())
}
