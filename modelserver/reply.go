package modelserver

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
)

// reply is one assistant message on its way out in one dialect.
type reply struct {
	api   api
	model string
	answer
	in, out int // token usage estimates
	drop    bool

	// Responses API items, built once so that every event names the same ids.
	respID  string
	items   []map[string]any
	created int64
}

// sseEvent is one server-sent event; name is empty for Chat Completions,
// which sends bare data lines. data is marshalled as JSON unless it is a
// raw string such as "[DONE]".
type sseEvent struct {
	name string
	data any
}

// Chunk sizes for streamed deltas: small enough that every client sees
// several deltas, as with a real model.
const (
	textChunk = 24
	argsChunk = 32
)

// chunks splits s into pieces of at most n bytes without splitting UTF-8
// sequences.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// newID returns prefix + 24 random hex digits.
func newID(prefix string) string {
	return fmt.Sprintf("%s%016x%08x", prefix, rand.Uint64(), rand.Uint32())
}

func (m *reply) events() []sseEvent {
	switch m.api {
	case apiAnthropic:
		return m.anthropicEvents()
	case apiResponses:
		return m.responsesEvents()
	case apiGemini:
		return m.geminiEvents()
	case apiCodeAssist:
		return m.codeAssistEvents()
	default:
		return m.chatEvents()
	}
}

func (m *reply) body() any {
	switch m.api {
	case apiAnthropic:
		return m.anthropicMessage()
	case apiResponses:
		return m.responsesObject("completed", true)
	case apiGemini:
		return m.geminiBody()
	case apiCodeAssist:
		return m.codeAssistBody()
	default:
		return m.chatCompletion()
	}
}

// stream writes the answer as server-sent events; a drop sends the first
// half of the events and cuts the connection.
func (m *reply) stream(w http.ResponseWriter) {
	events := m.events()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	m.idHeader(h)
	w.WriteHeader(http.StatusOK)
	n := len(events)
	if m.drop {
		n = max(1, n/2)
	}
	rc := http.NewResponseController(w)
	for _, ev := range events[:n] {
		var data []byte
		if s, ok := ev.data.(string); ok {
			data = []byte(s)
		} else {
			data, _ = json.Marshal(ev.data)
		}
		var b []byte
		if ev.name != "" {
			b = append(b, "event: "+ev.name+"\n"...)
		}
		b = append(b, "data: "...)
		b = append(b, data...)
		b = append(b, "\n\n"...)
		if _, err := w.Write(b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if m.drop {
		// Abort the response: net/http closes the connection without
		// ending the chunked body, as a dying upstream would.
		panic(http.ErrAbortHandler)
	}
}

// json writes the answer as one JSON object; a drop announces the full
// length, sends half and cuts the connection.
func (m *reply) json(w http.ResponseWriter) {
	b, _ := json.Marshal(m.body())
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	m.idHeader(h)
	w.WriteHeader(http.StatusOK)
	if m.drop {
		_, _ = w.Write(b[:len(b)/2])
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	_, _ = w.Write(b)
}

func (m *reply) idHeader(h http.Header) {
	if m.api == apiAnthropic {
		h.Set("request-id", newID("req_tare_"))
	} else {
		h.Set("x-request-id", newID("req_tare_"))
	}
}

// writeFailure answers an injected provider error with the provider's
// real status and body.
func writeFailure(w http.ResponseWriter, a api, kind ErrorKind) {
	if a == apiGemini || a == apiCodeAssist {
		writeGeminiFailure(w, kind)
		return
	}
	if a == apiAnthropic {
		w.Header().Set("request-id", newID("req_tare_"))
		switch kind {
		case ErrLogin:
			writeJSON(w, http.StatusUnauthorized, errorBody(a, "authentication_error", "invalid x-api-key"))
		case ErrQuota:
			writeJSON(w, http.StatusTooManyRequests, errorBody(a, "rate_limit_error",
				"This request would exceed your organization's rate limit. Please try again later or contact sales to discuss a rate limit increase."))
		default:
			writeJSON(w, 529, errorBody(a, "overloaded_error", "Overloaded"))
		}
		return
	}
	w.Header().Set("x-request-id", newID("req_tare_"))
	switch kind {
	case ErrLogin:
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided: sk-tare-****. You can find your API key at https://platform.openai.com/account/api-keys.",
			"type":    "invalid_request_error", "param": nil, "code": "invalid_api_key",
		}})
	case ErrQuota:
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
			"message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
			"type":    "insufficient_quota", "param": nil, "code": "insufficient_quota",
		}})
	default:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
			"message": "The server is overloaded or not ready yet.",
			"type":    "server_error", "param": nil, "code": nil,
		}})
	}
}

// errorBody is an error in the dialect's shape.
func errorBody(a api, typ, msg string) map[string]any {
	if a == apiGemini || a == apiCodeAssist {
		code, status := http.StatusBadRequest, "INVALID_ARGUMENT"
		if typ == "not_found_error" {
			code, status = http.StatusNotFound, "NOT_FOUND"
		}
		return geminiError(code, status, msg)
	}
	if a == apiAnthropic {
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": newID("req_tare_")}
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
