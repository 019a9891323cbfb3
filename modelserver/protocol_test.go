package modelserver

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Requests shaped like the ones the real CLIs send (see
// shared/agents-offline/samples): tool lists, system prompts naming the
// working directory, Claude's role:"system" entries and multi-block user
// content.

const featureScript = `
[[turn]]
text = "Working on it."
shell = "echo hi > a.txt"
write = { path = "notes/a.txt", content = "line one\n" }

[[turn]]
text = "Finished."
`

func claudeRequest(stream bool, msgs ...any) map[string]any {
	if len(msgs) == 0 {
		msgs = []any{userBlocks("Create a.txt")}
	}
	return map[string]any{
		"model": "claude-opus-4-8", "max_tokens": 64000, "stream": stream,
		"system": []any{
			map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
			map[string]any{"type": "text", "text": "# Environment\n - Primary working directory: /tmp/ws1\n - Platform: linux"},
		},
		"tools": []any{
			map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object", "properties": map[string]any{
				"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}}},
			map[string]any{"name": "Write", "input_schema": map[string]any{"type": "object", "properties": map[string]any{
				"file_path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}}},
			map[string]any{"name": "Read", "input_schema": map[string]any{"type": "object"}},
		},
		"metadata":      map[string]any{"user_id": `{"device_id":"d","session_id":"meta-session"}`},
		"output_config": map[string]any{"effort": "high"},
		"messages":      msgs,
	}
}

// userBlocks is a Claude Code user turn: a system-reminder block then the prompt.
func userBlocks(prompt string) map[string]any {
	return map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "<system-reminder>\ncontext\n</system-reminder>"},
		map[string]any{"type": "text", "text": prompt},
	}}
}

func TestAnthropicStreamSequenceAndMapping(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, featureScript)})
	body := claudeRequest(true, userBlocks("Create a.txt"),
		map[string]any{"role": "system", "content": "Available agent types: claude"})
	raw, _ := json.Marshal(body)
	resp := post(t, srv.URL()+"/v1/messages?beta=true", raw, "X-Claude-Code-Session-Id: s-1", "x-api-key: sk-secret")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs, err := readSSE(resp.Body)
	if err != nil {
		t.Fatalf("reading stream: %v", err)
	}
	got := names(t, evs)
	// message_start, ping, then three blocks (text, Bash, Write), then the end.
	if got[0] != "message_start" || got[1] != "ping" || got[len(got)-2] != "message_delta" || got[len(got)-1] != "message_stop" {
		t.Fatalf("event order %v", got)
	}
	type block struct {
		typ, name, text, json string
	}
	var blocks []*block
	open := -1
	var stop string
	var usageStart, usageDelta map[string]any
	for _, e := range evs {
		m := e.obj(t)
		if m["type"] != e.name {
			t.Errorf("event %q has type %v", e.name, m["type"])
		}
		switch e.name {
		case "message_start":
			usageStart, _ = get(m, "message", "usage").(map[string]any)
		case "content_block_start":
			if open != -1 {
				t.Fatalf("block %d started before block %d stopped", len(blocks), open)
			}
			open = int(get(m, "index").(float64))
			if open != len(blocks) {
				t.Fatalf("block index %d, want %d", open, len(blocks))
			}
			cb := get(m, "content_block").(map[string]any)
			b := &block{typ: cb["type"].(string)}
			if b.typ == "tool_use" {
				b.name = cb["name"].(string)
				if !strings.HasPrefix(cb["id"].(string), "toolu_") {
					t.Errorf("tool_use id %v", cb["id"])
				}
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			if int(get(m, "index").(float64)) != open {
				t.Fatalf("delta for block %v while %d is open", get(m, "index"), open)
			}
			d := get(m, "delta").(map[string]any)
			switch d["type"] {
			case "text_delta":
				blocks[open].text += d["text"].(string)
			case "input_json_delta":
				blocks[open].json += d["partial_json"].(string)
			}
		case "content_block_stop":
			open = -1
		case "message_delta":
			stop, _ = get(m, "delta", "stop_reason").(string)
			usageDelta, _ = get(m, "usage").(map[string]any)
		}
	}
	if len(blocks) != 3 || blocks[0].text != "Working on it." || blocks[1].name != "Bash" || blocks[2].name != "Write" {
		t.Fatalf("blocks %+v", blocks)
	}
	var bash, write map[string]any
	if err := json.Unmarshal([]byte(blocks[1].json), &bash); err != nil || bash["command"] != "echo hi > a.txt" {
		t.Errorf("Bash input %s (%v)", blocks[1].json, err)
	}
	if err := json.Unmarshal([]byte(blocks[2].json), &write); err != nil ||
		write["file_path"] != "/tmp/ws1/notes/a.txt" || write["content"] != "line one\n" {
		t.Errorf("Write input %s (%v); want the absolute path under the cwd of the system prompt", blocks[2].json, err)
	}
	if stop != "tool_use" {
		t.Errorf("stop_reason %q, want tool_use", stop)
	}
	wantIn := float64(len(raw) / 4)
	if usageStart["input_tokens"] != wantIn || usageDelta["input_tokens"] != wantIn {
		t.Errorf("input_tokens start=%v delta=%v, want %v (body chars / 4)", usageStart["input_tokens"], usageDelta["input_tokens"], wantIn)
	}
	if out, _ := usageDelta["output_tokens"].(float64); out < 10 {
		t.Errorf("message_delta output_tokens = %v, want the reply's chars / 4", usageDelta["output_tokens"])
	}
	recs := srv.Requests()
	if r := recs[len(recs)-1]; r.Turn != 1 || r.Key != "s-1" || r.Outcome != "turn" || r.Headers["x-api-key"] != Redacted {
		t.Errorf("record %+v", r)
	}
}

