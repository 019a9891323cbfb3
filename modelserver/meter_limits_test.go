package modelserver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// onlyKnown prices one model.
func onlyKnown(model string, in, out, cr, cw int64) (float64, bool) {
	if model != "known-model" {
		return 0, false
	}
	return float64(in+out) * 1e-6, true
}

// meterPost sends a Messages call through m and returns the status and body.
func meterPost(t *testing.T, m *Meter, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+m.Addr()+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// meterSend sends a JSON request through m and returns its status.
func meterSend(t *testing.T, m *Meter, method, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+m.Addr()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestCostCapRefusesAModelWithoutPrice: under a cost cap, a call of a model tare's table does
// not price is refused before it reaches the provider (its cost would be unknown, never 0),
// saying so and how to fix it; a priced model goes through; and a call whose model only the
// answer names, unpriced, counts the cap as spent.
func TestCostCapRefusesAModelWithoutPrice(t *testing.T) {
	srv := startServer(t, Options{})
	m, err := NewMeter(srv.Addr(), onlyKnown, &Budget{Name: "tail", MaxCost: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	code, body := meterPost(t, m, `{"model":"mystery-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "no price for mystery-model") || !strings.Contains(body, "fix: add its price") || len(srv.Requests()) != 0 {
		t.Errorf("unpriced model under a cost cap: %d %s, %d requests reached the server; want refused at the relay", code, body, len(srv.Requests()))
	}
	if code, body := meterPost(t, m, `{"model":"known-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); code != http.StatusOK {
		t.Errorf("priced model: %d %s; want it through", code, body)
	}
	// A call whose model only the answer named, without a price, spends the cost cap.
	b := &Budget{Name: "run", MaxCost: 1}
	m2, err := NewMeter(srv.Addr(), onlyKnown, b)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	b.charge(CallUsage{Model: "echoed-model", Input: 5})
	if why := b.spent(); !strings.Contains(why, "no price for echoed-model") {
		t.Errorf("a charged call without a price: budget says %q; want the cap counted as spent", why)
	}
	if code, body := meterPost(t, m2, `{"model":"known-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); code != http.StatusBadRequest || !strings.Contains(body, "cannot be kept") {
		t.Errorf("after an unpriced call: %d %s; want the next call refused", code, body)
	}
}

// TestMeterPassesLongBodiesWholeAndSaysSo: a request and an answer longer than the meter reads
// (32 MiB) pass whole, and the call is marked incomplete instead of its short count passing as
// the truth.
func TestMeterPassesLongBodiesWholeAndSaysSo(t *testing.T) {
	var got atomic.Int64
	big := bytes.Repeat([]byte("x"), maxBody+1024)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"model":"m","usage":{"input_tokens":3,"output_tokens":4},"pad":"`))
		w.Write(big)
		w.Write([]byte(`"}`))
	}))
	defer up.Close()
	m, err := NewMeter(strings.TrimPrefix(up.URL, "http://"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := append(append([]byte(`{"model":"m","pad":"`), big...), `"}`...)
	resp, err := http.Post("http://"+m.Addr()+"/v1/messages", "application/json", bytes.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got.Load() != int64(len(req)) || n < int64(len(big)) {
		t.Errorf("request reached upstream with %d of %d bytes, answer %d bytes; want both whole", got.Load(), len(req), n)
	}
	calls := m.Calls()
	if len(calls) != 1 || !calls[0].Incomplete {
		t.Errorf("calls %+v: want the one call marked incomplete", calls)
	}
}

// TestMeterRefusesWebSockets: an upgrade to a WebSocket (Codex's Responses WebSocket) would
// carry model calls past the meter unread: it is refused with 426 and never reaches the
// provider, so the client falls back to metered HTTPS.
func TestMeterRefusesWebSockets(t *testing.T) {
	srv := startServer(t, Options{})
	m, err := NewMeter(srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req, _ := http.NewRequest("GET", "http://"+m.Addr()+"/v1/responses", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || len(srv.Requests()) != 0 {
		t.Errorf("WebSocket upgrade: %d, %d requests reached the server; want 426 and none", resp.StatusCode, len(srv.Requests()))
	}
}

// TestMeterReadsCompressedAnswers: a client offering compressed answers (every real CLI does)
// still has its calls counted: a provider that compresses when asked sends the meter gzip,
// which it reads, and the client gets the answer plain.
func TestMeterReadsCompressedAnswers(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := `{"model":"m","usage":{"input_tokens":30,"output_tokens":4}}`
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "br") {
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte("\x00not brotli a meter could read"))
			return
		}
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write([]byte(body))
			zw.Close()
			return
		}
		w.Write([]byte(body))
	}))
	defer up.Close()
	m, err := NewMeter(strings.TrimPrefix(up.URL, "http://"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req, _ := http.NewRequest("POST", "http://"+m.Addr()+"/v1/messages", strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Accept-Encoding", "br, gzip")
	resp, err := http.DefaultTransport.(*http.Transport).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if calls := m.Calls(); len(calls) != 1 || calls[0].Input != 30 || calls[0].Output != 4 || !strings.HasPrefix(string(b), `{"model"`) {
		t.Errorf("calls %+v, client got %q; want 30 in and 4 out counted, the answer plain", calls, b)
	}
}

// TestMeterPassesStreamsAsTheyCome: a streamed answer reaches the client event by event
// through the meter, never held back until it ends: the provider sends its last event only
// after the client has read the first.
func TestMeterPassesStreamsAsTheyCome(t *testing.T) {
	firstRead := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":7}}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-firstRead:
		case <-time.After(10 * time.Second):
			return // held back: the client never saw the first event
		}
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}\n\n")
	}))
	defer up.Close()
	m, err := NewMeter(strings.TrimPrefix(up.URL, "http://"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	resp, err := http.Post("http://"+m.Addr()+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "event: message_start") {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(firstRead)
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "message_delta") {
		t.Fatalf("the stream ended without its last event: %q", rest)
	}
	if calls := m.Calls(); len(calls) != 1 || calls[0].Input != 7 || calls[0].Output != 3 {
		t.Errorf("calls %+v: want 7 in, 3 out", calls)
	}
}

// TestCapLeavesNoUnmeteredWayToTheProvider: under a cap, a paid endpoint the meter cannot
// count (a batch) never reaches the provider, before or after the cap is spent, and Codex's
// remote compaction is metered as the Responses call it is, so it spends the cap.
func TestCapLeavesNoUnmeteredWayToTheProvider(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"r","model":"known-model","usage":{"input_tokens":7,"output_tokens":5,"total_tokens":12},"output":[]}`))
	}))
	defer up.Close()
	b := &Budget{Name: "tail", MaxTokens: 20}
	m, err := NewMeter(strings.TrimPrefix(up.URL, "http://"), onlyKnown, b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	send := func(method, path, body string) int { t.Helper(); return meterSend(t, m, method, path, body) }
	if code := send("POST", "/v1/messages/batches", `{"requests":[]}`); code != http.StatusBadRequest || hits.Load() != 0 {
		t.Errorf("a batch under a cap: %d, %d reached the provider; want refused at the relay", code, hits.Load())
	}
	if code := send("GET", "/v1/models", ""); code != http.StatusOK || hits.Load() != 1 {
		t.Errorf("a model list before the cap is spent: %d; want it through", code)
	}
	if code := send("POST", "/v1/responses/compact", `{"model":"known-model","input":[]}`); code != http.StatusOK {
		t.Fatalf("compaction: %d", code)
	}
	if calls := m.Calls(); len(calls) != 1 || calls[0].API != string(apiResponses) || calls[0].Input != 7 {
		t.Errorf("compaction metered as %+v; want one Responses call of 7 tokens in", calls)
	}
	send("POST", "/v1/responses/compact", `{"model":"known-model","input":[]}`) // 24 tokens: the cap is spent
	before := hits.Load()
	if code := send("POST", "/v1/responses", `{"model":"known-model","input":[]}`); code != http.StatusBadRequest {
		t.Errorf("a model call after compactions spent the cap: %d; want refused", code)
	}
	if code := send("POST", "/v1beta/models/m:batchGenerateContent", `{}`); code != http.StatusBadRequest {
		t.Errorf("a Gemini batch under a cap: %d; want refused", code)
	}
	if hits.Load() != before {
		t.Errorf("%d requests reached the provider after the cap was spent", hits.Load()-before)
	}
}

// closingBody reads like a server's request body: its last bytes come with io.EOF, and once
// the server closes it (it does when the proxy writes the answer's header) every read fails.
type closingBody struct {
	r      *bytes.Reader
	closed atomic.Bool
}

func (b *closingBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.r.Read(p)
	if err == nil && b.r.Len() == 0 {
		err = io.EOF
	}
	return n, err
}

// TestForwardedBodyEndsAfterTheIncomingOneCloses: Go's transport reads a request body once
// more after its declared length, and may do it late, after the server has closed the
// incoming body. The body the meter forwards must end there with io.EOF: an error instead
// makes the transport close its connection to the upstream under the streaming answer, and
// the agent's answer is cut (a tail left out as dropped under load).
func TestForwardedBodyEndsAfterTheIncomingOneCloses(t *testing.T) {
	for _, size := range []int{100, maxBody + 1024} {
		in := &closingBody{r: bytes.NewReader(bytes.Repeat([]byte("x"), size))}
		head, err := io.ReadAll(io.LimitReader(in, maxBody))
		if err != nil {
			t.Fatal(err)
		}
		fwd := forwardBody(head, in)
		// The transport copies the declared length, exactly.
		if n, err := io.Copy(io.Discard, io.LimitReader(fwd, int64(size))); n != int64(size) || err != nil {
			t.Fatalf("%d bytes: forwarded %d, %v", size, n, err)
		}
		in.closed.Store(true)
		if n, err := fwd.Read(make([]byte, 512)); n != 0 || err != io.EOF {
			t.Errorf("%d bytes: a read past the end after the incoming body closed gave %d, %v; want 0, EOF", size, n, err)
		}
	}
}
