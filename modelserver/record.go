package modelserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Request is the record of one request the server received, kept in memory
// (Server.Requests) and written as one JSON line to the log.
type Request struct {
	// Time is when the request arrived.
	Time time.Time `json:"time"`
	// Method and Path are as received; Path keeps the query (?beta=true).
	Method string `json:"method"`
	Path   string `json:"path"`
	// Headers are the request headers with lower-case names, several values
	// joined by ", "; credential headers read "<redacted>".
	Headers map[string]string `json:"headers"`
	// Body is the raw JSON body; a body that is not JSON is kept as a JSON string.
	Body json.RawMessage `json:"body,omitempty"`
	// Status is the HTTP status answered; 0 when nothing was sent (the
	// client left, or the server closed, during a delay). A drop shows 200
	// with the outcome "drop".
	Status int `json:"status"`
	// API is the dialect: "anthropic", "responses" or "chat"; empty for other paths.
	API string `json:"api,omitempty"`
	// Key is the conversation key (session id header) when the client sent one.
	Key string `json:"key,omitempty"`
	// Stream is the draw stream of the address the request came in on (Server.Stream).
	Stream string `json:"stream,omitempty"`
	// Turn is the 1-based scripted turn this request was answered from; 0
	// when no scripted turn was used (probe, side call, after the script).
	Turn int `json:"turn,omitempty"`
	// Branch is the 1-based [[turn.branch]] taken; 0 for the plain turn.
	Branch int `json:"branch,omitempty"`
	// Attempt counts the requests for this turn of this conversation (1 = first).
	Attempt int `json:"attempt,omitempty"`
	// Outcome says how the request was answered: "probe", "side", "turn",
	// "final", "quota", "overloaded", "drop", "unmapped", "status",
	// "models", "count_tokens", "bad_request" or "not_found".
	Outcome string `json:"outcome,omitempty"`
	// Note explains an unusual outcome (an action that could not be mapped,
	// a body that could not be read).
	Note string `json:"note,omitempty"`
	// InputTokens and OutputTokens are the usage the server put in its answer: its own count,
	// which a meter on the relay must agree with.
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
	// Script is the base name of the script file in script mode.
	Script string `json:"script,omitempty"`
}

// redactedHeaders hold credentials; their values never reach logs.
var redactedHeaders = map[string]bool{
	"authorization":       true,
	"proxy-authorization": true,
	"x-api-key":           true,
	"api-key":             true,
	"x-goog-api-key":      true,
	"cookie":              true,
	"set-cookie":          true,
}

// Redacted is the value logged in place of a credential header.
const Redacted = "<redacted>"

// headerMap flattens and redacts request headers.
func headerMap(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		lk := strings.ToLower(k)
		if redactedHeaders[lk] {
			out[lk] = Redacted
			continue
		}
		out[lk] = strings.Join(v, ", ")
	}
	return out
}

// rawBody keeps a JSON body as is and wraps anything else in a JSON string
// so that every log line stays valid JSON.
func rawBody(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}
