package engine

import (
	"fmt"
	"os"
	"testing"

	"tare/sandbox"
)

// TestMain lets the rooms these tests start run this test binary as /opt/tare/tare: the
// in-room entry points (relay, inspect, mcp-canary) are the real code, dispatched here as
// tare's main.go dispatches them.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "relay":
			os.Exit(sandbox.RelayMain(os.Args[2:]))
		case "inspect":
			os.Exit(sandbox.InspectMain(os.Args[2:]))
		case "mcp-canary":
			if err := MCPCanary(os.Args[2], os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}
