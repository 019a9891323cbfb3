package modelserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
)

// The meter sits on the relay's path between a room and a model endpoint: every model call
// of every agent passes through it, so it counts the tokens of each call from the response
// itself (the JSON body or the server-sent events), the same way for every dialect, instead
// of trusting each CLI's own report. It also enforces caps: once a budget is spent, the next
// call is answered with an error in the caller's own dialect, which the agent reports and
// stops on.

// CallUsage is one model call's tokens as the response showed them. Input excludes the
// tokens read from or written to the cache (as Anthropic counts; OpenAI's and Gemini's
// prompt totals are split to match).
type CallUsage struct {
	API        string `json:"api"`
	Model      string `json:"model,omitempty"`
	Status     int    `json:"status"`
	Input      int64  `json:"input"`
	Output     int64  `json:"output"`
	CacheRead  int64  `json:"cache_read,omitempty"`
	CacheWrite int64  `json:"cache_write,omitempty"`
	// Cost is the call's price on the meter's table; Priced is false when the table does not
	// name the model (its cost is unknown, not 0).
	Cost   float64 `json:"cost,omitempty"`
	Priced bool    `json:"priced"`
	// OverBudget marks a call the meter refused because a cap was spent.
	OverBudget bool `json:"over_budget,omitempty"`
	// Incomplete marks a call whose answer was longer than the meter reads (maxBody): its
	// usage may be short of what the provider charged.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Tokens is every token of the call.
func (c CallUsage) Tokens() int64 { return c.Input + c.Output + c.CacheRead + c.CacheWrite }

// PriceFunc prices a call's tokens for a model; ok is false for a model it does not know.
type PriceFunc func(model string, input, output, cacheRead, cacheWrite int64) (cost float64, ok bool)

// Budget is a cap on tokens and cost shared by the meters charging it (a tail's own, and its
// run's). Zero caps are no caps. It is safe for concurrent use.
type Budget struct {
	// Name says whose budget it is in the refusal ("tail", "run").
	Name      string
	MaxTokens int64
	MaxCost   float64

	mu     sync.Mutex
	tokens int64
	cost   float64
	// unpriced is a model a call was charged for without a price: under a cost cap its cost
	// is unknown, so the cap counts as spent rather than the call as free.
	unpriced string
	// heldTokens and heldCost are the worst cases of the calls in flight (admitted, not yet
	// ended), and held how many there are: a call is admitted only while what was spent and
	// what is held stay under the cap, so calls sent together pass it by one call at most.
	heldTokens int64
	heldCost   float64
	held       int
}

// spent reports why the budget is spent, or "" while calls may go on.
func (b *Budget) spent() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spentLocked()
}

// spentLocked is spent with b.mu held: what was spent and what the calls in flight hold
// together reach a cap.
func (b *Budget) spentLocked() string {
	inFlight := ""
	if b.held > 0 {
		calls := "calls"
		if b.held == 1 {
			calls = "call"
		}
		inFlight = fmt.Sprintf(", and %d %s in flight may use %d tokens ($%.4f) more", b.held, calls, b.heldTokens, b.heldCost)
	}
	switch {
	case b.MaxTokens > 0 && b.tokens+b.heldTokens >= b.MaxTokens:
		return fmt.Sprintf("the %s's token cap (%d) is spent: %d tokens used%s", b.Name, b.MaxTokens, b.tokens, inFlight)
	case b.MaxCost > 0 && b.cost+b.heldCost >= b.MaxCost:
		return fmt.Sprintf("the %s's cost cap ($%g) is spent: $%.4f used%s", b.Name, b.MaxCost, b.cost, inFlight)
	case b.MaxCost > 0 && b.unpriced != "":
		return b.noPrice(b.unpriced)
	}
	return ""
}

// hold admits a call whose worst case is w unless the budget, counting the calls already in
// flight at their worst, is spent (then it says why). An admitted call holds w until its
// settle: each call is admitted on what the others may still spend, so calls sent together
// pass a cap by one call's worst case at most, as calls sent one after another do.
func (b *Budget) hold(w CallUsage) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if why := b.spentLocked(); why != "" {
		return why
	}
	b.heldTokens += w.Tokens()
	b.heldCost += w.Cost
	b.held++
	return ""
}