func TestAnthropicNonStreamAndPiTools(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, featureScript)})
	// pi offers lower-case tools and no working directory in a system text
	// the server recognises as Claude's; its write takes a relative path.
	body := map[string]any{
		"model": "tare-claude", "stream": false,
		"system": "You are pi.\nCurrent working directory: /home/me/proj",
		"tools": []any{
			map[string]any{"name": "bash", "input_schema": map[string]any{"properties": map[string]any{"command": map[string]any{"type": "string"}}}},
			map[string]any{"name": "write", "input_schema": map[string]any{"properties": map[string]any{"path": map[string]any{}, "content": map[string]any{}}}},
		},
		"messages": []any{map[string]any{"role": "user", "content": "go"}},
	}
	resp := post(t, srv.URL()+"/v1/messages", body)
	defer resp.Body.Close()
	var msg map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg["type"] != "message" || msg["stop_reason"] != "tool_use" {
		t.Fatalf("message %v", msg)
	}
	content := msg["content"].([]any)
	if len(content) != 3 {
		t.Fatalf("content %v", content)
	}
	if get(content, 1, "name") != "bash" || get(content, 1, "input", "command") != "echo hi > a.txt" {
		t.Errorf("bash call %v", content[1])
	}
	if get(content, 2, "name") != "write" || get(content, 2, "input", "path") != "notes/a.txt" || get(content, 2, "input", "content") != "line one\n" {
		t.Errorf("write call %v", content[2])
	}
	if in, _ := get(msg, "usage", "input_tokens").(float64); in < 50 {
		t.Errorf("usage %v", msg["usage"])
	}
}

func codexRequest(input ...any) map[string]any {
	base := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "You are Codex."}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text",
			"text": "<environment_context>\n  <cwd>/tmp/cx</cwd>\n  <shell>bash</shell>\n</environment_context>"}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Create a.txt"}}},
	}
	return map[string]any{
		"model": "gpt-5.1-codex", "stream": true, "input": append(base, input...), "tool_choice": "auto",
		"parallel_tool_calls": true, "store": false, "prompt_cache_key": "cache-key",
		"tools": []any{
			map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object",
				"properties": map[string]any{"cmd": map[string]any{"type": "string"}, "workdir": map[string]any{"type": "string"}}}},
			map[string]any{"type": "function", "name": "write_stdin", "parameters": map[string]any{"type": "object"}},
			map[string]any{"type": "custom", "name": "apply_patch"},
			map[string]any{"type": "web_search"},
		},
	}
}

