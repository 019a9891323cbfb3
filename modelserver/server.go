package modelserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mode says how the server answers model requests.
type Mode int

const (
	// ModeProbe records every request and answers each with ProbeText.
	ModeProbe Mode = iota
	// ModeScript replays a Script.
	ModeScript
)

// String names the mode as the CLI and logs show it.
func (m Mode) String() string {
	if m == ModeScript {
		return "script"
	}
	return "probe"
}

// DefaultWorkspace is the working directory assumed when a request names
// none: the workspace path inside tare's rooms.
const DefaultWorkspace = "/work"

// maxBody bounds a request body; agent requests are well below 1 MiB.
const maxBody = 32 << 20

// Options configure a Server.
type Options struct {
	// Script selects script mode; nil means probe mode.
	Script *Script
	// Log receives one JSON object per request (a Request) when non-nil.
	Log io.Writer
	// LogPath, when set, is a file the server appends the same JSON lines
	// to (created 0600; closed by Close).
	LogPath string
	// Seed fixes the branch draws; 0 uses the script's seed.
	Seed int64
	// Workspace is the working directory for write actions when the
	// request names none; default DefaultWorkspace.
	Workspace string
}

// Server is tare's model server: a loopback HTTP server speaking the
// Anthropic Messages, OpenAI Responses, OpenAI Chat Completions and Gemini APIs.
// It is safe for concurrent use.
type Server struct {
	script    *Script
	seed      int64
	workspace string

	logMu   sync.Mutex
	logs    []io.Writer
	logFile *os.File
	logErr  error
	reqs    []Request

	stateMu   sync.Mutex
	turnState map[turnKey]*turnState
	rng       *rand.Rand

	mu       sync.Mutex // guards the fields below
	ln       net.Listener
	srv      *http.Server
	ctx      context.Context
	cancel   context.CancelFunc
	closed   bool
	active   atomic.Int32 // handlers running, for tests and Close
	handlers sync.WaitGroup
	serving  sync.WaitGroup
}

// New prepares a server; Start makes it listen.
func New(opts Options) (*Server, error) {
	s := &Server{
		script:    opts.Script,
		seed:      opts.Seed,
		workspace: opts.Workspace,
		turnState: map[turnKey]*turnState{},
	}
	if s.workspace == "" {
		s.workspace = DefaultWorkspace
	}
	if s.seed == 0 && s.script != nil {
		s.seed = s.script.Seed
	}
	s.rng = rand.New(rand.NewPCG(uint64(s.seed), 0x74617265))
	if opts.Log != nil {
		s.logs = append(s.logs, opts.Log)
	}
	if opts.LogPath != "" {
		f, err := os.OpenFile(opts.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("model server log %s: %w; choose a writable log path", opts.LogPath, err)
		}
		s.logFile = f
		s.logs = append(s.logs, f)
	}
	return s, nil
}

// Mode reports whether the server probes or replays a script.
func (s *Server) Mode() Mode {
	if s.script != nil {
		return ModeScript
	}
	return ModeProbe
}