// settle ends a held call: its worst case w is let go, and what it used, when it got an
// answer (c non-nil), is charged.
func (b *Budget) settle(w CallUsage, c *CallUsage) {
	b.mu.Lock()
	b.heldTokens -= w.Tokens()
	b.heldCost -= w.Cost
	if b.held--; b.held == 0 {
		b.heldTokens, b.heldCost = 0, 0 // no rounding left over
	}
	b.mu.Unlock()
	if c != nil {
		b.charge(*c)
	}
}

// noPrice is why a cost cap cannot be kept for a model tare's table does not price.
func (b *Budget) noPrice(model string) string {
	if model == "" {
		model = "a model the answer did not name"
	}
	return fmt.Sprintf("the %s's cost cap ($%g) cannot be kept: tare's price table has no price for %s, so its calls count as over the cap (fix: add its price with tare prices update, or cap with --max-tokens)", b.Name, b.MaxCost, model)
}

// Spend counts tokens and cost spent before this meter started (earlier tails of the run, in
// this process or another), so a run's cap holds across tare tail and tare resume.
func (b *Budget) Spend(tokens int64, cost float64) {
	b.charge(CallUsage{Input: tokens, Cost: cost, Priced: true})
}

// SpendUnpriced counts a call of model spent before this meter started whose cost is
// unknown (tare's table has no price for it): a cost cap then counts as spent.
func (b *Budget) SpendUnpriced(model string) {
	b.charge(CallUsage{Model: model})
}

func (b *Budget) charge(c CallUsage) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.tokens += c.Tokens()
	b.cost += c.Cost
	if !c.Priced && b.unpriced == "" {
		b.unpriced = c.Model
		if b.unpriced == "" {
			b.unpriced = "a model the answer did not name"
		}
	}
	b.mu.Unlock()
}

// Meter is a loopback HTTP relay to one model endpoint that counts every call's tokens and
// refuses calls once a budget is spent. Close stops it.
type Meter struct {
	budgets []*Budget
	price   PriceFunc
	ln      net.Listener
	srv     *http.Server
	proxy   *httputil.ReverseProxy
	// hosts are the Host headers a provider meter relays (nil: any, to tare's model
	// server); transport carries its requests (nil: plain HTTP).
	hosts     map[string]bool
	transport http.RoundTripper

	mu    sync.Mutex
	calls []CallUsage
	over  string
	// off turns defences off, only in the mutation test (TestMeterMutations).
	off defences
}

// defences name the meter's cap defences, so the mutation test can take each away in turn and
// see its check fail: holding a call's worst case while it is in flight, letting only what is
// known to be free through unmetered, and refusing unclean paths.
type defences struct {
	noHold, noFreeList, noCleanPath bool
}

// NewMeter starts a meter on a free loopback port relaying to upstream ("host:port"),
// pricing calls with price (nil: unpriced) and charging each budget (nil ones are skipped).
func NewMeter(upstream string, price PriceFunc, budgets ...*Budget) (*Meter, error) {
	target, err := url.Parse("http://" + upstream)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("meter: upstream %q: want host:port", upstream)
	}
	return startMeter(func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}, nil, nil, price, budgets)
}

// NewProviderMeter starts a meter on a free loopback port relaying to real providers over
// HTTPS through transport, which must verify each host's certificate. A request goes to the
// host its Host header names, and only when that is one of hosts ("host:port", the room's
// intercepted model hosts); any other is answered 421 and never leaves the machine.
func NewProviderMeter(hosts []string, transport http.RoundTripper, price PriceFunc, budgets ...*Budget) (*Meter, error) {
	if transport == nil {
		return nil, fmt.Errorf("meter: a provider meter needs its verifying transport")
	}
	known := map[string]bool{}
	for _, h := range hosts {
		known[strings.ToLower(h)] = true
	}
	return startMeter(func(r *httputil.ProxyRequest) {
		// serve let only known hosts this far.
		r.SetURL(&url.URL{Scheme: "https", Host: strings.TrimSuffix(hostPort(r.In.Host), ":443")})
	}, known, transport, price, budgets)
}

