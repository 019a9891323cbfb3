package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestInjectedErrorsPerDialect(t *testing.T) {
	cases := []struct {
		kind   string
		api    api
		status int
		check  func(m map[string]any) bool
	}{
		{"quota", apiAnthropic, 429, func(m map[string]any) bool {
			return m["type"] == "error" && get(m, "error", "type") == "rate_limit_error" && get(m, "error", "message") != ""
		}},
		{"overloaded", apiAnthropic, 529, func(m map[string]any) bool {
			return m["type"] == "error" && get(m, "error", "type") == "overloaded_error"
		}},
		{"quota", apiResponses, 429, func(m map[string]any) bool {
			msg, _ := get(m, "error", "message").(string)
			return get(m, "error", "type") == "insufficient_quota" && get(m, "error", "code") == "insufficient_quota" &&
				strings.HasPrefix(msg, "You exceeded your current quota")
		}},
		{"quota", apiChat, 429, func(m map[string]any) bool {
			return get(m, "error", "code") == "insufficient_quota"
		}},
		{"overloaded", apiResponses, 503, func(m map[string]any) bool {
			return get(m, "error", "type") == "server_error"
		}},
		{"overloaded", apiChat, 503, func(m map[string]any) bool {
			return get(m, "error", "type") == "server_error"
		}},
		// An expired login or a revoked key: each provider's 401.
		{"login", apiAnthropic, 401, func(m map[string]any) bool {
			return m["type"] == "error" && get(m, "error", "type") == "authentication_error"
		}},
		{"login", apiResponses, 401, func(m map[string]any) bool {
			return get(m, "error", "code") == "invalid_api_key"
		}},
		{"login", apiChat, 401, func(m map[string]any) bool {
			return get(m, "error", "code") == "invalid_api_key"
		}},
	}
	for _, c := range cases {
		t.Run(c.kind+"-"+string(c.api), func(t *testing.T) {
			srv := startServer(t, Options{Script: mustScript(t, fmt.Sprintf("[[turn]]\nerror = %q\n", c.kind))})
			// Streaming requests fail before the stream starts, like the real APIs.
			path, body := requestFor(c.api, true)
			resp := post(t, srv.URL()+path, body, "X-Claude-Code-Session-Id: k")
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || resp.StatusCode != c.status || !c.check(m) {
				t.Fatalf("status %d body %s (%v); want %d and the provider's %s body", resp.StatusCode, b, err, c.status, c.kind)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content-type %q", ct)
			}
			if r := srv.Requests()[0]; r.Outcome != c.kind || r.Status != c.status || r.Attempt != 1 {
				t.Errorf("record %+v", r)
			}
		})
	}
}

func requestFor(a api, stream bool) (string, map[string]any) {
	switch a {
	case apiAnthropic:
		return "/v1/messages", claudeRequest(stream)
	case apiResponses:
		r := codexRequest()
		r["stream"] = stream
		return "/v1/responses", r
	default:
		return "/v1/chat/completions", piChatRequest(stream)
	}
}

func TestErrorTimes(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, `
[[turn]]
text = "made it"
shell = "true"
error = "overloaded"
error_times = 2
[[turn]]
error = "quota"
error_times = 0
`)})
	statuses := func(key string, n int) []int {
		var out []int
		for i := 0; i < 3; i++ {
			path, body := requestFor(apiAnthropic, false)
			if n == 1 {
				body["messages"] = claudeHistory(1)
			}
			resp := post(t, srv.URL()+path, body, "X-Claude-Code-Session-Id: "+key)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out = append(out, resp.StatusCode)
		}
		return out
	}
	// Each session fails its first two attempts, then answers.
	for _, key := range []string{"a", "b"} {
		if got := fmt.Sprint(statuses(key, 0)); got != "[529 529 200]" {
			t.Errorf("session %s turn 1 statuses %s, want [529 529 200]", key, got)
		}
	}
	// error_times = 0 fails every attempt.
	if got := fmt.Sprint(statuses("a", 1)); got != "[429 429 429]" {
		t.Errorf("turn 2 statuses %s, want always 429", got)
	}
	var attempts []int
	for _, r := range srv.Requests()[:3] {
		attempts = append(attempts, r.Attempt)
	}
	if fmt.Sprint(attempts) != "[1 2 3]" {
		t.Errorf("attempts logged %v", attempts)
	}
}

func TestErrorTimesWithoutKey(t *testing.T) {
	// pi's anthropic and chat providers send no session id: identical
	// retries (same history) count as attempts of the same turn, and once
	// answered, the next identical run starts counting afresh.
	srv := startServer(t, Options{Script: mustScript(t, "[[turn]]\ntext = \"ok\"\nerror = \"quota\"\nerror_times = 1\n")})
	var got []int
	for i := 0; i < 4; i++ {
		path, body := requestFor(apiChat, false)
		resp := post(t, srv.URL()+path, body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	if fmt.Sprint(got) != "[429 200 429 200]" {
		t.Errorf("keyless statuses %v, want [429 200 429 200]", got)
	}
}

func TestDropCutsTheStream(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, `
[[turn]]
text = "This answer is long enough to be cut in the middle of its stream."
shell = "echo dropped"
error = "drop"
error_times = 1
`)})
	for _, a := range []api{apiAnthropic, apiResponses, apiChat} {
		key := "session-id: drop-" + string(a)
		path, body := requestFor(a, true)
		resp := post(t, srv.URL()+path, body, key)
		evs, err := readSSE(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s: stream ended cleanly, want a cut connection", a)
		}
		if len(evs) == 0 {
			t.Errorf("%s: no event before the cut; the stream must start", a)
		}
		for _, e := range evs {
			if e.name == "message_stop" || e.name == "response.completed" || e.data == "[DONE]" {
				t.Errorf("%s: the cut stream still ended with %s", a, e.name+e.data)
			}
		}
		// The retry (attempt 2) gets the whole answer.
		resp = post(t, srv.URL()+path, body, key)
		evs, err = readSSE(resp.Body)
		resp.Body.Close()
		if err != nil || len(evs) == 0 {
			t.Errorf("%s: retry after the drop: %v", a, err)
		}
	}
	// Non-streaming: the body is cut short of its Content-Length.
	path, body := requestFor(apiAnthropic, false)
	resp := post(t, srv.URL()+path, body, "session-id: drop-json")
	_, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Error("non-streaming drop: body read cleanly, want unexpected EOF")
	}
	for _, r := range srv.Requests() {
		if r.Attempt == 1 && r.Outcome != "drop" {
			t.Errorf("first attempt record %+v", r)
		}
	}
}
