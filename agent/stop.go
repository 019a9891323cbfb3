package agent

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// The ways a model provider ends an agent's run before the agent finished: the run then says
// nothing about the agent, so a tail that ends so has no verdict.
const (
	// StopQuota: the account's quota or rate limit (HTTP 429, "usage limit reached").
	StopQuota = "quota"
	// StopOverloaded: the provider is at capacity (Anthropic 529, OpenAI 503/500).
	StopOverloaded = "overloaded"
	// StopDropped: the connection or the stream broke and the CLI did not recover.
	StopDropped = "dropped"
)

// ProviderStop is why the provider, not the agent, ended a run: Kind is one of StopQuota,
// StopOverloaded, StopDropped; Detail is the CLI's own words, one line.
type ProviderStop struct {
	Kind   string
	Detail string
}

// providerStopper is an adapter that can tell a provider's end of a run from its output.
type providerStopper interface {
	providerStop(stdout, stderr []byte) (ProviderStop, bool)
}

// ProviderStopped reads a finished headless run's stdout and stderr as agent a writes them
// and says whether the provider ended the run (a quota wall, an overload, a dropped stream
// the CLI did not recover from). Errors the CLI retried past are not a stop: only how the
// run ended counts.
func ProviderStopped(a Agent, stdout, stderr []byte) (ProviderStop, bool) {
	p, ok := a.(providerStopper)
	if !ok {
		return ProviderStop{}, false
	}
	return p.providerStop(stdout, stderr)
}

// stopWords classify a provider's error message, first match wins. They are the words the
// pinned CLIs print for tare's model server's error turns (the engine's
// TestProviderStopsAreNoVerdict runs each CLI against them) and for the real providers'
// quota walls. Status codes count only as whole numbers, so a request id's hex never does.
var stopWords = []struct {
	kind string
	re   *regexp.Regexp
}{
	{StopQuota, regexp.MustCompile(`(?i)\b429\b|rate.?limit|quota|usage limit|hit your limit|too many requests`)},
	{StopOverloaded, regexp.MustCompile(`(?i)\b(529|503|502|500)\b|overloaded|service unavailable|bad gateway|server_error|at capacity`)},
	{StopDropped, regexp.MustCompile(`(?i)connection closed|stream disconnected|connection error|^terminated$|socket hang up|` +
		`econnreset|network error|error decoding response body|premature close|fetch failed`)},
}

// classifyStop names the kind of provider error a message describes, if any.
func classifyStop(msg string) (string, bool) {
	msg = strings.TrimSpace(msg)
	for _, s := range stopWords {
		if s.re.MatchString(msg) {
			return s.kind, true
		}
	}
	return "", false
}

// providerStop implements providerStopper for Claude Code: a result with is_error whose text
// is Claude Code's "API Error: ..." (after its own retries, reported as system api_retry
// events), or api_error_status set.
func (Claude) providerStop(stdout, _ []byte) (ProviderStop, bool) {
	var stop ProviderStop
	found := false
	_ = eachJSON(bytes.NewReader(stdout), func(line []byte) error {
		var e struct {
			Type      string `json:"type"`
			IsError   bool   `json:"is_error"`
			Result    string `json:"result"`
			APIStatus *int   `json:"api_error_status"`
		}
		if json.Unmarshal(line, &e) != nil || e.Type != "result" {
			return nil
		}
		found = false
		if !e.IsError {
			return nil
		}
		msg := e.Result
		if e.APIStatus != nil {
			msg = "API Error " + itoa(*e.APIStatus) + ": " + strings.TrimPrefix(msg, "API Error: ")
		}
		kind, ok := classifyStop(msg)
		if ok && (strings.Contains(msg, "API Error") || kind == StopQuota) {
			// Claude Code words every provider failure "API Error: ..."; anything else is the
			// agent's own error (max turns, a refused tool), except a subscription's
			// "usage limit reached", which it words without the prefix.
			stop, found = ProviderStop{Kind: kind, Detail: clip(oneLine(e.Result), 200)}, true
		}
		return nil
	})
	return stop, found
}

// providerStop implements providerStopper for Codex: the turn.failed that ended the run
// ("Quota exceeded", "unexpected status 503", "stream disconnected before completion").
// Its "error" events are retries it may recover from; only a failed turn counts.
func (Codex) providerStop(stdout, _ []byte) (ProviderStop, bool) {
	var stop ProviderStop
	found := false
	_ = eachJSON(bytes.NewReader(stdout), func(line []byte) error {
		var e codexEvent
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		switch e.Type {
		case "turn.completed", "turn.started":
			found = false
		case "turn.failed":
			if kind, ok := classifyStop(e.Error.Message); ok {
				stop, found = ProviderStop{Kind: kind, Detail: clip(oneLine(e.Error.Message), 200)}, true
			}
		}
		return nil
	})
	return stop, found
}

// providerStop implements providerStopper for pi: pi exits 0 when its provider fails, so the
// sign is in the stream: the last assistant message ends with stopReason "error" and pi's
// errorMessage ("429 {...rate_limit_error...}", "529 ... overloaded_error", "terminated"),
// after its own retries (auto_retry_end with success false). In print mode pi writes the
// error on stderr instead, which is read when the stream has none.
func (Pi) providerStop(stdout, stderr []byte) (ProviderStop, bool) {
	var msg string
	ended := false
	_ = eachJSON(bytes.NewReader(stdout), func(line []byte) error {
		var e piEvent
		if json.Unmarshal(line, &e) != nil || e.Type != "message_end" || e.Message.Role != "assistant" {
			return nil
		}
		ended = true
		msg = ""
		if e.Message.StopReason == "error" {
			msg = e.Message.ErrorMessage
			if msg == "" {
				msg = "error"
			}
		}
		return nil
	})
	if !ended {
		msg = lastLine(stderr)
	}
	if msg == "" {
		return ProviderStop{}, false
	}
	kind, ok := classifyStop(msg)
	if !ok {
		return ProviderStop{}, false
	}
	return ProviderStop{Kind: kind, Detail: clip(oneLine(msg), 200)}, true
}

// lastLine is the last non-blank line of b.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
