package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const threeTurns = `
final = "The end."
[[turn]]
text = "one"
shell = "echo 1"
[[turn]]
text = "two"
shell = "echo 2"
[[turn]]
text = "three"
`

// claudeHistory is a Claude conversation with n finished tool turns,
// with a mid-conversation system entry that must not count.
func claudeHistory(n int) []any {
	msgs := []any{userBlocks("go"), map[string]any{"role": "system", "content": "agents list"}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		// Claude Code may send one assistant turn as two messages in a row.
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "x"}}},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}}})
	}
	return msgs
}

func codexHistory(n int) []any {
	var items []any
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("call_%d", i)
		items = append(items,
			map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "x"}}},
			map[string]any{"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": id},
			map[string]any{"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": id + "b"},
			map[string]any{"type": "function_call_output", "call_id": id, "output": "ok"},
			map[string]any{"type": "function_call_output", "call_id": id + "b", "output": "ok"})
	}
	return items
}

func chatHistory(n int) []any {
	var msgs []any
	for i := 0; i < n; i++ {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c", "type": "function",
				"function": map[string]any{"name": "bash", "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": "c", "content": "ok"})
	}
	return msgs
}

// answerText sends a non-streaming request and returns the answer's text.
func answerText(t *testing.T, srv *Server, a api, n int, headers ...string) string {
	t.Helper()
	var path string
	var body map[string]any
	switch a {
	case apiAnthropic:
		path, body = "/v1/messages", claudeRequest(false, claudeHistory(n)...)
	case apiResponses:
		path, body = "/v1/responses", codexRequest(codexHistory(n)...)
		body["stream"] = false
	case apiChat:
		path, body = "/v1/chat/completions", piChatRequest(false, chatHistory(n)...)
	}
	resp := post(t, srv.URL()+path, body, headers...)
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		fatalf(t, "%s: %v", a, err)
	}
	if resp.StatusCode != 200 {
		fatalf(t, "%s: status %d: %v", a, resp.StatusCode, m)
	}
	var s any
	switch a {
	case apiAnthropic:
		s = get(m, "content", 0, "text")
	case apiResponses:
		s = get(m, "output", 0, "content", 0, "text")
	case apiChat:
		s = get(m, "choices", 0, "message", "content")
	}
	str, _ := s.(string)
	return str
}

func TestTurnFromHistory(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, threeTurns)})
	want := []string{"one", "two", "three", "The end.", "The end."}
	for _, a := range []api{apiAnthropic, apiResponses, apiChat} {
		// Out of order on purpose: the turn depends only on the history.
		for _, n := range []int{2, 0, 4, 1, 3} {
			if got := answerText(t, srv, a, n); got != want[n] {
				t.Errorf("%s with %d assistant turns in the history: %q, want %q", a, n, got, want[n])
			}
		}
	}
	for _, r := range srv.Requests() {
		if r.Outcome == "final" && r.Turn != 0 || r.Outcome == "turn" && (r.Turn < 1 || r.Turn > 3) {
			t.Errorf("record turn %d outcome %s", r.Turn, r.Outcome)
		}
	}
}

