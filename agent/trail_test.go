package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// kinds is the trail's events in brief: "ta as to tr ..." (task, assistant, tool_call, tool_result, user).
func kinds(events []Event) string {
	short := map[string]string{EventTask: "ta", EventAssistant: "as", EventToolCall: "to", EventToolResult: "tr", EventUser: "us"}
	var out []string
	for _, e := range events {
		out = append(out, short[e.Kind])
	}
	return strings.Join(out, " ")
}

// The *_trail_session.jsonl files are session files of real runs in rooms against tare's
// model server (engine's TestTrailsAndNativeCut -update-trails writes them): six tool calls
// in five turns, two of them issued together, the last one failing. The others are the
// offline report's samples: one tool call, and the same session after a resume.
func TestTrail(t *testing.T) {
	five := "ta as to tr as to tr as to to tr tr to tr as to tr as"
	one, resumed := "ta as to tr as", "ta as to tr as us as to tr as"
	type step struct {
		ids       int
		tool      string
		cut, evts int
	}
	tests := []struct {
		file    string
		agent   Agent
		session string
		task    string
		events  string
		steps   []step
	}{
		{"claude_trail_session.jsonl", Claude{}, "142566ac-028c-4ef7-838e-959771bf0cb0", "Do the five steps.", five, []step{
			{1, "Bash: ls", 8, 4}, {1, "Write: notes/a.txt", 11, 7}, {2, "Bash: echo one > one.txt + Bash: echo two > two.txt", 16, 12},
			{1, "Bash: echo four > four.txt", 18, 14}, {1, "Bash: echo failing >&2; exit 3", 21, 17}}},
		{"codex_trail_session.jsonl", Codex{}, "01a22a31-3c9d-7362-8ac2-061987bed5fe", "Do the five steps.", five, []step{
			{1, "exec_command: ls", 15, 4}, {1, "exec_command: mkdir -p 'notes' && cat > 'notes/a.txt' <<'TARE_EOF' …", 22, 7},
			{2, "exec_command: echo one > one.txt + exec_command: echo two > two.txt", 32, 12},
			{1, "exec_command: echo four > four.txt", 37, 14}, {1, "exec_command: echo failing >&2; exit 3", 44, 17}}},
		{"pi_trail_session.jsonl", Pi{}, "01a22a31-2c8b-73e0-9c03-60edb38dcfe3", "Do the five steps.", five, []step{
			{1, "bash: ls", 6, 4}, {1, "write: notes/a.txt", 8, 7}, {2, "bash: echo one > one.txt + bash: echo two > two.txt", 11, 12},
			{1, "bash: echo four > four.txt", 13, 14}, {1, "bash: echo failing >&2; exit 3", 15, 17}}},
		{"gemini_trail_session.jsonl", Gemini{}, "037c4021-db59-43ee-bb58-70d0a37ea141", "Do the five steps.", five, []step{
			{1, "run_shell_command: ls", 7, 4}, {1, "write_file: notes/a.txt", 12, 7},
			{2, "run_shell_command: echo one > one.txt + run_shell_command: echo two > two.txt", 17, 12},
			{1, "run_shell_command: echo four > four.txt", 22, 14}, {1, "run_shell_command: echo failing >&2; exit 3", 27, 17}}},
		// The offline report's session resumed once: the resume writes the history again as
		// {"$set": {"messages": ...}} with the calls as functionCall parts; steps keep theirs.
		{"gemini_session_resumed.jsonl", Gemini{}, "d2d90a47-6286-40da-ace2-b02240b14795", "Create hello.txt", resumed, []step{
			{1, "run_shell_command: echo 'hello from fake gemini turn 1' >> hello.txt && pwd && cat hello.txt", 7, 4},
			{1, "run_shell_command: echo 'hello from fake gemini turn 2' >> hello.txt && pwd && cat hello.txt", 21, 9}}},
		{"claude_transcript.jsonl", Claude{}, "8726f800-9ece-4cbe-a126-48846eefd648", "Create hello.txt", one, []step{
			{1, "Bash: echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd", 8, 4}}},
		{"claude_transcript_after_resume.jsonl", Claude{}, "8d266725-c510-4244-a1bd-957d5d9446f3", "Create hello.txt", resumed, []step{
			{1, "Bash: echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd", 8, 4},
			{1, "Bash: echo 'hello from fake model (turn 2)' >> hello.txt && cat hello.txt && pwd", 16, 9}}},
		{"codex_rollout_session.jsonl", Codex{}, "01a229f8-484e-7281-ad30-1c3ae3ac4aa6", "Create hello.txt", one, []step{
			{1, "exec_command: echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd", 15, 4}}},
		{"codex_rollout_after_resume.jsonl", Codex{}, "01a229f8-9016-7710-b597-dad295f6ae3a", "Create hello.txt", resumed, []step{
			{1, "exec_command: echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd", 15, 4},
			{1, "exec_command: echo 'hello from fake model (turn 2)' >> hello.txt && cat hello.txt && pwd", 32, 9}}},
		{"pi_session.jsonl", Pi{}, "01a229f9-1840-7759-b223-d21d88a45547", "Create hello.txt", one, []step{
			{1, "bash: echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd", 6, 4}}},
		{"pi_session_after_resume.jsonl", Pi{}, "01a229f9-1840-7759-b223-d21d88a45547", "Create hello.txt", resumed, []step{
			{1, "bash: echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd", 6, 4},
			{1, "bash: echo 'hello from fake model (turn 2)' >> hello.txt && cat hello.txt && pwd", 10, 9}}},
	}
	for _, tt := range tests {
		data := readTestdata(t, tt.file)
		tr, err := ReadTrail(tt.agent, data)
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if tr.SessionID != tt.session || tr.Task != tt.task || kinds(tr.Events) != tt.events || len(tr.Steps) != len(tt.steps) {
			t.Errorf("%s: session %q task %q events %q, %d steps; want %q %q %q, %d steps",
				tt.file, tr.SessionID, tr.Task, kinds(tr.Events), len(tr.Steps), tt.session, tt.task, tt.events, len(tt.steps))
			continue
		}
		lines := sessionLines(data)
		for i, s := range tr.Steps {
			w := tt.steps[i]
			if s.N != i+1 || len(s.IDs) != w.ids || s.Tool != w.tool || s.Cut != w.cut || s.Events != w.evts {
				t.Errorf("%s step %d: %+v, want %+v", tt.file, i+1, s, w)
				continue
			}
			// The cut line holds a result of the step, the handoff cut ends on one, and
			// every id of the step is a call event before it.
			last := tr.Events[s.Events-1]
			inLine := last.ID
			if tt.agent.Name() == "gemini" { // gemini_<model message id>_<call>: the line has the message
				inLine = strings.TrimPrefix(inLine[:strings.LastIndex(inLine, "_")], "gemini_")
			}
			if last.Kind != EventToolResult || !bytes.Contains(lines[s.Cut-1], []byte(inLine)) {
				t.Errorf("%s step %d: the cuts do not end on the step's results: event %+v, line %.120s", tt.file, i+1, last, lines[s.Cut-1])
			}
			for _, id := range s.IDs {
				found := false
				for _, e := range tr.Events[:s.Events] {
					found = found || (e.Kind == EventToolCall && e.ID == id)
				}
				if !found {
					t.Errorf("%s step %d: call %s not among the events before the cut", tt.file, i+1, id)
				}
			}
		}
		// The failing command of the five-step runs is an error result; the others are not.
		if tt.events == five {
			for _, e := range tr.Events {
				if e.Kind == EventToolResult && e.IsError != strings.Contains(e.Text, "failing") {
					t.Errorf("%s: result %q IsError %v", tt.file, e.Text, e.IsError)
				}
			}
		}
	}
}

