package modelserver

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestProbeRecordsWithAuthRedacted(t *testing.T) {
	var logBuf safeBuffer
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	srv := startServer(t, Options{Log: &logBuf, LogPath: logPath})
	if srv.Mode() != ModeProbe || srv.Mode().String() != "probe" {
		t.Fatalf("mode %v", srv.Mode())
	}
	req, _ := http.NewRequest(http.MethodHead, srv.URL()+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(srv.URL() + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /: %v %v", resp, err)
	}
	resp.Body.Close()

	claude := claudeRequest(true)
	raw, _ := json.Marshal(claude)
	resp = post(t, srv.URL()+"/v1/messages?beta=true", raw,
		"x-api-key: sk-ant-secret-1", "Authorization: Bearer sk-secret-2", "Cookie: session=secret-3",
		"X-Claude-Code-Session-Id: probe-session")
	evs, err := readSSE(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var text, stop string
	for _, e := range evs {
		m := e.obj(t)
		if d, ok := get(m, "delta", "text").(string); ok {
			text += d
		}
		if s, ok := get(m, "delta", "stop_reason").(string); ok {
			stop = s
		}
	}
	if text != ProbeText || stop != "end_turn" {
		t.Fatalf("probe answer %q stop %q", text, stop)
	}
	// The OpenAI dialects end their turn too.
	path, body := requestFor(apiResponses, false)
	resp = post(t, srv.URL()+path, body)
	var r map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if r["status"] != "completed" || get(r, "output", 0, "content", 0, "text") != ProbeText || len(r["output"].([]any)) != 1 {
		t.Errorf("responses probe answer %v", r)
	}
	path, body = requestFor(apiChat, false)
	resp = post(t, srv.URL()+path, body)
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if get(r, "choices", 0, "finish_reason") != "stop" || get(r, "choices", 0, "message", "content") != ProbeText {
		t.Errorf("chat probe answer %v", r)
	}

	recs := srv.Requests()
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	if recs[0].Method != "HEAD" || recs[0].Path != "/" || recs[0].Status != 200 {
		t.Errorf("HEAD record %+v", recs[0])
	}
	m := recs[2]
	if m.Path != "/v1/messages?beta=true" || m.API != "anthropic" || m.Outcome != "probe" || m.Key != "probe-session" {
		t.Errorf("messages record %+v", m)
	}
	for _, h := range []string{"x-api-key", "authorization", "cookie"} {
		if m.Headers[h] != Redacted {
			t.Errorf("header %s = %q, want %q", h, m.Headers[h], Redacted)
		}
	}
	if m.Headers["x-claude-code-session-id"] != "probe-session" {
		t.Errorf("headers %v", m.Headers)
	}
	if string(m.Body) != string(raw) {
		t.Errorf("body not kept raw")
	}
	if time.Since(m.Time) > time.Minute || m.Time.IsZero() {
		t.Errorf("time %v", m.Time)
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	fileLog, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, log := range map[string]string{"Log": logBuf.String(), "LogPath": string(fileLog)} {
		if strings.Contains(log, "secret") {
			t.Errorf("%s leaks a credential", name)
		}
		sc := bufio.NewScanner(strings.NewReader(log))
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var rec Request
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Errorf("%s line %d is not a Request: %v", name, n+1, err)
			}
			n++
		}
		if n != 5 {
			t.Errorf("%s has %d lines, want 5", name, n)
		}
	}
	if fi, err := os.Stat(logPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v %v", fi.Mode(), err)
	}
}

func TestStartAndCloseLifecycle(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() != "" {
		t.Errorf("URL before Start: %q", s.URL())
	}
	for _, bad := range []string{"0.0.0.0:0", "192.0.2.1:80", "nope"} {
		if err := s.Start(bad); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("Start(%q) = %v, want a refusal naming 127.0.0.1", bad, err)
		}
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); err == nil {
		t.Error("second Start succeeded")
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q", s.URL())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err == nil {
		t.Error("Start after Close succeeded")
	}
	if _, err := New(Options{LogPath: filepath.Join(t.TempDir(), "no", "such", "dir", "log")}); err == nil ||
		!strings.Contains(err.Error(), "writable log path") {
		t.Errorf("bad LogPath: %v", err)
	}
}

// TestCloseLeaksNoGoroutine closes a server with an idle keep-alive
// connection, a half-sent request and a finished stream, and checks that
// every goroutine it started is gone.
func TestCloseLeaksNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := New(Options{Script: mustScript(t, featureScript)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	for i := 0; i < 3; i++ {
		path, body := requestFor(apiAnthropic, true)
		resp, err := client.Post(s.URL()+path, "application/json", strings.NewReader(mustJSON(body)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	half, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	io.WriteString(half, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tr.CloseIdleConnections()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