// hostPort is a Host header as "host:port" in lower case, 443 when it names no port.
func hostPort(host string) string {
	host = strings.ToLower(host)
	if _, _, err := net.SplitHostPort(host); err != nil {
		host += ":443"
	}
	return host
}

// startMeter serves a meter whose rewrite points a request at its upstream; hosts, when
// set, are the only Host headers it relays.
func startMeter(rewrite func(*httputil.ProxyRequest), hosts map[string]bool, transport http.RoundTripper, price PriceFunc, budgets []*Budget) (*Meter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("meter: listen on loopback: %w", err)
	}
	m := &Meter{price: price, ln: ln, hosts: hosts, transport: transport}
	for _, b := range budgets {
		if b != nil {
			m.budgets = append(m.budgets, b)
		}
	}
	m.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			rewrite(r)
			// The meter must read the answer: the client's own encodings (br, zstd) would hide
			// its usage. Without the header Go's transport asks for gzip and unpacks it, so
			// the client gets the answer plain, as any client reads.
			r.Out.Header.Del("Accept-Encoding")
		},
		Transport:      transport,
		FlushInterval:  -1, // streamed answers reach the agent as they come
		ModifyResponse: m.meterResponse,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

// Simulated says whether the meter relays to tare's model server (NewMeter), whose answers
// are simulated and cost nothing, rather than to a real provider (NewProviderMeter).
func (m *Meter) Simulated() bool { return m.hosts == nil }

// Addr is the meter's loopback address ("127.0.0.1:PORT"), to give the room's relay.
func (m *Meter) Addr() string { return m.ln.Addr().String() }

// Close stops the meter and cuts its connections.
func (m *Meter) Close() error {
	if t, ok := m.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return m.srv.Close()
}

// Calls returns every metered call so far, in the order they ended.
func (m *Meter) Calls() []CallUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]CallUsage(nil), m.calls...)
}

// OverBudget is why the meter refused a call ("" when it refused none).
func (m *Meter) OverBudget() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.over
}

type callKey struct{}

// modelCall names the dialect of a model call's path, or "" for anything else (model lists,
// token counts), which passes unmetered.
func modelCall(p string) api {
	p = strings.TrimRight(p, "/")
	switch {
	case strings.HasSuffix(p, "/messages"):
		return apiAnthropic
	case strings.HasSuffix(p, "/responses"), strings.HasSuffix(p, "/responses/compact"):
		// compact: Codex's remote compaction of a long session is a paid model call.
		return apiResponses
	case strings.HasSuffix(p, "/chat/completions"):
		return apiChat
	}
	if _, action, ok := geminiAction(p); ok && (action == "generateContent" || action == "streamGenerateContent") {
		return apiGemini
	}
	if isCodeAssistCall(p) {
		return apiCodeAssist
	}
	return ""
}

