// Package agenttest holds what the engine's tests and the probe's share to run the real
// agent CLIs: which agents, and the config that names this checkout's pinned copies.
package agenttest

import (
	"os"
	"path/filepath"
	"testing"

	"tare/agent"
	"tare/config"
)

// RealAgents are the agents verified by the tests; each must be installed (scripts/setup
// does it).
var RealAgents = []string{"claude", "codex", "pi", "gemini"}

// Config is the config a user of this checkout would have: the project's pinned CLIs,
// named through agents.NAME.bin, and a state folder of the test's own.
func Config(t testing.TB, agents []string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(nil, "none")
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = t.TempDir()
	for _, name := range append(agents, RealAgents...) {
		if bin := filepath.Join(RepoRoot(t), "agents", name, "node_modules", ".bin", name); FileExists(bin) {
			cfg.Agents[name] = config.Agent{Bin: bin}
		}
	}
	return cfg
}

// NeedRooms skips t under -short: it starts rooms (bwrap, the agent CLIs, Chromium) or the
// local Slurm cluster, seconds to minutes each on a busy machine. Without -short nothing is
// skipped: a missing tool fails the test.
func NeedRooms(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts rooms or Slurm; skipped under -short")
	}
}

// RepoRoot is the folder holding go.mod, above the package under test.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if FileExists(filepath.Join(dir, "go.mod")) {
			return dir
		}
	}
	t.Fatal("no go.mod above the test's folder")
	return ""
}

// FileExists reports whether path exists.
func FileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// MustFind finds an agent's CLI with find (room.FindAgent) or fails the test with the fix:
// these tests are not optional, a machine without the CLIs must go red.
func MustFind(t testing.TB, name string, find func(agent.Agent, *config.Config, ...string) (agent.Install, error)) (agent.Agent, agent.Install, *config.Config) {
	t.Helper()
	a, err := agent.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config(t, []string{name})
	inst, err := find(a, cfg)
	if err != nil {
		t.Fatalf("%v (run scripts/setup to install the pinned agent CLIs)", err)
	}
	return a, inst, cfg
}