func TestResponsesStreamSequenceAndMapping(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, featureScript)})
	raw, _ := json.Marshal(codexRequest())
	resp := post(t, srv.URL()+"/v1/responses", raw, "session-id: th-1", "authorization: Bearer sk-x")
	defer resp.Body.Close()
	evs, err := readSSE(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	got := slices.Compact(names(t, evs)) // several deltas in a row count once
	if !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	var calls []map[string]any
	args := map[string]string{}
	for i, e := range evs {
		m := e.obj(t)
		if m["type"] != e.name || m["sequence_number"] != float64(i) {
			t.Errorf("event %d %q: type %v sequence_number %v", i, e.name, m["type"], m["sequence_number"])
		}
		switch e.name {
		case "response.function_call_arguments.delta":
			args[m["item_id"].(string)] += m["delta"].(string)
		case "response.output_item.done":
			if it := m["item"].(map[string]any); it["type"] == "function_call" {
				calls = append(calls, it)
				if args[it["id"].(string)] != it["arguments"] {
					t.Errorf("argument deltas %q != item arguments %q", args[it["id"].(string)], it["arguments"])
				}
			}
		case "response.completed":
			r := m["response"].(map[string]any)
			if r["status"] != "completed" || len(r["output"].([]any)) != 3 {
				t.Errorf("completed response %v", r)
			}
			if in, _ := get(r, "usage", "input_tokens").(float64); in != float64(len(raw)/4) {
				t.Errorf("usage %v, want input_tokens %d", r["usage"], len(raw)/4)
			}
			if out, _ := get(r, "usage", "output_tokens").(float64); out < 10 {
				t.Errorf("usage %v", r["usage"])
			}
		}
	}
	if len(calls) != 2 || calls[0]["name"] != "exec_command" || calls[1]["name"] != "exec_command" {
		t.Fatalf("calls %v", calls)
	}
	var shell, write map[string]any
	_ = json.Unmarshal([]byte(calls[0]["arguments"].(string)), &shell)
	_ = json.Unmarshal([]byte(calls[1]["arguments"].(string)), &write)
	if shell["cmd"] != "echo hi > a.txt" {
		t.Errorf("shell call %v", shell)
	}
	heredoc := "mkdir -p 'notes' && cat > 'notes/a.txt' <<'TARE_EOF'\nline one\nTARE_EOF"
	if write["cmd"] != heredoc {
		t.Errorf("write call %q, want heredoc %q", write["cmd"], heredoc)
	}
	for _, c := range calls {
		if !strings.HasPrefix(c["call_id"].(string), "call_") || !strings.HasPrefix(c["id"].(string), "fc_") {
			t.Errorf("ids %v %v", c["id"], c["call_id"])
		}
	}
	if r := srv.Requests()[0]; r.Key != "th-1" || r.Headers["authorization"] != Redacted {
		t.Errorf("record key %q headers %v", r.Key, r.Headers)
	}
}

func TestResponsesNonStream(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, featureScript)})
	req := codexRequest(
		map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Working on it."}}},
		map[string]any{"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "call_1"},
		map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "ok"},
	)
	req["stream"] = false
	resp := post(t, srv.URL()+"/v1/responses", req)
	defer resp.Body.Close()
	var r map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r["object"] != "response" || r["status"] != "completed" || get(r, "output", 0, "content", 0, "text") != "Finished." {
		t.Fatalf("response %v", r)
	}
	if get(r, "usage", "total_tokens") == nil {
		t.Errorf("no usage in %v", r)
	}
}

