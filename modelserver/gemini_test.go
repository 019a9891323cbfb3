package modelserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// geminiRequest is shaped like Gemini CLI 0.61.0's (see shared/agents-offline/gemini):
// the session context naming the workspace in the first user turn, tools as
// functionDeclarations with parametersJsonSchema.
func geminiRequest(contents ...any) map[string]any {
	str := map[string]any{"type": "string"}
	if len(contents) == 0 {
		contents = []any{map[string]any{"role": "user", "parts": []any{
			map[string]any{"text": "<session_context>\n- **Workspace Directories:**\n  - /tmp/ws1\n- **Directory Structure:**\n</session_context>"},
			map[string]any{"text": "Create a.txt"},
		}}}
	}
	return map[string]any{
		"contents":          contents,
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "You are a non-interactive CLI agent."}}},
		"tools": []any{map[string]any{"functionDeclarations": []any{
			map[string]any{"name": "run_shell_command", "parametersJsonSchema": map[string]any{"type": "object",
				"properties": map[string]any{"command": str, "description": str}}},
			map[string]any{"name": "write_file", "parametersJsonSchema": map[string]any{"type": "object",
				"properties": map[string]any{"file_path": str, "content": str}}},
		}}},
	}
}

// TestGeminiDialect: the neutral actions become run_shell_command and write_file calls
// (the path absolute below the workspace the session context names), streamed as SSE
// GenerateContentResponses whose last carries the finish reason and usage; the history's
// model turns count the turn; countTokens and errors answer in Gemini's shapes.
func TestGeminiDialect(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, featureScript)})
	base := srv.URL() + "/v1beta/models/gemini-2.5-pro"

	resp := post(t, base+":streamGenerateContent?alt=sse", geminiRequest())
	evs, err := readSSE(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(evs) < 2 {
		t.Fatalf("stream: status %d, %d events, %v", resp.StatusCode, len(evs), err)
	}
	var text strings.Builder
	var calls []any
	for i, e := range evs {
		m := e.obj(t)
		for _, p := range get(m, "candidates", 0, "content", "parts").([]any) {
			if s, ok := get(p, "text").(string); ok {
				text.WriteString(s)
			}
			if c := get(p, "functionCall"); c != nil {
				calls = append(calls, c)
			}
		}
		last := i == len(evs)-1
		if (get(m, "usageMetadata", "promptTokenCount") != nil) != last || (get(m, "candidates", 0, "finishReason") == "STOP") != last {
			t.Errorf("event %d of %d: usage and finish reason belong to the last event only: %s", i, len(evs), e.data)
		}
	}
	if text.String() != "Working on it." || len(calls) != 2 {
		t.Fatalf("text %q, calls %v", text.String(), calls)
	}
	if get(calls[0], "name") != "run_shell_command" || get(calls[0], "args", "command") != "echo hi > a.txt" {
		t.Errorf("shell call %v", calls[0])
	}
	if get(calls[1], "name") != "write_file" || get(calls[1], "args", "file_path") != "/tmp/ws1/notes/a.txt" || get(calls[1], "args", "content") != "line one\n" {
		t.Errorf("write call %v", calls[1])
	}

	// The history holds the model's turn and the function responses: turn 2, as JSON.
	history := geminiRequest(
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Create a.txt"}}},
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{}}}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command", "response": map[string]any{"output": ""}}}}},
	)
	resp = post(t, base+":generateContent", history)
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if get(body, "candidates", 0, "content", "parts", 0, "text") != "Finished." || get(body, "usageMetadata", "totalTokenCount") == nil {
		t.Errorf("turn 2 answer %v", body)
	}

	resp = post(t, base+":countTokens", map[string]any{"contents": []any{}})
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 200 || body["totalTokens"] == nil {
		t.Errorf("countTokens: %d %v", resp.StatusCode, body)
	}
	resp = post(t, base+":embedContent", map[string]any{})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(raw), `"status":"NOT_FOUND"`) {
		t.Errorf("unknown method: %d %s", resp.StatusCode, raw)
	}
}

// TestGeminiFailuresAndProbe: an injected quota error is Gemini's 429 RESOURCE_EXHAUSTED
// with a per-day quota violation (which Gemini CLI does not retry), overloaded its 503
// UNAVAILABLE; probe mode answers every request with ProbeText.
func TestGeminiFailuresAndProbe(t *testing.T) {
	for kind, want := range map[string]string{"quota": `"status":"RESOURCE_EXHAUSTED"`, "overloaded": `"status":"UNAVAILABLE"`, "login": `"status":"UNAUTHENTICATED"`} {
		srv := startServer(t, Options{Script: mustScript(t, "[[turn]]\ntext = \"x\"\nerror = \""+kind+"\"\n")})
		resp := post(t, srv.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse", geminiRequest())
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code := map[string]int{"quota": 429, "overloaded": 503, "login": 401}[kind]
		if resp.StatusCode != code || !strings.Contains(string(raw), want) || kind == "quota" && !strings.Contains(string(raw), "PerDay") {
			t.Errorf("%s: %d %s", kind, resp.StatusCode, raw)
		}
	}
	srv := startServer(t, Options{})
	resp := post(t, srv.URL()+"/v1beta/models/m:generateContent", geminiRequest())
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if get(body, "candidates", 0, "content", "parts", 0, "text") != ProbeText {
		t.Errorf("probe answer %v", body)
	}
	if r := srv.Requests(); len(r) != 1 || r[0].API != "gemini" || r[0].Outcome != "probe" {
		t.Errorf("probe record %+v", r)
	}
}