func TestConcurrentSessionsDoNotInterfere(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, threeTurns)})
	want := []string{"one", "two", "three", "The end."}
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for s := 0; s < 12; s++ {
		for _, a := range []api{apiAnthropic, apiResponses, apiChat} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("X-Claude-Code-Session-Id: sess-%d-%s", s, a)
				for n := 0; n < 4; n++ {
					if got := answerText(t, srv, a, n, key); got != want[n] {
						errs <- fmt.Sprintf("session %d %s turn %d: %q, want %q", s, a, n, got, want[n])
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestSideCallsDoNotAdvance(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, threeTurns)})
	// Claude's title call: no tools, structured output.
	title := claudeRequest(false)
	delete(title, "tools")
	title["output_config"] = map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{
		"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"},
			"tags": map[string]any{"type": "array"}}, "required": []any{"title"}}}}
	resp := post(t, srv.URL()+"/v1/messages", title)
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	var obj map[string]any
	text, _ := get(m, "content", 0, "text").(string)
	if err := json.Unmarshal([]byte(text), &obj); err != nil || obj["title"] == "" || obj["n"] != float64(0) {
		t.Fatalf("structured side call answered %q (%v)", text, err)
	}
	// A tool-less summary call gets a short text.
	summary := claudeRequest(false)
	delete(summary, "tools")
	resp = post(t, srv.URL()+"/v1/messages", summary)
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if get(m, "content", 0, "text") != SideText || m["stop_reason"] != "end_turn" {
		t.Fatalf("side call answered %v", m)
	}
	// Structured output on the Responses API too.
	r := codexRequest()
	r["stream"] = false
	r["text"] = map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": map[string]any{
		"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}}
	resp = post(t, srv.URL()+"/v1/responses", r)
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if get(m, "output", 0, "content", 0, "text") != `{"ok":false}` {
		t.Fatalf("responses structured call %v", m)
	}
	// The main conversation still starts at turn 1.
	if got := answerText(t, srv, apiAnthropic, 0); got != "one" {
		t.Fatalf("after side calls the first turn answered %q", got)
	}
	for _, rec := range srv.Requests()[:3] {
		if rec.Outcome != "side" || rec.Turn != 0 {
			t.Errorf("side call record %+v", rec)
		}
	}
}

const branchScript = `
seed = 7
[[turn]]
text = "plain"
shell = "echo plain"
[[turn.branch]]
p = 0.6
text = "branch"
shell = "echo branch"
`

func TestBranchRateAndStickiness(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, branchScript), Seed: 42})
	const n = 200
	hits := 0
	first := map[string]string{}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("session-%03d", i)
		got := answerText(t, srv, apiAnthropic, 0, "X-Claude-Code-Session-Id: "+key)
		first[key] = got
		if got == "branch" {
			hits++
		}
	}
	rate := float64(hits) / n
	t.Logf("p=0.6 branch taken by %d of %d sessions", hits, n)
	if rate < 0.45 || rate > 0.75 {
		t.Errorf("p=0.6 branch taken %d/%d = %.2f, want between 0.45 and 0.75", hits, n, rate)
	}
	// Retries and other dialects of the same session take the same branch.
	for i := 0; i < n; i += 10 {
		key := fmt.Sprintf("session-%03d", i)
		for _, a := range []api{apiAnthropic, apiResponses} {
			hdr := "X-Claude-Code-Session-Id: " + key
			if a == apiResponses {
				hdr = "session-id: " + key
			}
			if got := answerText(t, srv, a, 0, hdr); got != first[key] {
				t.Errorf("session %s (%s) answered %q, first %q", key, a, got, first[key])
			}
		}
	}
	// Another server with the same seed draws the same branches.
	srv2 := startServer(t, Options{Script: mustScript(t, branchScript), Seed: 42})
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("session-%03d", i)
		if got := answerText(t, srv2, apiChat, 0, "session_id: "+key); got != first[key] {
			t.Errorf("same seed, session %s: %q vs %q", key, got, first[key])
		}
	}
	// The log names the branch.
	for _, r := range srv.Requests()[:n] {
		text := first[r.Key]
		if (text == "branch") != (r.Branch == 1) {
			t.Errorf("record of %s: branch %d for answer %q", r.Key, r.Branch, text)
		}
	}
}