// Start listens on addr (loopback only; "127.0.0.1:0" picks a free port)
// and serves in the background until Close.
func (s *Server) Start(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("model server: listen address %q: %v; use 127.0.0.1:PORT", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("model server: listen address %q is not loopback; use 127.0.0.1:PORT", addr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("model server: Start after Close; create a new server with New")
	}
	if s.ln != nil {
		return fmt.Errorf("model server: already listening on %s", s.ln.Addr())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("model server: listen %s: %w; pick a free port or use 127.0.0.1:0", addr, err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ln = ln
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if sc, ok := c.(streamConn); ok {
				return context.WithValue(ctx, streamKey{}, sc.stream)
			}
			return ctx
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		_ = s.srv.Serve(ln)
	}()
	return nil
}

// Stream opens another loopback address on the running server whose requests draw their
// branches from a stream of their own, name: tails that resume one recorded session (and so
// send the same session id) still sample like separate calls to a real model. A stream's
// draws are fixed by (seed, name, turn), not by the session id its CLI made up, so a run
// replays from its seed. The address lives until Close.
func (s *Server) Stream(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil || s.closed {
		return "", errors.New("model server: Stream needs a started server")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("model server: listen for stream %q: %w", name, err)
	}
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		_ = s.srv.Serve(streamListener{Listener: ln, stream: name})
	}()
	return ln.Addr().String(), nil
}

// streamKey is the request context key of a request's draw stream.
type streamKey struct{}

// streamListener tags each connection it accepts with its stream.
type streamListener struct {
	net.Listener
	stream string
}

func (l streamListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return streamConn{Conn: c, stream: l.stream}, nil
}

type streamConn struct {
	net.Conn
	stream string
}

// Addr is the listening address ("127.0.0.1:41234"), "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL is the base URL to give agents ("http://127.0.0.1:41234"); OpenAI
// clients usually want URL()+"/v1".
func (s *Server) URL() string {
	if a := s.Addr(); a != "" {
		return "http://" + a
	}
	return ""
}

// Close stops listening, cuts open connections, waits for every handler
// and closes the log file. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv, cancel := s.srv, s.cancel
	s.mu.Unlock()

	var err error
	if srv != nil {
		cancel()
		err = srv.Close()
		s.serving.Wait()
	}
	s.handlers.Wait()

	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.logFile != nil {
		if cerr := s.logFile.Close(); cerr != nil && s.logErr == nil {
			s.logErr = cerr
		}
		s.logFile = nil
	}
	if err == nil && s.logErr != nil {
		err = fmt.Errorf("model server log: %w", s.logErr)
	}
	return err
}

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Request {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) record(r Request) {
	r.Script = scriptBase(s.script)
	line, err := json.Marshal(r)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.reqs = append(s.reqs, r)
	if err != nil {
		if s.logErr == nil {
			s.logErr = err
		}
		return
	}
	line = append(line, '\n')
	for _, w := range s.logs {
		if _, err := w.Write(line); err != nil && s.logErr == nil {
			s.logErr = err
		}
	}
}

// serveHTTP counts handlers so Close can wait for them, records the request
// and routes it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "model server closed", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.active.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	defer s.active.Add(-1)

	rec := Request{Time: time.Now().UTC(), Method: r.Method, Path: r.URL.RequestURI(), Headers: headerMap(r.Header)}
	rw := &statusWriter{ResponseWriter: w}
	// The record is written even when a drop aborts the handler.
	defer func() {
		rec.Status = rw.status
		s.record(rec)
	}()
	s.route(rw, r, &rec)
}

func (s *Server) route(w *statusWriter, r *http.Request, rec *Request) {
	p := strings.TrimRight(r.URL.Path, "/")
	var body []byte
	if r.Method == http.MethodPost || r.ContentLength > 0 {
		var err error
		body, err = readBody(r)
		rec.Body = rawBody(body)
		if err != nil {
			rec.Outcome, rec.Note = "bad_request", err.Error()
			writeJSON(w, http.StatusBadRequest, errorBody(apiFor(p), "invalid_request_error", err.Error()))
			return
		}
	}
	switch {
	case p == "":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.notAllowed(w, r, rec, "GET or HEAD")
			return
		}
		rec.Outcome = "status"
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, "tare model server (%s mode)\n", s.Mode())
		}
	case strings.HasSuffix(p, "/messages/count_tokens"):
		if r.Method != http.MethodPost {
			s.notAllowed(w, r, rec, "POST")
			return
		}
		rec.API, rec.Outcome = string(apiAnthropic), "count_tokens"
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": estimateTokens(len(body))})
	case strings.HasSuffix(p, "/messages"):
		s.model(w, r, rec, apiAnthropic, body)
	case strings.HasSuffix(p, "/responses"):
		s.model(w, r, rec, apiResponses, body)
	case strings.HasSuffix(p, "/chat/completions"):
		s.model(w, r, rec, apiChat, body)
	case isGemini(p):
		model, action, _ := geminiAction(p)
		s.gemini(w, r, rec, model, action, body)
	case isCodeAssist(p):
		method, _ := codeAssistMethod(p)
		s.codeAssist(w, r, rec, method, body)
	case p == "/tokeninfo":
		s.tokenInfo(w, r, rec)
	case strings.HasSuffix(p, "/models"):
		if r.Method != http.MethodGet {
			s.notAllowed(w, r, rec, "GET")
			return
		}
		rec.Outcome = "models"
		writeJSON(w, http.StatusOK, modelList())
	default:
		rec.Outcome = "not_found"
		writeJSON(w, http.StatusNotFound, errorBody(apiFor(p), "not_found_error", "tare model server: no endpoint "+r.Method+" "+r.URL.Path))
	}
}

