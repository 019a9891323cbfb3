package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProviderStopped reads what each pinned CLI wrote when tare's model server answered
// every attempt of a turn with error = "quota", "login", "overloaded" or "drop" (captured from real
// runs in rooms; the engine's TestProviderStopsAreNoVerdict runs them live), and streams of
// runs that ended normally or in the agent's own error, which are not a provider's stop.
func TestProviderStopped(t *testing.T) {
	cases := []struct {
		agent Agent
		file  string
		want  string
	}{
		{Claude{}, "stop/claude-quota.jsonl", StopQuota},
		{Claude{}, "stop/claude-overloaded.jsonl", StopOverloaded},
		{Claude{}, "stop/claude-drop.jsonl", StopDropped},
		{Codex{}, "stop/codex-quota.jsonl", StopQuota},
		{Codex{}, "stop/codex-overloaded.jsonl", StopOverloaded},
		{Codex{}, "stop/codex-drop.jsonl", StopDropped},
		{Pi{}, "stop/pi-quota.jsonl", StopQuota},
		{Pi{}, "stop/pi-overloaded.jsonl", StopOverloaded},
		{Pi{}, "stop/pi-drop.jsonl", StopDropped},
		{Gemini{}, "stop/gemini-quota.jsonl", StopQuota},
		{Gemini{}, "stop/gemini-overloaded.jsonl", StopOverloaded},
		{Gemini{}, "stop/gemini-drop.jsonl", StopDropped},
		// error = "login": each provider's 401 for an expired login or a revoked key.
		{Claude{}, "stop/claude-login.jsonl", StopLogin},
		{Codex{}, "stop/codex-login.jsonl", StopLogin},
		{Pi{}, "stop/pi-login.jsonl", StopLogin},
		{Gemini{}, "stop/gemini-login.jsonl", StopLogin},
		// Runs that finished, some after errors the CLI retried past.
		{Claude{}, "claude_stream.jsonl", ""},
		{Claude{}, "claude_stream_proxy_refused.jsonl", ""},
		{Codex{}, "codex_exec_events.jsonl", ""},
		{Pi{}, "pi_json_events.jsonl", ""},
		{Gemini{}, "gemini_trail_stream.jsonl", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			stop, ok := ProviderStopped(c.agent, data, nil)
			if stop.Kind != c.want || ok != (c.want != "") {
				t.Fatalf("%s: ProviderStopped = %+v, %v; want kind %q", c.file, stop, ok, c.want)
			}
			if ok && stop.Detail == "" {
				t.Errorf("%s: no detail", c.file)
			}
		})
	}
}

// TestClassifyStopIgnoresNumbersInIDs: a request id's hex that happens to hold 429 or 503
// does not make an error a quota wall or an overload.
func TestClassifyStopIgnoresNumbersInIDs(t *testing.T) {
	cases := map[string]string{
		`529 {"error":{"type":"overloaded_error"},"request_id":"req_tare_84f429d2ad"}`: StopOverloaded,
		"tool failed: req_a4290503b":               "",
		"Claude AI usage limit reached|1767225600": StopQuota,
		"terminated": StopDropped,
		"unexpected status 401 Unauthorized: Incorrect API key provided: sk-tare-****., request id: req_a4290503b": StopLogin,
		"the task was too hard": "",
	}
	for msg, want := range cases {
		if got, _ := classifyStop(msg); got != want {
			t.Errorf("classifyStop(%q) = %q, want %q", msg, got, want)
		}
	}
}
