package modelserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// startServer starts a server on a free loopback port and closes it when
// the test ends.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustScript(t *testing.T, src string) *Script {
	t.Helper()
	sc, err := ParseScript([]byte(src), "test.toml")
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	return sc
}

// fatalf fails the test and stops the calling goroutine; unlike t.Fatalf it
// may be used from the goroutines a test starts.
func fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Errorf(format, args...)
	runtime.Goexit()
}

// post sends a JSON body and returns the response; headers are "k: v" pairs.
func post(t *testing.T, url string, body any, headers ...string) *http.Response {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			fatalf(t, "%v", err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		fatalf(t, "%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fatalf(t, "POST %s: %v", url, err)
	}
	return resp
}

// event is one parsed server-sent event.
type event struct {
	name string
	data string
}

// obj decodes the event data as a JSON object.
func (e event) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(e.data), &m); err != nil {
		fatalf(t, "event %q data is not a JSON object: %v: %s", e.name, err, e.data)
	}
	return m
}

// readSSE parses a text/event-stream body; it returns the events read and
// the read error (nil at a clean end of stream).
func readSSE(r io.Reader) ([]event, error) {
	var (
		events []event
		cur    event
		data   []string
		seen   bool
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if seen {
				cur.data = strings.Join(data, "\n")
				events = append(events, cur)
			}
			cur, data, seen = event{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.name, seen = value, true
		case "data":
			data, seen = append(data, value), true
		}
	}
	return events, sc.Err()
}

// names lists the event names (or the "type" field of nameless events).
func names(t *testing.T, evs []event) []string {
	var out []string
	for _, e := range evs {
		if e.name != "" {
			out = append(out, e.name)
			continue
		}
		if e.data == "[DONE]" {
			out = append(out, "[DONE]")
			continue
		}
		out = append(out, "chunk")
	}
	return out
}

func get(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, ok := m.(map[string]any)
			if !ok {
				return nil
			}
			m = mm[k]
		case int:
			a, ok := m.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			m = a[k]
		}
	}
	return m
}

// safeBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
