package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/engine/room"
	"tare/modelserver"
)

// hookScript makes three tool calls, one per turn. Each records how many hooks had finished
// when it ran, so a hook that has not finished before the next tool shows in counts.txt.
const hookScript = `
[[turn]]
text = "Step one."
shell = "cat /tare-run/hooks.jsonl 2>/dev/null | wc -l >> /tare-run/counts.txt"

[[turn]]
text = "Step two."
shell = "cat /tare-run/hooks.jsonl 2>/dev/null | wc -l >> /tare-run/counts.txt"

[[turn]]
text = "Step three."
shell = "cat /tare-run/hooks.jsonl 2>/dev/null | wc -l >> /tare-run/counts.txt"

[[turn]]
text = "Three steps done."
`

// hookCommand stands in for tare snap: it takes a while (so a hook the agent does not wait
// for loses the race to the next tool and the next model request), then appends its stdin
// as one line and the time it finished.
const hookCommand = `/bin/sh -c 'sleep 0.2; tr -d "\n" >> /tare-run/hooks.jsonl; echo >> /tare-run/hooks.jsonl; date +%s%N >> /tare-run/hook-times'`

// TestHooksRunAfterEveryToolCall runs each real CLI in a real room with a PostToolUse hook
// against tare's model server: the hook runs once per tool call, with the call's tool-use id
// (the id the session file gives it), and finishes before the next tool runs and before the
// agent's next model request.
func TestHooksRunAfterEveryToolCall(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte(hookScript), "hooks.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, inst, cfg := mustFind(t, name)
			if kind := agent.HookKind(a); kind != agent.HookInAgent {
				t.Fatalf("HookKind(%s) = %q, want %q", name, kind, agent.HookInAgent)
			}
			srv := scriptServer(t, script)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()

			store, sessions := t.TempDir(), t.TempDir()
			p := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), Sessions: sessions, RunStore: store,
				Hooks: []agent.Hook{{Event: "PostToolUse", Command: hookCommand}}}
			box, _, err := room.Build(p, srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			_, out := runInRoom(ctx, t, box, inst.Command, a, a.RunArgs("Do the three steps.", nil))

			if got := readFile(t, filepath.Join(store, "counts.txt")); got != "0\n1\n2\n" {
				t.Fatalf("hooks finished before the tools 1, 2, 3: %q, want 0, 1, 2 (all 0: the hook never ran; lagging: it runs in the background)", got)
			}
			res, err := a.ParseStream(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			session, err := agent.FindSession(a, sessions, res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(session)
			if err != nil {
				t.Fatal(err)
			}
			trail, err := agent.ReadTrail(a, data)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(store, "hooks.jsonl"))), "\n")
			if len(lines) != 3 || len(trail.Steps) != 3 {
				t.Fatalf("%d hook runs and %d steps, want 3 of each:\n%s", len(lines), len(trail.Steps), strings.Join(lines, "\n"))
			}
			for i, line := range lines {
				var in struct {
					Event     string `json:"hook_event_name"`
					ToolUseID string `json:"tool_use_id"`
					Session   string `json:"session_id"`
				}
				if err := json.Unmarshal([]byte(line), &in); err != nil {
					t.Fatalf("hook %d stdin is not JSON: %v\n%s", i+1, err, line)
				}
				if in.Event != "PostToolUse" || in.ToolUseID != trail.Steps[i].IDs[0] || in.Session != res.SessionID {
					t.Errorf("hook %d got %+v, want PostToolUse for %s of session %s", i+1, in, trail.Steps[i].IDs[0], res.SessionID)
				}
			}

			// Each hook finished before the model was asked for the next turn.
			times := strings.Fields(readFile(t, filepath.Join(store, "hook-times")))
			for k, field := range times {
				ns, err := strconv.ParseInt(field, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				next, ok := firstRequestOfTurn(srv.Requests(), k+2)
				if !ok {
					t.Fatalf("no model request for turn %d", k+2)
				}
				if done := time.Unix(0, ns); !done.Before(next.Time) {
					t.Errorf("hook %d finished at %s, after the request for turn %d at %s", k+1, done.Format(time.StampMicro), k+2, next.Time.Format(time.StampMicro))
				}
			}
		})
	}
}

// firstRequestOfTurn is the first request the model server answered from scripted turn n.
func firstRequestOfTurn(reqs []modelserver.Request, n int) (modelserver.Request, bool) {
	for _, r := range reqs {
		if r.Turn == n {
			return r, true
		}
	}
	return modelserver.Request{}, false
}
