package modelserver

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// gate stands between a meter and tare's model server: it holds every call that reaches it
// until each of the test's n calls has either reached it or come back refused, so the calls
// are in flight together whatever the machine's load, then lets them on to the server.
type gate struct {
	n        int64
	arrived  atomic.Int64
	refused  atomic.Int64
	open     chan struct{}
	openOnce sync.Once
}

func newGate(n int) *gate { return &gate{n: int64(n), open: make(chan struct{})} }

func (g *gate) check() {
	if g.arrived.Load()+g.refused.Load() >= g.n {
		g.openOnce.Do(func() { close(g.open) })
	}
}

// upstream is the gate's HTTP server, relaying to srv once open.
func (g *gate) upstream(t *testing.T, srv *Server) string {
	target, _ := url.Parse(srv.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.arrived.Add(1)
		g.check()
		<-g.open
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	return strings.TrimPrefix(up.URL, "http://")
}

// TestCapHoldsForCallsSentTogether: twenty large calls sent at once against a token cap, and
// against a cost cap: each call holds its worst case (its request's bytes as input, its
// max_tokens as output) while in flight, so the meter lets through no more than the cap plus
// one call's worst case, refuses the rest before they are sent, and once every call ended
// nothing is held.
func TestCapHoldsForCallsSentTogether(t *testing.T) {
	for _, b := range []*Budget{{Name: "tail", MaxTokens: 60_000}, {Name: "run", MaxCost: 0.06}} {
		t.Run(b.Name, func(t *testing.T) {
			for _, p := range burstProblems(t, b, defences{}) {
				t.Error(p)
			}
		})
	}
}

// burstProblems sends twenty large calls together through a meter charging b, with the
// defences off turned off, and says what went past the cap.
func burstProblems(t *testing.T, b *Budget, off defences) []string {
	t.Helper()
	const calls = 20
	body := `{"model":"known-model","max_tokens":1000,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 80_000) + `"}]}`
	worst := int64(len(body)) + 1000
	srv := startServer(t, Options{})
	g := newGate(calls)
	m, err := NewMeter(g.upstream(t, srv), onlyKnown, b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.off = off
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post("http://"+m.Addr()+"/v1/messages", "application/json", strings.NewReader(body))
			if err != nil || resp.StatusCode == http.StatusBadRequest {
				g.refused.Add(1)
				g.check()
			}
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	var charged int64
	var cost float64
	through, refused := 0, 0
	for _, c := range m.Calls() {
		if c.OverBudget {
			refused++
			continue
		}
		through++
		charged += c.Tokens()
		cost += c.Cost
	}
	t.Logf("%s cap: %d calls through (%d tokens, $%.4f), %d refused; one call's worst case %d tokens", b.Name, through, charged, cost, refused, worst)
	var problems []string
	if b.MaxTokens > 0 && charged > b.MaxTokens+worst {
		problems = append(problems, fmt.Sprintf("%d calls sent together spent %d tokens against a cap of %d; want at most the cap plus one call's worst case (%d)", calls, charged, b.MaxTokens, b.MaxTokens+worst))
	}
	if b.MaxCost > 0 && cost > b.MaxCost+float64(worst)*1e-6 {
		problems = append(problems, fmt.Sprintf("%d calls sent together spent $%.4f against a cap of $%g; want at most the cap plus one call's worst case ($%.4f)", calls, cost, b.MaxCost, b.MaxCost+float64(worst)*1e-6))
	}
	if refused == 0 || through == 0 || int64(len(srv.Requests())) != int64(through) {
		problems = append(problems, fmt.Sprintf("%d through, %d refused, %d reached the server; want the refused ones never sent", through, refused, len(srv.Requests())))
	}
	if b.held != 0 || b.heldTokens != 0 || b.heldCost != 0 {
		problems = append(problems, fmt.Sprintf("after every call ended the budget holds %d calls (%d tokens, $%g); want nothing", b.held, b.heldTokens, b.heldCost))
	}
	return problems
}

// TestCapLetsGoOfAFailedCall: a call that gets no answer (the upstream is gone) lets go of
// what it held, so it does not count against the cap: the next call is not refused as over
// budget.
func TestCapLetsGoOfAFailedCall(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(up.URL, "http://")
	up.Close()
	b := &Budget{Name: "tail", MaxTokens: 10_000}
	m, err := NewMeter(addr, onlyKnown, b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	body := `{"model":"known-model","max_tokens":9000,"messages":[{"role":"user","content":"hi"}]}`
	for i := range 2 {
		if code, got := meterPost(t, m, body); code != http.StatusBadGateway {
			t.Errorf("call %d to a gone upstream: %d %s; want 502 from the relay, not a refusal", i+1, code, got)
		}
	}
	if b.held != 0 || b.heldTokens != 0 || b.spent() != "" {
		t.Errorf("after two failed calls the budget holds %d calls (%d tokens), spent %q; want nothing held or spent", b.held, b.heldTokens, b.spent())
	}
}

// paidPaths are paid endpoints tare's meter does not count, and paths with dot segments or
// doubled slashes a provider may resolve to one.
var paidPaths = []string{"/v1/images/generations", "/v1/images/edits", "/v1/audio/speech", "/v1/audio/transcriptions", "/v1/videos",
	"/v1beta/models/imagen-4.0-generate-001:predict", "/v1beta/models/veo-3.0-generate-001:predictLongRunning", "/v1/complete",
	"/v1/completions", "/v1/embeddings", "/v1beta/models/gemini-embedding-001:embedContent", "/v1/messages/batches", "/v1/batches",
	"/v1beta/models/gemini-2.5-pro:batchGenerateContent", "/backend-api/codex/memories/trace_summarize", "/backend-api/wham/tasks",
	"/api/codex/tasks", "/api/codex/rate-limit-reset-credits/consume", "/api/oauth/../../v1/images/generations", "/v1//images/generations"}

// TestCapRefusesWhatItCannotMeter: under a cap, before anything was spent, every paid
// endpoint the meter does not count (images, speech, video, Gemini's :predict, Anthropic's
// legacy /v1/complete, legacy completions, embeddings, batches, OpenAI's background
// responses) and any path with dot segments is refused at the relay and never reaches the provider; what is free (model
// lists, token counts, Code Assist's setup, Claude Code's account service) goes on. With no
// cap every request goes on, as the meter only counts.
func TestCapRefusesWhatItCannotMeter(t *testing.T) {
	for _, p := range unmeteredProblems(t, paidPaths, defences{}) {
		t.Error(p)
	}
}

// unmeteredProblems sends each of paid, and requests that are free, through capped meters
// with the defences off turned off, and says what a cap let through or held back wrongly.
func unmeteredProblems(t *testing.T, paid []string, off defences) []string {
	t.Helper()
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer up.Close()
	send := func(m *Meter, method, path string) int {
		t.Helper()
		return meterSend(t, m, method, path, `{"model":"known-model","prompt":"a cat"}`)
	}
	free := [][2]string{{"GET", "/v1/models"}, {"GET", "/"}, {"POST", "/v1/messages/count_tokens"}, {"POST", "/v1beta/models/gemini-2.5-pro:countTokens"},
		{"POST", "/v1internal:loadCodeAssist"}, {"POST", "/v1internal:recordCodeAssistMetrics"}, {"POST", "/api/event_logging/v2/batch"}}
	var problems []string
	for _, b := range []*Budget{{Name: "tail", MaxTokens: 1_000_000}, {Name: "run", MaxCost: 100}} {
		m, err := NewMeter(strings.TrimPrefix(up.URL, "http://"), onlyKnown, b)
		if err != nil {
			t.Fatal(err)
		}
		m.off = off
		for _, p := range paid {
			before := hits.Load()
			if code := send(m, "POST", p); code != http.StatusBadRequest || hits.Load() != before {
				problems = append(problems, fmt.Sprintf("%s cap: POST %s answered %d, %d reached the provider; want refused at the relay", b.Name, p, code, hits.Load()-before))
			}
		}
		before := hits.Load()
		if code := meterSend(t, m, "POST", "/v1/responses", `{"model":"known-model","background":true,"input":"draw"}`); code != http.StatusBadRequest || hits.Load() != before {
			problems = append(problems, fmt.Sprintf("%s cap: a background response answered %d, %d reached the provider; want refused at the relay (its usage comes on an unmetered poll)", b.Name, code, hits.Load()-before))
		}
		for _, f := range free {
			before := hits.Load()
			if code := send(m, f[0], f[1]); code != http.StatusOK || hits.Load() != before+1 {
				problems = append(problems, fmt.Sprintf("%s cap: %s %s answered %d; want it through to the provider", b.Name, f[0], f[1], code))
			}
		}
		m.Close()
	}
	m, err := NewMeter(strings.TrimPrefix(up.URL, "http://"), onlyKnown)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if code := send(m, "POST", "/v1/images/generations"); code != http.StatusOK {
		problems = append(problems, fmt.Sprintf("no cap: an image call answered %d; want it through (the meter only counts)", code))
	}
	return problems
}

// TestMeterMutations: each of the meter's cap defences is taken away in turn, and the very
// check that passes on the real meter must report a problem: a defence no check can see would
// be one the tests do not prove.
func TestMeterMutations(t *testing.T) {
	if p := burstProblems(t, &Budget{Name: "tail", MaxTokens: 60_000}, defences{noHold: true}); len(p) == 0 {
		t.Error("without holding calls in flight, twenty calls sent together stayed within the cap: the burst check cannot see the defence")
	}
	if p := unmeteredProblems(t, paidPaths[:1], defences{noFreeList: true}); len(p) == 0 {
		t.Error("without the free list, an image call under a cap was refused: the check cannot see the defence")
	}
	if p := unmeteredProblems(t, []string{"/api/oauth/../../v1/images/generations"}, defences{noCleanPath: true}); len(p) == 0 {
		t.Error("without the clean-path refusal, /api/oauth/../../v1/images/generations under a cap was refused: the check cannot see the defence")
	}
}

// TestCapLetsEveryCLIRun: under a cap no CLI is broken by what the meter refuses: claude,
// codex, pi, gemini (API key) and gemini on Code Assist (a Google login, with its setup calls)
// finish their task through a capped meter, and the meter refused none of their requests.
func TestCapLetsEveryCLIRun(t *testing.T) {
	sc, err := LoadScript(filepath.Join("testdata", "two-turns.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Options{Script: sc, Seed: 1})
	for _, name := range []string{"claude", "codex", "pi", "gemini", "code-assist"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, err := srv.Stream(name)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewMeter(addr, nil, &Budget{Name: "tail", MaxTokens: 50_000_000})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			url := "http://" + m.Addr()
			bin := agentBin(t, map[string]string{"code-assist": "gemini"}[name]+strings.TrimSuffix(name, "code-assist"))
			r := map[string]cliRun{
				"claude":      claudeRun(bin, url, "-p", cliPrompt),
				"codex":       codexRun(bin, url, cliPrompt),
				"pi":          piRun(bin, url, "tare-chat", "-p", cliPrompt),
				"gemini":      geminiRun(bin, url, "-p", cliPrompt),
				"code-assist": codeAssistRun(bin, url),
			}[name]
			stdout, stderr, code := newAgentHome(t, r).exec(t, name, r.bin, r.args...)
			var refused []string
			for _, c := range m.Calls() {
				if c.OverBudget {
					refused = append(refused, fmt.Sprintf("%+v", c))
				}
			}
			if code != 0 || len(refused) > 0 || m.OverBudget() != "" || len(m.Calls()) < 2 {
				t.Errorf("%s under a cap: exit %d, %d calls metered, refused %v (%s)\nstdout: %s\nstderr: %s", name, code, len(m.Calls()), refused, m.OverBudget(), tail(stdout, 2000), tail(stderr, 2000))
			}
		})
	}
}
