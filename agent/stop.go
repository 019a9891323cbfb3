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
	// StopLogin: the login expired or the key is no longer valid (HTTP 401): the operator
	// logs in again, and the run can go on where it stopped.
	StopLogin = "login"
	// StopOverloaded: the provider is at capacity (Anthropic 529, OpenAI 503/500).
	StopOverloaded = "overloaded"
	// StopDropped: the connection or the stream broke and the CLI did not recover.
	StopDropped = "dropped"
)

// ProviderStop is why the provider, not the agent, ended a run: Kind is one of StopQuota,
// StopLogin, StopOverloaded, StopDropped; Detail is the CLI's own words, one line.
type ProviderStop struct {
	Kind   string
	Detail string
}

// providerStopper is an adapter that can tell a provider's end of a run from its output, one
// stream line at a time: stopLine says whether line is one that decides how the run ended
// (a result, a failed or completed turn, an assistant message's end) and, if so, whether it
// ended in a provider's stop. The last deciding line wins.
type providerStopper interface {
	stopLine(line []byte) (decides bool, stop ProviderStop, stopped bool)
}

// stderrStopper is an adapter whose CLI, when its stream has no deciding line, writes the
// provider's error as the last line of stderr.
type stderrStopper interface {
	stopStderr(last string) (ProviderStop, bool)
}

// ProviderStopped reads a finished headless run's stdout and stderr as agent a writes them
// and says whether the provider ended the run (a quota wall, an expired login, an overload,
// a dropped stream the CLI did not recover from). Errors the CLI retried past are not a
// stop: only how the run ended counts.
func ProviderStopped(a Agent, stdout, stderr []byte) (ProviderStop, bool) {
	r := NewStopReader(a)
	_ = eachJSON(bytes.NewReader(stdout), func(line []byte) error {
		r.Line(line)
		return nil
	})
	return r.Stop(stderr)
}

// StopReader follows an agent's stream a line at a time and keeps how the run ended so far,
// so a stream read in pieces (a live writer's, a huge one) is judged as ProviderStopped
// judges it whole, without holding it.
type StopReader struct {
	a       Agent
	decided bool
	stop    ProviderStop
	stopped bool
	// Session is the session the stream names, once a line has named it.
	Session string
}

// NewStopReader starts reading agent a's stream.
func NewStopReader(a Agent) *StopReader { return &StopReader{a: a} }

// Line reads one line of the stream.
func (r *StopReader) Line(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	if r.Session == "" {
		if res, err := r.a.ParseStream(bytes.NewReader(line)); err == nil {
			r.Session = res.SessionID
		}
	}
	p, ok := r.a.(providerStopper)
	if !ok {
		return
	}
	if decides, stop, stopped := p.stopLine(line); decides {
		r.decided, r.stop, r.stopped = true, stop, stopped
	}
}

// Decided says whether a line read so far decides how the run ended; until one does, Stop
// reads stderr.
func (r *StopReader) Decided() bool { return r.decided }

// Stop is how the run ended as far as read: the deciding line's stop, or, for a CLI that
// writes the provider's error on stderr when its stream has none, stderr's last line (the
// end of stderr is enough).
func (r *StopReader) Stop(stderr []byte) (ProviderStop, bool) {
	if r.decided {
		return r.stop, r.stopped
	}
	if p, ok := r.a.(stderrStopper); ok && len(bytes.TrimSpace(stderr)) > 0 {
		return p.stopStderr(lastLine(stderr))
	}
	return ProviderStop{}, false
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
	// A 401 as each CLI words it: Claude Code's "authentication_failed" and "Please run
	// /login", Codex's "401 Unauthorized: Incorrect API key", pi's body's
	// authentication_error, Gemini CLI's UNAUTHENTICATED, and an OAuth token that expired.
	{StopLogin, regexp.MustCompile(`(?i)\b401\b|unauthori[sz]ed|authentication_(error|failed)|invalid.?x-api-key|invalid_api_key|` +
		`incorrect api key|invalid api key|unauthenticated|invalid authentication credentials|token.{0,12}expired|token_expired|run /login`)},
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

// stopLine implements providerStopper for Claude Code: a result with is_error whose text is
// Claude Code's "API Error: ..." (after its own retries, reported as system api_retry
// events), or api_error_status set.
func (Claude) stopLine(line []byte) (bool, ProviderStop, bool) {
	var e struct {
		Type      string `json:"type"`
		IsError   bool   `json:"is_error"`
		Result    string `json:"result"`
		APIStatus *int   `json:"api_error_status"`
	}
	if json.Unmarshal(line, &e) != nil || e.Type != "result" {
		return false, ProviderStop{}, false
	}
	if !e.IsError {
		return true, ProviderStop{}, false
	}
	msg := e.Result
	if e.APIStatus != nil {
		msg = "API Error " + itoa(*e.APIStatus) + ": " + strings.TrimPrefix(msg, "API Error: ")
	}
	kind, ok := classifyStop(msg)
	if ok && (strings.Contains(msg, "API Error") || kind == StopQuota || kind == StopLogin) {
		// Claude Code words every provider failure "API Error: ..."; anything else is the
		// agent's own error (max turns, a refused tool), except a subscription's "usage limit
		// reached" and a login's "Please run /login", which it words without the prefix.
		return true, ProviderStop{Kind: kind, Detail: clip(oneLine(e.Result), 200)}, true
	}
	return true, ProviderStop{}, false
}

// stopLine implements providerStopper for Codex: the turn.failed that ended the run ("Quota
// exceeded", "401 Unauthorized", "unexpected status 503", "stream disconnected before
// completion"). Its "error" events are retries it may recover from; only a failed turn
// counts.
func (Codex) stopLine(line []byte) (bool, ProviderStop, bool) {
	var e codexEvent
	if json.Unmarshal(line, &e) != nil {
		return false, ProviderStop{}, false
	}
	switch e.Type {
	case "turn.completed", "turn.started":
		return true, ProviderStop{}, false
	case "turn.failed":
		if kind, ok := classifyStop(e.Error.Message); ok {
			return true, ProviderStop{Kind: kind, Detail: clip(oneLine(e.Error.Message), 200)}, true
		}
		// A turn that failed for the agent's own reason leaves an earlier stop standing
		// (as it always has): only a provider's words replace it.
	}
	return false, ProviderStop{}, false
}

// stopLine implements providerStopper for pi: pi exits 0 when its provider fails, so the
// sign is in the stream: the last assistant message ends with stopReason "error" and pi's
// errorMessage ("429 {...rate_limit_error...}", "401 {...authentication_error...}", "529 ...
// overloaded_error", "terminated"), after its own retries (auto_retry_end with success
// false).
func (Pi) stopLine(line []byte) (bool, ProviderStop, bool) {
	var e piEvent
	if json.Unmarshal(line, &e) != nil || e.Type != "message_end" || e.Message.Role != "assistant" {
		return false, ProviderStop{}, false
	}
	if e.Message.StopReason != "error" {
		return true, ProviderStop{}, false
	}
	msg := e.Message.ErrorMessage
	if msg == "" {
		msg = "error"
	}
	kind, ok := classifyStop(msg)
	if !ok {
		return true, ProviderStop{}, false
	}
	return true, ProviderStop{Kind: kind, Detail: clip(oneLine(msg), 200)}, true
}

// stopStderr implements stderrStopper for pi: in print mode pi writes the error on stderr
// instead of the stream.
func (Pi) stopStderr(msg string) (ProviderStop, bool) {
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
