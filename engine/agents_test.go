package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine/internal/agenttest"
	"tare/engine/room"
	"tare/modelserver"
	"tare/sandbox"
)

// realAgents are the agents verified here; each must be installed (scripts/setup does it).
var realAgents = agenttest.RealAgents

const twoSessionsScript = `
[[turn]]
text = "Creating the file."
shell = "echo made by tare > made.txt"

[[turn]]
text = "First part done."

[[turn]]
text = "Continuing."
shell = "echo resumed >> made.txt"

[[turn]]
text = "All done."
`

// needRooms skips a test that starts rooms under -short (agenttest.NeedRooms).
func needRooms(t testing.TB) { agenttest.NeedRooms(t) }

// testConfig is the config a user of this checkout would have (agenttest.Config).
func testConfig(t testing.TB, agents []string) *config.Config { return agenttest.Config(t, agents) }

// mustFind finds an agent's CLI or fails the test (agenttest.MustFind).
func mustFind(t testing.TB, name string) (agent.Agent, agent.Install, *config.Config) {
	return agenttest.MustFind(t, name, room.FindAgent)
}

// TestRealAgentsRunAndResumeInRooms runs each real CLI in a real room against tare's model
// server: a scripted tool call changes the workspace and the agent exits 0; then the session
// is resumed in a brand-new room, which continues the script where the session stopped.
func TestRealAgentsRunAndResumeInRooms(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte(twoSessionsScript), "two-sessions.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptServer(t, script)

	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, inst, cfg := mustFind(t, name)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			work := t.TempDir()
			sessions := t.TempDir()

			p := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: work, Sessions: sessions}
			res := runAgent(ctx, t, p, srv.Addr(), a.RunArgs("Create made.txt in the workspace.", nil))
			if got := readFile(t, filepath.Join(work, "made.txt")); got != "made by tare\n" {
				t.Fatalf("the tool did not change the workspace: made.txt = %q", got)
			}
			session, err := agent.FindSession(a, sessions, res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(session)
			if err != nil {
				t.Fatal(err)
			}

			// A brand-new room: fresh HOME, fresh session folder holding only the placed session.
			q := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: work, Sessions: t.TempDir()}
			if err := room.PlaceSession(&q, data, res.SessionID); err != nil {
				t.Fatal(err)
			}
			again := runAgent(ctx, t, q, srv.Addr(), a.ResumeArgs(res.SessionID, "Continue.", nil))
			if again.SessionID != res.SessionID {
				t.Fatalf("resume started session %q, want %q", again.SessionID, res.SessionID)
			}
			if got := readFile(t, filepath.Join(work, "made.txt")); got != "made by tare\nresumed\n" {
				t.Fatalf("the resumed session did not continue the script: made.txt = %q", got)
			}
			if !strings.Contains(again.Text, "All done.") {
				t.Fatalf("resumed run ended with %q, want the script's last text", again.Text)
			}
		})
	}
}

// scriptServer is tare's model server replaying script on loopback, closed when the test
// (and its parallel subtests) end.
func scriptServer(t *testing.T, script *modelserver.Script) *modelserver.Server {
	t.Helper()
	srv, err := modelserver.New(modelserver.Options{Script: script, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// runAgent runs argv in a room built from p and returns the parsed stream; it fails the
// test unless the agent exits 0 with a successful result.
func runAgent(ctx context.Context, t *testing.T, p room.Plan, upstream string, argv []string) agent.Result {
	t.Helper()
	box, _, err := room.Build(p, upstream)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := runInRoom(ctx, t, box, p.Inst.Command, p.Agent, argv)
	return res
}

// runInRoom runs command with argv in room and returns the parsed stream and its bytes; it
// fails the test unless the agent exits 0 with a successful result.
func runInRoom(ctx context.Context, t *testing.T, box sandbox.Room, command string, a agent.Agent, argv []string) (agent.Result, []byte) {
	t.Helper()
	box.Argv = append([]string{command}, argv...)
	var out, errOut bytes.Buffer
	box.Stdout, box.Stderr = &out, &errOut
	box.Log = testLog{t}
	code, err := room.Run(ctx, box)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("%s exited %d\nstderr: %s\nstdout: %s", a.Name(), code, errOut.String(), out.String())
	}
	res, err := a.ParseStream(bytes.NewReader(out.Bytes()))
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %s\nstdout: %s", a.Name(), err, res.Error, out.String())
	}
	return res, out.Bytes()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// repoRoot is the folder holding go.mod, above the package under test.
func repoRoot(t testing.TB) string { return agenttest.RepoRoot(t) }

func fileExists(path string) bool { return agenttest.FileExists(path) }

// testLog sends a room's host relay log lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