func TestBranchWithoutKeyUsesSeededSequence(t *testing.T) {
	seq := func(seed int64) (string, int) {
		srv := startServer(t, Options{Script: mustScript(t, branchScript), Seed: seed})
		var b strings.Builder
		hits := 0
		for i := 0; i < 100; i++ {
			got := answerText(t, srv, apiChat, 0)
			b.WriteString(got[:1])
			if got == "branch" {
				hits++
			}
		}
		return b.String(), hits
	}
	a, hits := seq(5)
	b, _ := seq(5)
	c, _ := seq(6)
	t.Logf("keyless draws (seed 5): %s", a)
	if a != b {
		t.Errorf("same seed, different draws:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("seeds 5 and 6 drew the same sequence %s", a)
	}
	if hits <= 0 || hits >= 100 || math.Abs(float64(hits)-60) > 20 {
		t.Errorf("keyless p=0.6 branch taken %d/100", hits)
	}
}

func TestBranchRemainder(t *testing.T) {
	sc := mustScript(t, `
[[turn]]
[[turn.branch]]
p = 0.2
text = "a"
[[turn.branch]]
p = 0.3
text = "b"
[[turn]]
text = "plain"
[[turn.branch]]
p = 0.5
error = "quota"
`)
	t0, t1 := &sc.Turns[0], &sc.Turns[1]
	for _, c := range []struct {
		turn *Turn
		u    float64
		want int
	}{
		{t0, 0.1, 1}, {t0, 0.25, 2}, {t0, 0.9, 2}, // no plain content: remainder to the last branch
		{t1, 0.4, 1}, {t1, 0.7, 0}, // plain content: remainder to the plain turn
	} {
		if got, _ := c.turn.pick(c.u); got != c.want {
			t.Errorf("pick(%v) = %d, want %d", c.u, got, c.want)
		}
	}
	// An error-only branch answers with the turn's text once the error is spent.
	if b := t1.Branches[0]; b.Text != "plain" || b.Error != ErrQuota {
		t.Errorf("error-only branch %+v", b)
	}
}

func TestDelay(t *testing.T) {
	srv := startServer(t, Options{Script: mustScript(t, `
[[turn]]
text = "slow"
delay = "300ms"
`)})
	start := time.Now()
	if got := answerText(t, srv, apiChat, 0); got != "slow" {
		t.Fatalf("answer %q", got)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("answered after %v, want >= 300ms", d)
	}
}

func TestCloseDuringDelay(t *testing.T) {
	s, err := New(Options{Script: mustScript(t, "[[turn]]\ntext = \"x\"\ndelay = \"10m\"\n")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(mustJSON(piChatRequest(false))))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Wait until the request is inside its delay.
	deadline := time.Now().Add(5 * time.Second)
	for s.pending() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a request in a 10m delay", d)
	}
	if err := <-done; err == nil {
		t.Error("the delayed request got an answer after Close")
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestEveryFeatureScriptWalk plays testdata/every-feature.toml like an
// agent does: retry on 429/529/cut streams, move on to the next turn.
func TestEveryFeatureScriptWalk(t *testing.T) {
	sc, err := LoadScript("testdata/every-feature.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Options{Script: sc})
	// Sessions run concurrently: turn 2 waits 300ms per attempt.
	var mu sync.Mutex
	var wg sync.WaitGroup
	finished, dropped := 0, 0
	for s := 0; s < 20; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("X-Claude-Code-Session-Id: walk-%d", s)
			for n := 0; n <= len(sc.Turns); n++ {
				var msg map[string]any
				answered := false
				for attempt := 0; attempt < 3 && !answered; attempt++ {
					resp := post(t, srv.URL()+"/v1/messages", claudeRequest(false, claudeHistory(n)...), key)
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode == 429 || resp.StatusCode == 529 {
						continue
					}
					if err := json.Unmarshal(b, &msg); err != nil || resp.StatusCode != 200 {
						t.Errorf("session %d turn %d: %d %s", s, n+1, resp.StatusCode, b)
						return
					}
					answered = true
				}
				mu.Lock()
				switch {
				case !answered:
					dropped++
				case n == len(sc.Turns):
					if get(msg, "content", 0, "text") != sc.Final || msg["stop_reason"] != "end_turn" {
						t.Errorf("after the script: %v", msg)
					}
					finished++
				}
				mu.Unlock()
				if !answered {
					return
				}
			}
		}()
	}
	wg.Wait()
	if finished == 0 || finished+dropped != 20 {
		t.Errorf("finished %d, dropped %d of 20 sessions", finished, dropped)
	}
	t.Logf("every-feature.toml: %d sessions finished, %d hit the always-drop branch", finished, dropped)
	for _, r := range srv.Requests() {
		switch r.Outcome {
		case "turn", "final", "quota", "overloaded", "drop":
		default:
			t.Errorf("unexpected outcome %+v", r)
		}
	}
}

// branchAt asks the server at addr for turn 1 of session key and says whether the p = 0.6
// branch answered.
func branchAt(t *testing.T, addr, key string) bool {
	t.Helper()
	resp := post(t, "http://"+addr+"/v1/messages", claudeRequest(false, claudeHistory(0)...), "X-Claude-Code-Session-Id: "+key)
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		fatalf(t, "status %d: %v", resp.StatusCode, err)
	}
	return get(m, "content", 0, "text") == "branch"
}

// Tails that resume one recorded session send its session id, yet each must sample the
// branch like a separate call to a real model: across streams the p = 0.6 branch is taken at
// about 0.6, neighbouring tails are independent, a retry within a tail keeps its branch, and
// the same seed replays every stream's draw.
func TestStreamsDrawIndependently(t *testing.T) {
	const n = 300
	srv := startServer(t, Options{Script: mustScript(t, branchScript), Seed: 42})
	draws := make([]bool, n)
	addrs := make([]string, n)
	hits := 0
	for i := range draws {
		addr, err := srv.Stream(fmt.Sprintf("tail-%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = addr
		if draws[i] = branchAt(t, addr, "recorded-session"); draws[i] {
			hits++
		}
	}
	// Binomial(300, 0.6): mean 180, sd 8.5; four sd either side.
	if hits < 146 || hits > 214 {
		t.Errorf("the p = 0.6 branch was taken by %d of %d tails of one session, want 146..214", hits, n)
	}
	// Neighbours: both took the branch about 0.36 of the time (mean 107.6, sd 8.3).
	both := 0
	for i := 1; i < n; i++ {
		if draws[i] && draws[i-1] {
			both++
		}
	}
	if both < 74 || both > 141 {
		t.Errorf("neighbouring tails both took the branch %d times of %d, want 74..141 for independent draws", both, n-1)
	}
	t.Logf("%d/%d tails took the p=0.6 branch; %d of %d neighbours both did", hits, n, both, n-1)
	for i := 0; i < n; i += 30 {
		if got := branchAt(t, addrs[i], "recorded-session"); got != draws[i] {
			t.Errorf("tail %d: a retry drew again (%v, first %v)", i, got, draws[i])
		}
	}
	// A fresh CLI session makes up its own id; the stream's draw does not depend on it.
	for i := 1; i < n; i += 30 {
		if got := branchAt(t, addrs[i], fmt.Sprintf("random-id-%d", i)); got != draws[i] {
			t.Errorf("tail %d: another session id drew %v, first %v", i, got, draws[i])
		}
	}
	replay := startServer(t, Options{Script: mustScript(t, branchScript), Seed: 42})
	other := startServer(t, Options{Script: mustScript(t, branchScript), Seed: 43})
	differ := 0
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("tail-%03d", i)
		a, err := replay.Stream(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := branchAt(t, a, "recorded-session"); got != draws[i] {
			t.Errorf("seed 42 again, %s: %v, first %v", name, got, draws[i])
		}
		b, err := other.Stream(name)
		if err != nil {
			t.Fatal(err)
		}
		if branchAt(t, b, "recorded-session") != draws[i] {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("seed 43 drew exactly what seed 42 drew for 40 tails")
	}
	for _, r := range srv.Requests()[:3] {
		if r.Stream == "" {
			t.Errorf("the request log does not name the stream: %+v", r)
		}
	}
}

// pending is the number of requests being answered.
func (s *Server) pending() int { return int(s.active.Load()) }