func (m *Meter) serve(w http.ResponseWriter, r *http.Request) {
	if m.hosts != nil && !m.hosts[hostPort(r.Host)] {
		http.Error(w, "tare: "+r.Host+" is not a host this room's relay reads", http.StatusMisdirectedRequest)
		return
	}
	if r.Header.Get("Upgrade") != "" {
		// A WebSocket's frames would carry model calls past the meter unread (Codex tries
		// its Responses WebSocket first): refused, so the client falls back to HTTPS.
		http.Error(w, "tare: this relay meters model calls over HTTP only; use HTTPS requests", http.StatusUpgradeRequired)
		return
	}
	if len(m.budgets) > 0 && !m.off.noCleanPath && !cleanPath(r.URL.Path) {
		// A provider that resolves dot segments or doubled slashes would serve another path
		// than the one the meter judged (/api/oauth/../../v1/images/generations).
		writeJSON(w, http.StatusBadRequest, errorBody(apiAnthropic, "invalid_request_error", "tare: "+r.URL.Path+" has dot segments or doubled slashes, which tare's relay does not judge under a cap (--max-cost/--max-tokens); fix: send the path as the provider names it"))
		return
	}
	a := modelCall(r.URL.Path)
	if a == "" {
		if why := m.unmeteredRefusal(r); why != "" {
			writeJSON(w, http.StatusBadRequest, errorBody(apiAnthropic, "invalid_request_error", "tare: "+why))
			return
		}
		m.proxy.ServeHTTP(w, r)
		return
	}
	call := &CallUsage{API: string(a)}
	var req callRequest
	if body, err := io.ReadAll(io.LimitReader(r.Body, maxBody)); err == nil {
		// The body goes on as it came, whole (a body past maxBody is read only in part); a
		// copy is read (gunzipped if need be) for the model and the call's bounds.
		r.Body = forwardBody(body, r.Body)
		dup := r.Clone(r.Context())
		dup.Body = io.NopCloser(bytes.NewReader(body))
		if plain, err := readBody(dup); err == nil && len(body) < maxBody && len(plain) < maxBody {
			req.size = int64(len(plain))
			_ = json.Unmarshal(plain, &req)
		}
	}
	call.Model = req.Model
	if a == apiGemini {
		call.Model, _, _ = geminiAction(strings.TrimRight(r.URL.Path, "/"))
	}
	f := &flight{call: call}
	defer f.end(nil) // an error before the answer: what the call held is let go
	if len(m.budgets) > 0 {
		var why string
		if f.worst, why = m.worstCase(call.Model, req); why != "" {
			m.refuse(w, a, call, why)
			return
		}
		for _, b := range m.budgets {
			why := ""
			if call.Model != "" && b.MaxCost > 0 && !m.priced(call.Model) {
				// Refused before it is spent: a call of a model without a price would cost an
				// unknown amount against the cap.
				why = b.noPrice(call.Model)
			}
			if why == "" && m.off.noHold {
				why = b.spent()
				if why == "" {
					continue
				}
			}
			if why == "" {
				why = b.hold(f.worst)
			}
			if why != "" {
				f.end(nil)
				m.refuse(w, a, call, why)
				return
			}
			f.held = append(f.held, b)
		}
	}
	m.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, f)))
}

