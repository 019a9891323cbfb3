package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
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

// updateTrails rewrites the agent package's trail fixtures from real runs:
//
//	go test ./engine -run TestTrailsAndNativeCut -update-trails
var updateTrails = flag.Bool("update-trails", false, "write the runs' session files and streams to agent/testdata")

// trailScript makes six tool calls in five model turns: a shell command, a file write, two
// commands issued together, a command reading what the others made, a failing command.
// Turns 3 and 4 leave files a session cut after step 2 and resumed shows it went on from.
const trailScript = `
[[turn]]
text = "Looking around first."
shell = "ls"

[[turn]]
text = "Writing the notes."
write = { path = "notes/a.txt", content = "alpha\n" }

[[turn]]
text = "Two files at once."
shell = ["echo one > one.txt", "echo two > two.txt"]

[[turn]]
shell = "echo four > four.txt"

[[turn]]
text = "This one fails."
shell = "echo failing >&2; exit 3"

[[turn]]
text = "All done: five steps."
`

const trailTask = "Do the five steps."

// TestTrailsAndNativeCut runs each real CLI through a five-step script in a real room, reads
// its session file as a trail, cuts the session after step 2 and resumes the cut session in a
// brand-new room on an empty workspace: the model sees exactly the two tool turns kept, the
// agent carries on with the next scripted turn (its file appears, notes/a.txt of step 2 does
// not) and exits 0, and the resumed session file continues the cut one.
//
// Claude Code treats a transcript that ends in tool results as an interrupted turn: on resume
// it appends "Continue from where you left off." to the last tool results and an assistant
// "No response requested." before the new prompt (the model server does not count that filler
// as a turn). Codex and pi send the kept history and the new prompt alone.
func TestTrailsAndNativeCut(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte(trailScript), "trail.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, inst, cfg := mustFind(t, name)
			srv := scriptServer(t, script)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()

			// The original run.
			work, sessions := t.TempDir(), t.TempDir()
			p := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: work, Sessions: sessions}
			box, _, err := room.Build(p, srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			_, stream := runInRoom(ctx, t, box, inst.Command, a, a.RunArgs(trailTask, nil))
			res, _ := a.ParseStream(bytes.NewReader(stream))
			path, err := agent.FindSession(a, sessions, res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if *updateTrails {
				dir := filepath.Join(repoRoot(t), "agent", "testdata")
				for file, content := range map[string][]byte{name + "_trail_session.jsonl": data, name + "_trail_stream.jsonl": stream} {
					if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}

			trail, err := agent.ReadTrail(a, data)
			if err != nil {
				t.Fatal(err)
			}
			if trail.SessionID != res.SessionID || trail.Task != trailTask || len(trail.Steps) != 5 {
				t.Fatalf("trail of session %s, task %q, %d steps; want %s, %q, 5 steps: %+v",
					trail.SessionID, trail.Task, len(trail.Steps), res.SessionID, trailTask, trail.Steps)
			}
			// The stream names the same tool calls, as they happen (Codex's stream has its own
			// item ids, Gemini CLI's its own call ids where the trail numbers the calls).
			var started []string
			for _, line := range bytes.Split(stream, []byte("\n")) {
				if l, ok := agent.ParseLine(a, line); ok && l.Kind == agent.LiveToolStart {
					started = append(started, l.ID)
				}
			}
			var ids []string
			for _, s := range trail.Steps {
				ids = append(ids, s.IDs...)
			}
			if len(started) != 6 || len(ids) != 6 || len(trail.Steps[2].IDs) != 2 || (name != "codex" && name != "gemini" && strings.Join(started, " ") != strings.Join(ids, " ")) {
				t.Fatalf("stream tool starts %v, trail ids %v: want the same six calls, two of them in step 3", started, ids)
			}

			// Cut after step 2 and resume in a brand-new room, on an empty workspace.
			cut, err := agent.CutSession(a, data, trail.Steps[1])
			if err != nil {
				t.Fatal(err)
			}
			before := len(srv.Requests())
			fresh := t.TempDir()
			q := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: fresh, Sessions: t.TempDir()}
			if err := room.PlaceSession(&q, cut, res.SessionID); err != nil {
				t.Fatal(err)
			}
			box, _, err = room.Build(q, srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			_, again := runInRoom(ctx, t, box, inst.Command, a, a.ResumeArgs(res.SessionID, "Continue.", nil))
			if got, _ := a.ParseStream(bytes.NewReader(again)); got.SessionID != res.SessionID {
				t.Fatalf("resume ran session %q, want %q", got.SessionID, res.SessionID)
			}
			var first *modelserver.Request
			for _, r := range srv.Requests()[before:] {
				if r.Turn > 0 {
					first = &r
					break
				}
			}
			if first == nil {
				t.Fatal("the resumed session asked the model nothing")
			}
			t.Logf("%s resumed with: %s", name, historyShape(first.Body))
			want, made := 3, "one.txt"
			if turns := toolTurns(t, first.API, first.Body); first.Turn != want || turns != 2 {
				t.Fatalf("the resumed session's first request had %d tool turns in its history and was answered as turn %d; want 2 and turn %d\nhistory: %s",
					turns, first.Turn, want, historyShape(first.Body))
			}
			if !fileExists(filepath.Join(fresh, made)) || fileExists(filepath.Join(fresh, "notes", "a.txt")) {
				t.Fatalf("the resumed session did not carry on from step 2: %s missing or notes/a.txt redone", made)
			}
			path, err = agent.FindSession(a, q.Sessions, res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			data, err = os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			resumed, err := agent.ReadTrail(a, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(resumed.Steps) < 4 || strings.Join(resumed.Steps[1].IDs, " ") != strings.Join(trail.Steps[1].IDs, " ") ||
				strings.Join(resumed.Steps[2].IDs, " ") == strings.Join(trail.Steps[2].IDs, " ") {
				t.Fatalf("the resumed session file does not continue the cut one after step 2: %+v", resumed.Steps)
			}
		})
	}
}

// toolTurns counts the model turns with tool calls in a request's history, as the model
// server does: calls issued together (consecutive assistant messages with tool_use blocks,
// consecutive call items) count once.
func toolTurns(t *testing.T, api string, body []byte) int {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
		Contents []struct {
			Role  string                       `json:"role"`
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	n, prevCall := 0, false
	for _, c := range req.Contents { // Gemini: model turns with functionCall parts
		call := false
		for _, p := range c.Parts {
			call = call || (c.Role == "model" && p["functionCall"] != nil)
		}
		if call && !prevCall {
			n++
		}
		prevCall = call
	}
	if api == "responses" {
		for _, item := range req.Input {
			call := item.Type == "function_call" || item.Type == "custom_tool_call" || item.Type == "local_shell_call"
			if call && !prevCall {
				n++
			}
			if item.Type != "reasoning" {
				prevCall = call
			}
		}
		return n
	}
	for _, m := range req.Messages {
		if m.Role == "system" {
			continue // Claude Code's mid-conversation system messages
		}
		var blocks []struct {
			Type string `json:"type"`
		}
		json.Unmarshal(m.Content, &blocks)
		call := false
		for _, b := range blocks {
			call = call || (m.Role == "assistant" && b.Type == "tool_use")
		}
		if call && !prevCall {
			n++
		}
		prevCall = call
	}
	return n
}

// historyShape is a request's history in brief, for failure messages: each message's role
// and block types, or each input item's type.
func historyShape(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input []struct {
			Type string `json:"type"`
			Role string `json:"role"`
		} `json:"input"`
		Contents []struct {
			Role  string                       `json:"role"`
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	json.Unmarshal(body, &req)
	var out []string
	for _, c := range req.Contents {
		var kinds []string
		for _, p := range c.Parts {
			for k, v := range p {
				var text string
				switch {
				case k == "text" && json.Unmarshal(v, &text) == nil:
					kinds = append(kinds, "text "+strconv.Quote(clipText(text, 40)))
				case k != "thoughtSignature":
					kinds = append(kinds, k)
				}
			}
		}
		out = append(out, c.Role+"["+strings.Join(kinds, ", ")+"]")
	}
	for _, m := range req.Messages {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &blocks)
		var kinds []string
		for _, b := range blocks {
			k := b.Type
			if b.Type == "text" {
				k += " " + strconv.Quote(clipText(b.Text, 40))
			}
			kinds = append(kinds, k)
		}
		out = append(out, m.Role+"["+strings.Join(kinds, ", ")+"]")
	}
	for _, item := range req.Input {
		out = append(out, strings.TrimSpace(item.Type+" "+item.Role))
	}
	return strings.Join(out, " | ")
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