func piChatRequest(stream bool, msgs ...any) map[string]any {
	base := []any{
		map[string]any{"role": "system", "content": "You are pi.\nCurrent working directory: /tmp/pi"},
		map[string]any{"role": "user", "content": "Create a.txt"},
	}
	return map[string]any{
		"model": "tare-gpt", "stream": stream, "stream_options": map[string]any{"include_usage": true},
		"messages": append(base, msgs...),
		"tools": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": "bash", "parameters": map[string]any{
				"properties": map[string]any{"command": map[string]any{"type": "string"}}}}},
			map[string]any{"type": "function", "function": map[string]any{"name": "write", "parameters": map[string]any{
				"properties": map[string]any{"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}}}},
		},
	}
}

func TestChatStreamChunks(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, featureScript)})
	resp := post(t, srv.URL()+"/v1/chat/completions", piChatRequest(true))
	defer resp.Body.Close()
	evs, err := readSSE(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 5 || evs[len(evs)-1].data != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %v", evs)
	}
	var text string
	type call struct{ id, name, args string }
	var calls []*call
	var finish string
	var usage map[string]any
	for i, e := range evs[:len(evs)-1] {
		if e.name != "" {
			t.Errorf("chat chunk %d has an event name %q", i, e.name)
		}
		m := e.obj(t)
		if m["object"] != "chat.completion.chunk" {
			t.Errorf("chunk %v", m)
		}
		if u, ok := m["usage"].(map[string]any); ok {
			if i != len(evs)-2 || len(m["choices"].([]any)) != 0 {
				t.Errorf("usage must come in the last chunk, with no choices: %v", m)
			}
			usage = u
			continue
		}
		ch := get(m, "choices", 0).(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
		}
		d := ch["delta"].(map[string]any)
		if c, ok := d["content"].(string); ok {
			text += c
		}
		tcs, _ := d["tool_calls"].([]any)
		for _, tc := range tcs {
			idx := int(get(tc, "index").(float64))
			if idx == len(calls) {
				calls = append(calls, &call{id: get(tc, "id").(string), name: get(tc, "function", "name").(string)})
			}
			if a, ok := get(tc, "function", "arguments").(string); ok {
				calls[idx].args += a
			}
		}
	}
	if text != "Working on it." || finish != "tool_calls" || len(calls) != 2 {
		t.Fatalf("text %q finish %q calls %v", text, finish, calls)
	}
	if calls[0].name != "bash" || calls[0].args != `{"command":"echo hi \u003e a.txt"}` {
		t.Errorf("bash call %+v", calls[0])
	}
	if calls[1].name != "write" || calls[1].args != `{"content":"line one\n","path":"notes/a.txt"}` {
		t.Errorf("write call %+v", calls[1])
	}
	if usage["prompt_tokens"] == nil || usage["completion_tokens"] == nil || usage["total_tokens"] == nil {
		t.Errorf("usage %v", usage)
	}
}

func TestChatNonStream(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, featureScript)})
	req := piChatRequest(false,
		map[string]any{"role": "assistant", "content": "Working on it.", "tool_calls": []any{}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "ok"})
	resp := post(t, srv.URL()+"/v1/chat/completions", req)
	defer resp.Body.Close()
	var r map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if get(r, "choices", 0, "message", "content") != "Finished." || get(r, "choices", 0, "finish_reason") != "stop" {
		t.Fatalf("completion %v", r)
	}
	if p, _ := get(r, "usage", "prompt_tokens").(float64); p < 50 {
		t.Errorf("usage %v", r["usage"])
	}
}

func TestShellToolVariants(t *testing.T) {
	cases := []struct {
		tool  offeredTool
		wantK string
		wantV any
	}{
		{offeredTool{name: "Bash", kind: "function"}, "command", "ls"},
		{offeredTool{name: "bash", kind: "function"}, "command", "ls"},
		{offeredTool{name: "exec_command", kind: "function"}, "cmd", "ls"},
		{offeredTool{name: "shell_command", kind: "function", props: map[string]any{"command": map[string]any{"type": "string"}}}, "command", "ls"},
		{offeredTool{name: "shell", kind: "function", props: map[string]any{"command": map[string]any{"type": "array"}}}, "command", []any{"bash", "-lc", "ls"}},
		{offeredTool{name: "run", kind: "function", props: map[string]any{"cmd": map[string]any{"type": "string"}}}, "cmd", "ls"},
	}
	for _, c := range cases {
		calls, err := mapActions([]Action{{Kind: ActionShell, Command: "ls"}}, []offeredTool{{name: "view_image", kind: "function"}, c.tool}, "/work")
		if err != nil {
			t.Errorf("%s: %v", c.tool.name, err)
			continue
		}
		var args map[string]any
		_ = json.Unmarshal(calls[0].args, &args)
		got, _ := json.Marshal(args[c.wantK])
		want, _ := json.Marshal(c.wantV)
		if calls[0].name != c.tool.name || string(got) != string(want) {
			t.Errorf("%s: call %s %s, want %s=%s", c.tool.name, calls[0].name, calls[0].args, c.wantK, want)
		}
	}
	if _, err := mapActions([]Action{{Kind: ActionShell, Command: "ls"}}, []offeredTool{{name: "Read", kind: "function"}}, "/work"); err == nil ||
		!strings.Contains(err.Error(), "no shell tool") || !strings.Contains(err.Error(), "Read") {
		t.Errorf("no shell tool: err %v", err)
	}
}