func (s *Server) notAllowed(w *statusWriter, r *http.Request, rec *Request, allow string) {
	rec.Outcome = "not_found"
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, errorBody(apiFor(r.URL.Path), "invalid_request_error",
		fmt.Sprintf("tare model server: %s %s: use %s", r.Method, r.URL.Path, allow)))
}

// model answers a Messages, Responses or Chat Completions request.
func (s *Server) model(w *statusWriter, r *http.Request, rec *Request, a api, body []byte) {
	rec.API = string(a)
	if r.Method != http.MethodPost {
		s.notAllowed(w, r, rec, "POST")
		return
	}
	c, err := parseConvo(a, body, r.Header)
	if err != nil {
		rec.Outcome, rec.Note = "bad_request", err.Error()
		writeJSON(w, http.StatusBadRequest, errorBody(a, "invalid_request_error", "tare model server: "+err.Error()))
		return
	}
	s.answer(w, r, rec, c)
}

// answer decides and writes the answer to a parsed model request in its dialect.
func (s *Server) answer(w *statusWriter, r *http.Request, rec *Request, c *convo) {
	a := c.api
	c.draws, _ = r.Context().Value(streamKey{}).(string)
	rec.Stream = c.draws
	rec.Key = c.key
	d := s.decide(c)
	rec.Turn, rec.Branch, rec.Attempt, rec.Outcome, rec.Note = d.turn, d.branch, d.attempt, d.outcome, d.note
	if d.delay > 0 {
		t := time.NewTimer(d.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			rec.Note = "client gone or server closed during delay"
			// Send nothing: returning would make net/http answer 200
			// with an empty body.
			panic(http.ErrAbortHandler)
		}
	}
	if d.fail == ErrQuota || d.fail == ErrOverloaded || d.fail == ErrLogin {
		writeFailure(w, a, d.fail)
		return
	}
	out := estimateTokens(len(d.text) + argChars(d.calls))
	m := &reply{api: a, model: c.model, answer: d.answer, in: c.inputTokens, out: out, drop: d.fail == ErrDrop}
	if m.model == "" {
		m.model = "tare-model"
	}
	rec.InputTokens, rec.OutputTokens = m.in, m.out
	if c.stream {
		m.stream(w)
	} else {
		m.json(w)
	}
}

func argChars(calls []toolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.name) + len(c.args) + len(c.input)
	}
	return n
}

// readBody reads a request body, gunzipping it when the client compressed it.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return b, fmt.Errorf("reading the body: %v", err)
	}
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
		return b, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return b, fmt.Errorf("gzip body: %v", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxBody))
		if err != nil {
			return b, fmt.Errorf("gzip body: %v", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("request body has Content-Encoding %q, which tare's model server cannot read; turn request compression off in the agent's config", enc)
	}
}

// statusWriter remembers the status for the record and passes Flush on.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// isGemini says whether p is a Gemini API method path (".../models/NAME:ACTION").
func isGemini(p string) bool {
	_, _, ok := geminiAction(p)
	return ok
}

// apiFor guesses the dialect of a path for error bodies.
func apiFor(p string) api {
	switch {
	case isGemini(p):
		return apiGemini
	case isCodeAssist(p):
		return apiCodeAssist
	case strings.Contains(p, "/messages"):
		return apiAnthropic
	case strings.Contains(p, "/responses"):
		return apiResponses
	default:
		return apiChat
	}
}

// modelList answers GET /v1/models in a shape both OpenAI and Anthropic
// clients (and Codex's model catalog) accept.
func modelList() map[string]any {
	m := map[string]any{
		"id": "tare-model", "object": "model", "type": "model", "display_name": "tare model server",
		"created": 0, "created_at": "2026-01-01T00:00:00Z", "owned_by": "tare",
	}
	return map[string]any{
		"object": "list", "data": []any{m}, "has_more": false,
		"first_id": "tare-model", "last_id": "tare-model", "models": []any{},
	}
}