// callRequest is what the meter reads of a model call's request: its model and the bound on
// its answer, in each dialect's field (Messages and Chat max_tokens, Chat
// max_completion_tokens, Responses max_output_tokens, Gemini's generationConfig, Code
// Assist's inside its request), and its size.
type callRequest struct {
	Model               string `json:"model"`
	MaxTokens           int64  `json:"max_tokens"`
	MaxCompletionTokens int64  `json:"max_completion_tokens"`
	MaxOutputTokens     int64  `json:"max_output_tokens"`
	// Background asks OpenAI to answer later: the answer, and its usage, come on a poll
	// (GET /v1/responses/ID) the meter does not count.
	Background       bool `json:"background"`
	GenerationConfig struct {
		MaxOutputTokens int64 `json:"maxOutputTokens"`
	} `json:"generationConfig"`
	Request struct {
		GenerationConfig struct {
			MaxOutputTokens int64 `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	} `json:"request"`
	// size is the plain body's length in bytes, 0 when the meter could not read it whole.
	size int64
}

// noOutputBound is the answer's worst case when the request sets no bound: the most any
// model of tare's providers writes in one answer (128k: GPT-5's and Claude Opus 4.6's limit;
// Gemini 2.5's is 64k).
const noOutputBound = 128_000

// worstCase is the most a call may use: every byte of its request a token of input (a token
// is at least one byte of what the request carries; JSON's quotes and keys make the bound
// loose), at the dearest of input, cache write and cache read, in the long-context tier its
// size falls in; and its answer's bound as output. why is set when it cannot be bounded: a
// body the meter could not read whole, or, under a cost cap, no model to price it by.
func (m *Meter) worstCase(model string, req callRequest) (w CallUsage, why string) {
	if req.Background {
		return w, "a background response is answered later, on a path tare's relay does not count, so it is refused under a cap (fix: drop \"background\" from the request, or drop --max-cost/--max-tokens)"
	}
	if req.size == 0 {
		return w, "the call's request could not be read whole (over 32 MiB, or compressed in an encoding tare does not read), so its size cannot be bounded under a cap (fix: turn request compression off in the agent's config, or drop --max-cost/--max-tokens)"
	}
	out := max(req.MaxTokens, req.MaxCompletionTokens, req.MaxOutputTokens, req.GenerationConfig.MaxOutputTokens, req.Request.GenerationConfig.MaxOutputTokens)
	if out <= 0 {
		out = noOutputBound
	}
	w = CallUsage{Model: model, Input: req.size, Output: out}
	if m.price == nil || model == "" {
		for _, b := range m.budgets {
			if b.MaxCost > 0 {
				return w, "the call names no model its cost could be priced by, so the cost cap cannot bound it (fix: cap with --max-tokens)"
			}
		}
		return w, ""
	}
	for _, c := range [][4]int64{{req.size, out, 0, 0}, {0, out, req.size, 0}, {0, out, 0, req.size}} {
		if cost, ok := m.price(model, c[0], c[1], c[2], c[3]); ok {
			w.Cost = max(w.Cost, cost)
		}
	}
	return w, ""
}

// flight is a model call on its way: the worst case it holds on each budget until it ends.
type flight struct {
	call  *CallUsage
	worst CallUsage
	held  []*Budget
	once  sync.Once
}

// end settles the call on every budget it holds: its worst case let go, and what it used
// (c, nil when no answer came) charged.
func (f *flight) end(c *CallUsage) {
	f.once.Do(func() {
		for _, b := range f.held {
			b.settle(f.worst, c)
		}
	})
}

// cleanPath says whether p (a trailing slash aside) is its own clean form.
func cleanPath(p string) bool {
	p = strings.TrimRight(p, "/")
	return p == "" || path.Clean(p) == p
}

// forwardBody is the body the meter sends upstream: head, the part it read, then the rest of
// the incoming body if head did not reach its end. A body that ended within head is never
// read again. Go's transport reads a body once more after its declared length, and may do so
// late, after the upstream has answered and the server has closed the incoming body (it does
// when the proxy writes the answer's header); that read of the closed body fails, the
// transport closes its connection to the upstream, and the agent's answer is cut mid-stream
// (under load: codex's "error decoding response body", claude's "Connection closed
// mid-response", a tail left out as dropped). io.MultiReader never rereads a part that ended.
func forwardBody(head []byte, rest io.Reader) io.ReadCloser {
	if len(head) < maxBody {
		return io.NopCloser(bytes.NewReader(head)) // rest ended within maxBody
	}
	return io.NopCloser(io.MultiReader(bytes.NewReader(head), rest))
}

// codeAssistSetup are Code Assist's methods besides its model calls, all free: Gemini CLI
// sets its user up with them and reports after each answer.
var codeAssistSetup = map[string]bool{"countTokens": true, "loadCodeAssist": true, "onboardUser": true,
	"listExperiments": true, "retrieveUserQuota": true, "fetchAdminControls": true,
	"getCodeAssistGlobalUserSetting": true, "setCodeAssistGlobalUserSetting": true, "recordCodeAssistMetrics": true}

// claudeAccountPaths begin the paths of Claude Code's account, settings and telemetry service
// on api.anthropic.com (seen in its binary): none is a model call. Other /api/ paths are not
// let through, as Codex's (/api/codex/tasks, .../rate-limit-reset-credits/consume) spend.
var claudeAccountPaths = []string{"/api/hello", "/api/oauth/", "/api/event_logging/", "/api/claude_cli", "/api/claude_code",
	"/api/organization", "/api/users/"}

func claudeAccountPath(p string) bool {
	for _, prefix := range claudeAccountPaths {
		if p == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// freeUnderCap says whether a request that is not a model call is known to cost nothing, so a
// cap lets it through unmetered: reading (model lists, the server's status, a login's
// profile or quota), counting tokens, Code Assist's setup, Claude Code's account, settings
// and telemetry service (api.anthropic.com/api/...; the model API is /v1/...), and Codex's
// analytics and account check. Anything else may be a paid endpoint the meter cannot count
// (images, audio, video, Gemini's :predict, legacy completions, embeddings, batches), and is
// refused under a cap: the list says what is free, never what is paid.
func freeUnderCap(method, p string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	switch {
	case strings.HasSuffix(p, "/messages/count_tokens"), strings.HasSuffix(p, "/responses/input_tokens"):
		return true
	case claudeAccountPath(p):
		return true
	case strings.HasSuffix(p, "/backend-api/codex/analytics-events/events"), strings.HasSuffix(p, "/backend-api/codex/accounts/check"):
		return true
	}
	if _, action, ok := geminiAction(p); ok {
		return action == "countTokens"
	}
	if m, ok := codeAssistMethod(p); ok {
		return codeAssistSetup[m]
	}
	return false
}

// unmeteredRefusal says why a request the meter does not count as a model call must not go
// on, or "": under a cap, only what is known to be free goes on unmetered (freeUnderCap), so
// no paid endpoint spends past the cap unseen. What is free a CLI may need to set up, or to
// say that its next model call was refused.
func (m *Meter) unmeteredRefusal(r *http.Request) string {
	if len(m.budgets) == 0 {
		return ""
	}
	p := strings.TrimRight(r.URL.Path, "/")
	if freeUnderCap(r.Method, p) || m.off.noFreeList {
		return ""
	}
	return r.Method + " " + p + " is not a model call tare's relay meters nor a request it knows to be free, so it is refused under a cap (--max-cost/--max-tokens); fix: drop the cap to use it"
}

// refuse answers a call over budget in its dialect, with a status the CLIs do not retry.
func (m *Meter) refuse(w http.ResponseWriter, a api, call *CallUsage, why string) {
	msg := "tare: over budget: " + why
	if !strings.Contains(why, "fix:") {
		msg += "; raise --max-cost or --max-tokens to let the agent go on"
	}
	call.Status, call.OverBudget = http.StatusBadRequest, true
	m.mu.Lock()
	m.calls = append(m.calls, *call)
	if m.over == "" {
		m.over = why
	}
	m.mu.Unlock()
	writeJSON(w, http.StatusBadRequest, errorBody(a, "invalid_request_error", msg))
}

// meterResponse wraps a model call's body so that its usage is read as the agent reads it.
func (m *Meter) meterResponse(resp *http.Response) error {
	f, _ := resp.Request.Context().Value(callKey{}).(*flight)
	if f == nil {
		return nil
	}
	call := f.call
	call.Status = resp.StatusCode
	resp.Body = &usageReader{rc: resp.Body, m: m, call: call, flight: f,
		// Google's streams are asked for with ?alt=sse: read as events whatever type they say.
		sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || resp.Request.URL.Query().Get("alt") == "sse"}
	return nil
}

// usageReader passes a response body through, keeping it (bounded) to read the usage from
// when it ends.
type usageReader struct {
	rc     io.ReadCloser
	m      *Meter
	call   *CallUsage
	flight *flight
	sse    bool
	buf    bytes.Buffer
	once   sync.Once
}

func (u *usageReader) Read(p []byte) (int, error) {
	n, err := u.rc.Read(p)
	if keep := maxBody - u.buf.Len(); keep < n {
		// Passed on whole, read only in part: the call's usage is marked incomplete.
		u.call.Incomplete = true
		u.buf.Write(p[:max(keep, 0)])
	} else {
		u.buf.Write(p[:n])
	}
	if err != nil {
		u.done()
	}
	return n, err
}

func (u *usageReader) Close() error {
	u.done()
	return u.rc.Close()
}

func (u *usageReader) done() {
	u.once.Do(func() {
		readUsage(u.call, u.buf.Bytes(), u.sse)
		u.m.add(*u.call, u.flight)
	})
}

// priced says whether the meter's table prices model.
func (m *Meter) priced(model string) bool {
	if m.price == nil {
		return false
	}
	_, ok := m.price(model, 0, 0, 0, 0)
	return ok
}

// add records a call that ended, priced on its own tokens, and settles it on the budgets it
// held.
func (m *Meter) add(c CallUsage, f *flight) {
	if m.price != nil && c.Model != "" {
		c.Cost, c.Priced = m.price(c.Model, c.Input, c.Output, c.CacheRead, c.CacheWrite)
	}
	f.end(&c)
	if m.off.noHold {
		for _, b := range m.budgets {
			b.charge(c)
		}
	}
	m.mu.Lock()
	m.calls = append(m.calls, c)
	m.mu.Unlock()
}

// readUsage fills call from a response: each JSON object of the body (one, an array of
// Gemini chunks, or one per server-sent event) may carry usage; a field's largest value wins,
// since streams repeat the running count (Anthropic's message_delta, Gemini's chunks).
func readUsage(call *CallUsage, body []byte, sse bool) {
	var objs []map[string]any
	if sse {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 64<<10), maxBody)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var o map[string]any
			if json.Unmarshal([]byte(strings.TrimSpace(line)), &o) == nil {
				objs = append(objs, o)
			}
		}
	} else {
		var o map[string]any
		var arr []map[string]any
		if json.Unmarshal(body, &o) == nil {
			objs = append(objs, o)
		} else if json.Unmarshal(body, &arr) == nil {
			objs = arr
		}
	}
	var t CallUsage
	for _, o := range objs {
		if call.Model == "" {
			call.Model = modelIn(o)
		}
		for _, u := range usagesIn(o) {
			merge(&t, usageFrom(u))
		}
	}
	call.Input, call.Output, call.CacheRead, call.CacheWrite = t.Input, t.Output, t.CacheRead, t.CacheWrite
}

// modelIn is the model a response object names: at its top (Chat, a whole Messages answer),
// in its message (Anthropic's message_start) or response (Responses' events).
func modelIn(o map[string]any) string {
	if m, ok := o["model"].(string); ok {
		return m
	}
	for _, k := range []string{"message", "response"} {
		if inner, ok := o[k].(map[string]any); ok {
			if m, ok := inner["model"].(string); ok {
				return m
			}
		}
	}
	return ""
}

// usagesIn finds the usage objects of one response object in any dialect.
func usagesIn(o map[string]any) []map[string]any {
	var out []map[string]any
	for _, k := range []string{"usage", "usageMetadata"} {
		if u, ok := o[k].(map[string]any); ok {
			out = append(out, u)
		}
	}
	for _, k := range []string{"message", "response"} { // Anthropic's message_start, Responses' events
		if inner, ok := o[k].(map[string]any); ok {
			if u, ok := inner["usage"].(map[string]any); ok {
				out = append(out, u)
			}
			// Code Assist wraps each Gemini answer: {"response": {..., "usageMetadata"}}.
			if u, ok := inner["usageMetadata"].(map[string]any); ok {
				out = append(out, u)
			}
		}
	}
	return out
}

func num(m map[string]any, keys ...string) int64 {
	for i, k := range keys {
		v, ok := m[k]
		if !ok {
			return 0
		}
		if i < len(keys)-1 {
			if m, ok = v.(map[string]any); !ok {
				return 0
			}
			continue
		}
		f, _ := v.(float64)
		return int64(f)
	}
	return 0
}

// usageFrom reads one usage object into Anthropic's split: input beside the cache.
func usageFrom(u map[string]any) CallUsage {
	switch {
	case u["promptTokenCount"] != nil || u["candidatesTokenCount"] != nil: // Gemini
		cached := num(u, "cachedContentTokenCount")
		return CallUsage{Input: num(u, "promptTokenCount") - cached, CacheRead: cached,
			Output: num(u, "candidatesTokenCount") + num(u, "thoughtsTokenCount")}
	case u["prompt_tokens"] != nil: // Chat Completions
		cached := num(u, "prompt_tokens_details", "cached_tokens")
		return CallUsage{Input: num(u, "prompt_tokens") - cached, CacheRead: cached, Output: num(u, "completion_tokens")}
	case u["input_tokens_details"] != nil || u["output_tokens_details"] != nil: // Responses
		cached := num(u, "input_tokens_details", "cached_tokens")
		return CallUsage{Input: num(u, "input_tokens") - cached, CacheRead: cached, Output: num(u, "output_tokens")}
	}
	return CallUsage{Input: num(u, "input_tokens"), Output: num(u, "output_tokens"), // Anthropic
		CacheRead: num(u, "cache_read_input_tokens"), CacheWrite: num(u, "cache_creation_input_tokens")}
}

func merge(t *CallUsage, u CallUsage) {
	t.Input, t.Output = max(t.Input, u.Input), max(t.Output, u.Output)
	t.CacheRead, t.CacheWrite = max(t.CacheRead, u.CacheRead), max(t.CacheWrite, u.CacheWrite)
}