// A cut session reads back as the steps up to the cut, and is a prefix of the session.
func TestCutSession(t *testing.T) {
	for file, a := range map[string]Agent{"claude_trail_session.jsonl": Claude{}, "codex_trail_session.jsonl": Codex{}, "pi_trail_session.jsonl": Pi{},
		"gemini_trail_session.jsonl": Gemini{}} {
		data := readTestdata(t, file)
		tr, err := ReadTrail(a, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tr.Steps {
			cut, err := CutSession(a, data, s)
			if err != nil {
				t.Fatalf("%s step %d: %v", file, s.N, err)
			}
			if !bytes.HasPrefix(data, cut) || len(sessionLines(cut)) != s.Cut || !bytes.HasSuffix(cut, []byte("\n")) {
				t.Errorf("%s step %d: the cut is not the first %d lines", file, s.N, s.Cut)
			}
			back, err := ReadTrail(a, cut)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Steps) != s.N || back.SessionID != tr.SessionID || back.Task != tr.Task {
				t.Errorf("%s step %d: the cut reads back as %d steps of %s", file, s.N, len(back.Steps), back.SessionID)
				continue
			}
			for i, b := range back.Steps {
				o := tr.Steps[i]
				if strings.Join(b.IDs, " ") != strings.Join(o.IDs, " ") || b.Cut != o.Cut || b.Events != o.Events {
					t.Errorf("%s cut after %d: step %d = %+v, want %+v", file, s.N, i+1, b, o)
				}
			}
		}
		for _, bad := range []Step{{N: 9, Cut: 0}, {N: 9, Cut: len(sessionLines(data)) + 1}} {
			if _, err := CutSession(a, data, bad); err == nil || !strings.Contains(err.Error(), "outside the session") {
				t.Errorf("%s: cut %d: %v", file, bad.Cut, err)
			}
		}
	}
	if _, err := CutSession(Agy{}, []byte("x"), Step{N: 1, Cut: 1}); err == nil {
		t.Error("agy: a cut of a session tare cannot read")
	}
	if _, err := ReadTrail(Agy{}, []byte("x")); err == nil || !strings.Contains(err.Error(), "handoff") {
		t.Errorf("agy trail: %v", err)
	}
}

