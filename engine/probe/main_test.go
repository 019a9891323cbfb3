package probe

import (
	"os"
	"testing"

	"tare/agent"
	"tare/config"
	"tare/engine/internal/agenttest"
	"tare/engine/room"
)

// TestMain lets the rooms these tests start run this test binary as /opt/tare/tare: the
// in-room entry points (relay, inspect, mcp-canary) are the real code, dispatched as tare's
// main.go dispatches them.
func TestMain(m *testing.M) {
	if code, ok := InRoom(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// realAgents are the agents verified here; each must be installed (scripts/setup does it).
var realAgents = agenttest.RealAgents

// needRooms skips a test that starts rooms under -short (agenttest.NeedRooms).
func needRooms(t testing.TB) { agenttest.NeedRooms(t) }

func testConfig(t testing.TB, agents []string) *config.Config { return agenttest.Config(t, agents) }

func mustFind(t testing.TB, name string) (agent.Agent, agent.Install, *config.Config) {
	return agenttest.MustFind(t, name, room.FindAgent)
}
