package mcpcanary

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestServeAnswersAsAnMCPServer: initialize echoes the client's protocol version, tools/list
// offers the one tool named after the token, notifications and unreadable lines get no
// answer, and an unknown method gets a JSON-RPC error with its id.
func TestServeAnswersAsAnMCPServer(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
		`{"jsonrpc":"2.0","id":"two","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`,
	}, "\n") + "\n"
	var out strings.Builder
	if err := Serve("tok7", strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d answers, want 3:\n%s", len(lines), out.String())
	}
	var answers [3]struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
			Tools           []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &answers[i]); err != nil {
			t.Fatalf("answer %d %q: %v", i, l, err)
		}
	}
	if string(answers[0].ID) != "1" || answers[0].Result.ProtocolVersion != "2025-03-26" {
		t.Errorf("initialize: %s", lines[0])
	}
	if string(answers[1].ID) != `"two"` || len(answers[1].Result.Tools) != 1 || answers[1].Result.Tools[0].Name != "tare_canary_tok7" {
		t.Errorf("tools/list: %s", lines[1])
	}
	if string(answers[2].ID) != "3" || answers[2].Error == nil || answers[2].Error.Code != -32601 {
		t.Errorf("unknown method: %s", lines[2])
	}
}