func TestWriteCommandExact(t *testing.T) {
	cases := map[string]string{
		"no newline": "printf '%s' 'it'\\''s' > 'a.txt'",
		"with\n":     "cat > 'a.txt' <<'TARE_EOF'\nwith\nTARE_EOF",
		"TARE_EOF\n": "cat > 'a.txt' <<'TARE_EOF_2'\nTARE_EOF\nTARE_EOF_2",
		"":           "printf '%s' '' > 'a.txt'",
	}
	contents := map[string]string{"no newline": "it's"}
	for content, want := range cases {
		c := content
		if v, ok := contents[content]; ok {
			c = v
		}
		if got := writeCommand("a.txt", c); got != want {
			t.Errorf("writeCommand(%q) = %q, want %q", c, got, want)
		}
	}
}

func TestRawToolAndUnmapped(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, `
[[turn]]
[[turn.tool]]
name = "Read"
input = { file_path = "/work/x.go", limit = 10 }
[[turn]]
shell = "ls"
`)})
	resp := post(t, srv.URL()+"/v1/messages", claudeRequest(false))
	var msg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if get(msg, "content", 0, "name") != "Read" || get(msg, "content", 0, "input", "limit") != float64(10) {
		t.Fatalf("raw tool call %v", msg["content"])
	}
	// Turn 2 asks for a shell but the request offers only Read.
	req := claudeRequest(false, userBlocks("go"),
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}}})
	req["tools"] = []any{map[string]any{"name": "Read", "input_schema": map[string]any{}}}
	resp = post(t, srv.URL()+"/v1/messages", req)
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	text, _ := get(msg, "content", 0, "text").(string)
	if msg["stop_reason"] != "end_turn" || !strings.Contains(text, "no shell tool") {
		t.Fatalf("unmapped answer %v", msg)
	}
	recs := srv.Requests()
	if r := recs[len(recs)-1]; r.Outcome != "unmapped" || r.Note == "" {
		t.Errorf("record %+v", r)
	}
}

func TestCustomToolOnResponses(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, `
[[turn]]
tool = { name = "apply_patch", input = { input = "*** Begin Patch\n*** End Patch\n" } }
`)})
	resp := post(t, srv.URL()+"/v1/responses", codexRequest())
	evs, err := readSSE(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var item map[string]any
	for _, e := range evs {
		if e.name == "response.output_item.done" {
			item = e.obj(t)["item"].(map[string]any)
		}
	}
	if item["type"] != "custom_tool_call" || item["name"] != "apply_patch" || item["input"] != "*** Begin Patch\n*** End Patch\n" {
		t.Fatalf("custom call %v", item)
	}
}

func TestModelsCountTokensAndNotFound(t *testing.T) {
	srv := startServer(t, Options{})
	resp, err := http.Get(srv.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if get(list, "data", 0, "id") != "tare-model" || list["object"] != "list" {
		t.Errorf("models %v", list)
	}
	resp = post(t, srv.URL()+"/v1/messages/count_tokens?beta=true", claudeRequest(false))
	var ct map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&ct)
	resp.Body.Close()
	if n, _ := ct["input_tokens"].(float64); n < 100 {
		t.Errorf("count_tokens %v", ct)
	}
	resp, err = http.Get(srv.URL() + "/v2/nothing")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(b), "no endpoint") {
		t.Errorf("unknown path: %d %s", resp.StatusCode, b)
	}
	resp = post(t, srv.URL()+"/v1/messages", "{not json")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_request_error") {
		t.Errorf("bad JSON: %d %s", resp.StatusCode, b)
	}
	recs := srv.Requests()
	if last := recs[len(recs)-1]; string(last.Body) != `"{not json"` || last.Outcome != "bad_request" {
		t.Errorf("a non-JSON body must be kept as a JSON string: %s %q", last.Body, last.Outcome)
	}
}