func TestTrailOddSessions(t *testing.T) {
	// Not a session file at all.
	for _, a := range []Agent{Claude{}, Codex{}, Pi{}} {
		if _, err := ReadTrail(a, []byte("not json\n{\"type\":\"other\"}\n")); err == nil {
			t.Errorf("%s: garbage read as a trail", a.Name())
		}
	}

	// Claude: sidechain (subagent) lines are not the run's; a call without its result
	// (a run killed mid-tool) is no step; a prompt of text blocks loses its reminders.
	claude := `{"type":"user","sessionId":"S","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"Fix it."}]}}
{"type":"assistant","sessionId":"S","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/work/a.go"}}]}}
{"type":"assistant","sessionId":"S","isSidechain":true,"message":{"id":"m9","role":"assistant","content":[{"type":"tool_use","id":"x1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"user","sessionId":"S","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"package a"}]}]}}
{"type":"assistant","sessionId":"S","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"go test ./..."}}]}}
`
	tr, err := Claude{}.Trail([]byte(claude))
	if err != nil || tr.Task != "Fix it." || len(tr.Steps) != 1 || tr.Steps[0].Tool != "Read: a.go" || tr.Steps[0].Cut != 4 ||
		kinds(tr.Events) != "ta to tr to" || tr.Events[2].Text != "package a" || tr.Events[2].Tool != "Read" {
		t.Errorf("claude: %+v %v", tr, err)
	}

	// Codex without token_usage_record lines and prompt events (older rollouts): a call
	// after a result starts a new step; the prompt is the user message that is not Codex's
	// context; an apply_patch names its files; an old {content, success} output.
	codex := `{"type":"session_meta","payload":{"id":"T"}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>/work</environment_context>"}]}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Patch it."}]}}
{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c1","input":"*** Begin Patch\n*** Update File: /work/a.go\n@@\n-a\n+b\n*** Add File: b.go\n+x\n*** End Patch"}}
{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1","output":{"content":"bad patch","success":false}}}
{"type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c2","arguments":"{\"command\":[\"bash\",\"-lc\",\"go test\"]}"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"ok"}}
`
	tr, err = Codex{}.Trail([]byte(codex))
	if err != nil || tr.Task != "Patch it." || len(tr.Steps) != 2 || tr.Steps[0].Tool != "apply_patch: a.go, b.go" ||
		tr.Steps[1].Tool != "shell: go test" || !tr.Events[2].IsError || tr.Events[2].Text != "bad patch" || tr.Events[4].IsError {
		t.Errorf("codex: %+v %v", tr, err)
	}

	// pi: a session with two branches from the same entry follows the one the last entry is on.
	pi := `{"type":"session","version":3,"id":"P","cwd":"/work"}
{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"Go."}]}}
{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"toolCall","id":"old","name":"bash","arguments":{"command":"rm -rf x"}}]}}
{"type":"message","id":"r1","parentId":"a1","message":{"role":"toolResult","toolCallId":"old","toolName":"bash","content":[{"type":"text","text":"gone"}]}}
{"type":"message","id":"a2","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"Better not."},{"type":"toolCall","id":"new","name":"read","arguments":{"path":"x"}}]}}
{"type":"message","id":"r2","parentId":"a2","message":{"role":"toolResult","toolCallId":"new","toolName":"read","content":[{"type":"text","text":"data"}],"isError":false}}
`
	tr, err = Pi{}.Trail([]byte(pi))
	if err != nil || len(tr.Steps) != 1 || tr.Steps[0].IDs[0] != "new" || tr.Steps[0].Cut != 6 || kinds(tr.Events) != "ta as to tr" {
		t.Errorf("pi branches: %+v %v", tr, err)
	}
}

func TestMainArg(t *testing.T) {
	tests := []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"command": "ls -la", "description": "List"}, "ls -la"},
		{map[string]any{"cmd": "make", "workdir": "/work"}, "make"},
		{map[string]any{"file_path": "/work/src/a.go", "content": "x"}, "src/a.go"},
		{map[string]any{"path": "/etc/hosts"}, "/etc/hosts"},
		{map[string]any{"command": []any{"bash", "-lc", "go vet"}}, "go vet"},
		{map[string]any{"command": []any{"git", "status"}}, "git status"},
		{map[string]any{"zeta": "z", "alpha": "a"}, "a"},
		{map[string]any{"todos": []any{1, 2}}, `{"todos":[1,2]}`},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := mainArg(tt.in); got != tt.want {
			t.Errorf("mainArg(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := summary("Bash", "cat <<EOF\nx\nEOF"); got != "Bash: cat <<EOF …" {
		t.Errorf("summary of a multi-line command: %q", got)
	}
	if got := clip(strings.Repeat("é", 10), 5); got != "éééé…" {
		t.Errorf("clip: %q", got)
	}
}
