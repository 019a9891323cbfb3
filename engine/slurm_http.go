package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"tare/capsule"
	"tare/engine/journal"
	"tare/engine/run"
)

// Where the nodes share no filesystem with tare ([cluster] transport = "http"), the
// exchange goes over HTTP instead: tare serves each start capsule's objects and each job's
// job.json, and takes back the worker's journal, logs, end capsule and result.json, which it
// writes into the same exchange folder (on its own disk now) that the shared transport uses,
// so following, collecting and re-attaching are the same code. Both ends check the hashes:
// the worker imports the start capsule into a node-local store, tare imports the end capsule
// into the run's, each with capsule.Import, which refuses any object that does not hash to
// its name. Every request carries a per-run random token (Authorization: Bearer), which
// reaches the job through sbatch --export-file on a pipe: it is never written to a file, a
// job script or a command line.

// TransportHTTP is [cluster] transport's value for nodes without the shared folder.
const TransportHTTP = "http"

// tokenEnv carries the run's token into the job's environment.
const tokenEnv = "TARE_TOKEN"

// httpFile, in the run's folder below the shared directory, keeps the token and the address
// (mode 0600), so a resumed tare listens where the jobs it re-attaches to upload.
const httpFile = "http.json"

type exchangeServer struct {
	token string
	url   string
	srv   *http.Server
	root  string
	// maxUpload, when set, caps an upload below maxUpload (tests).
	maxUpload int64
}

// The names a request may use: an attempt's exchange folder ("a-0.1"), a capsule root, and
// the files a worker puts back.
var (
	exchangeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}\.[0-9]+$`)
	rootHash     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	objectFile   = regexp.MustCompile(`^(blobs|trees)/[0-9a-f]{2}/[0-9a-f]{62}$|^capsules/[0-9]{4}-[A-Za-z0-9_.-]{1,200}\.json$`)
	putFiles     = map[string]bool{"result.json": true, "stdout.jsonl": true, "stderr.log": true, CheckLogFile: true, "worker/" + journal.JournalFile: true}
)

// serveExchange starts the run's exchange server on [cluster] callback_addr (loopback when
// unset), on the address and with the token a previous tare of the run used when it can.
func serveExchange(root, host string) (*exchangeServer, error) {
	if host == "" {
		host = "127.0.0.1"
	}
	var rec struct {
		Token string `json:"token"`
		Addr  string `json:"addr"`
	}
	if data, err := os.ReadFile(filepath.Join(root, httpFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	var ln net.Listener
	if rec.Addr != "" {
		// Where the jobs of the run's earlier tare upload; taken by now, a new port.
		ln, _ = net.Listen("tcp", rec.Addr)
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			return nil, fmt.Errorf("[cluster] callback_addr %s: serving the exchange to the nodes: %v; fix: give an address of this machine the nodes reach", host, err)
		}
	}
	if len(rec.Token) != 64 {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			ln.Close()
			return nil, err
		}
		rec.Token = hex.EncodeToString(b)
	}
	rec.Addr = ln.Addr().String()
	data, _ := json.Marshal(rec)
	if err := os.MkdirAll(root, 0o755); err != nil {
		ln.Close()
		return nil, err
	}
	if err := capsule.WriteFileAtomic(filepath.Join(root, httpFile), data, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	s := &exchangeServer{token: rec.Token, url: "http://" + rec.Addr, root: root}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *exchangeServer) close() { _ = s.srv.Close() }

// maxUpload is the most one file a worker puts back may hold: a node that sends more (a
// runaway log, a hostile worker) is refused, not given tare's disk.
const maxUpload = 2 << 30

// receive streams an upload into dest through a temporary file beside it, never whole in
// memory: refused past the cap, and, for a store object (named by the sha256 of its bytes),
// refused when the bytes that came do not hash to its name. Only a whole, checked file is
// renamed into place; a refused one leaves nothing.
func (s *exchangeServer) receive(w http.ResponseWriter, r *http.Request, dest, rel string) (int, error) {
	limit := s.maxUpload
	if limit <= 0 {
		limit = maxUpload
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return http.StatusInternalServerError, err
	}
	f, err := capsule.CreateAtomic(dest, 0o644)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	defer f.Abort()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Errorf("%s is over %d bytes: refused", rel, limit)
	case err != nil:
		return http.StatusBadRequest, err
	}
	if obj := strings.TrimPrefix(rel, "end/"); obj != rel && !strings.HasPrefix(obj, "capsules/") {
		name := strings.ReplaceAll(obj[strings.Index(obj, "/")+1:], "/", "")
		if got := hex.EncodeToString(h.Sum(nil)); got != name {
			return http.StatusBadRequest, fmt.Errorf("%s: its %d bytes hash to %s, not its name: refused", rel, n, got)
		}
	}
	if err := f.Commit(); err != nil {
		return http.StatusInternalServerError, err
	}
	return 0, nil
}

// outStore is where a start capsule of root is kept alone, to be served: its objects and
// nothing else.
func outStore(root, capsuleRoot string) string { return filepath.Join(root, "out", capsuleRoot) }

// ServeHTTP answers GET /job/NAME, GET /store/ROOT/index, GET /store/ROOT/REL and
// PUT /put/NAME/FILE; anything without the run's token is refused.
func (s *exchangeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
		http.Error(w, "tare: this run's token is required", http.StatusUnauthorized)
		return
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	bad := func() { http.Error(w, "tare: no such exchange path", http.StatusNotFound) }
	switch {
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "job" && exchangeName.MatchString(parts[1]):
		http.ServeFile(w, r, filepath.Join(s.root, "tails", parts[1], "job.json"))
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "store" && rootHash.MatchString(parts[1]) && parts[2] == "index":
		names, err := storeObjects(outStore(s.root, parts[1]))
		if err != nil {
			bad()
			return
		}
		_, _ = io.WriteString(w, strings.Join(names, "\n"))
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "store" && rootHash.MatchString(parts[1]) && objectFile.MatchString(parts[2]):
		http.ServeFile(w, r, filepath.Join(outStore(s.root, parts[1]), parts[2]))
	case r.Method == http.MethodPut && len(parts) == 3 && parts[0] == "put" && exchangeName.MatchString(parts[1]) &&
		(putFiles[parts[2]] || strings.HasPrefix(parts[2], "end/") && objectFile.MatchString(strings.TrimPrefix(parts[2], "end/"))):
		x := filepath.Join(s.root, "tails", parts[1])
		if _, err := os.Stat(filepath.Join(x, "job.json")); err != nil {
			bad() // only an attempt tare submitted takes files
			return
		}
		code, err := s.receive(w, r, filepath.Join(x, filepath.FromSlash(parts[2])), parts[2])
		if err != nil {
			http.Error(w, "tare: "+err.Error(), code)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		bad()
	}
}

// storeObjects lists a store's objects and records, as paths below it.
func storeObjects(dir string) ([]string, error) {
	var names []string
	for _, sub := range []string{"blobs", "trees", "capsules"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				rel, _ := filepath.Rel(dir, p)
				if objectFile.MatchString(filepath.ToSlash(rel)) {
					names = append(names, filepath.ToSlash(rel))
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}

// exchangeClient is the worker's end: the run's address and token.
type exchangeClient struct {
	url, token, name string
	http             *http.Client
}

func (c *exchangeClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var last error
	// Retried for a while: tare may be restarting (tare resume re-attaches to this job).
	for wait, deadline := 200*time.Millisecond, time.Now().Add(2*time.Minute); ; wait = min(wait*2, 5*time.Second) {
		req, err := http.NewRequestWithContext(ctx, method, c.url+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.http.Do(req)
		if err == nil {
			data, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case resp.StatusCode/100 == 2:
				return data, nil
			case resp.StatusCode/100 == 4:
				return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, run.Clip(string(data), 120))
			default:
				err = fmt.Errorf("%s %s: %s", method, path, resp.Status)
			}
		}
		last = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("tare at %s: %v", c.url, last)
		}
		time.Sleep(wait)
	}
}

// fetchCapsule brings the start capsule root from tare into a node-local store, through a
// staging folder that store imports (every object checked against its hash).
func (c *exchangeClient) fetchCapsule(ctx context.Context, root, local string) (*capsule.Store, capsule.Capsule, error) {
	if !rootHash.MatchString(root) {
		return nil, capsule.Capsule{}, fmt.Errorf("capsule root %q is not a hash", root)
	}
	index, err := c.do(ctx, http.MethodGet, "/store/"+root+"/index", nil)
	if err != nil {
		return nil, capsule.Capsule{}, err
	}
	stage := filepath.Join(local, "in")
	for _, rel := range strings.Fields(string(index)) {
		if !objectFile.MatchString(rel) {
			return nil, capsule.Capsule{}, fmt.Errorf("tare's index names %q, not a store object", rel)
		}
		data, err := c.do(ctx, http.MethodGet, "/store/"+root+"/"+rel, nil)
		if err != nil {
			return nil, capsule.Capsule{}, err
		}
		dest := filepath.Join(stage, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return nil, capsule.Capsule{}, err
		}
		if err := os.WriteFile(dest, data, 0o644); err != nil {
			return nil, capsule.Capsule{}, err
		}
	}
	store, err := capsule.Open(filepath.Join(local, "store"))
	if err != nil {
		return nil, capsule.Capsule{}, err
	}
	caps, err := store.Import(ctx, stage)
	if err != nil {
		return nil, capsule.Capsule{}, err
	}
	_ = os.RemoveAll(stage)
	for _, cp := range caps {
		if cp.Root == root {
			return store, cp, nil
		}
	}
	return nil, capsule.Capsule{}, fmt.Errorf("tare sent no capsule of root %s", root)
}

// put sends the file dir/rel back as the exchange folder's as, if it exists.
func (c *exchangeClient) put(ctx context.Context, dir, rel, as string) error {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPut, "/put/"+c.name+"/"+as, data)
	return err
}

// WorkerHTTP runs one tail as Worker does, with its job, its start capsule and its results
// going over HTTP to the tare at url (the token in $TARE_TOKEN) instead of a shared folder:
// the worker's journal goes back as it grows, the logs, the end capsule's new objects and,
// last, result.json when the tail ends.
func WorkerHTTP(ctx context.Context, url, name string) error {
	token := os.Getenv(tokenEnv)
	if token == "" || !exchangeName.MatchString(name) {
		return fmt.Errorf("tare worker --url: no $%s or a bad --exchange %q; fix: run it as tare's job script does", tokenEnv, name)
	}
	c := &exchangeClient{url: strings.TrimRight(url, "/"), token: token, name: name, http: &http.Client{Timeout: 10 * time.Minute}}
	local, err := os.MkdirTemp("", "tare-worker-http-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(local)
	data, err := c.do(ctx, http.MethodGet, "/job/"+name, nil)
	if err != nil {
		return err
	}
	var job slurmJob
	if err := json.Unmarshal(data, &job); err != nil {
		return fmt.Errorf("the job from %s: %v", c.url, err)
	}
	x := filepath.Join(local, "x")
	if err := os.MkdirAll(x, 0o755); err != nil {
		return err
	}
	store, start, err := c.fetchCapsule(ctx, job.Spec.Start.Root, local)
	if err != nil {
		// Said back as the tail's outcome: the node could not get its workspace.
		res := slurmResult{Node: os.Getenv("SLURMD_NODENAME"), Result: journal.TailResult{ID: job.Spec.ID, Status: journal.StatusNoVerdict, Reason: journal.ReasonNotStarted,
			AgentExit: "not started: the start capsule could not be fetched from tare: " + err.Error(), Check: "not checked"}}
		data, _ := json.Marshal(res)
		_, perr := c.do(ctx, http.MethodPut, "/put/"+name+"/result.json", data)
		return errors.Join(err, perr)
	}
	job.Spec.Start, job.Store, job.Stage = start, store.Dir(), filepath.Join(x, "end")
	if data, err = json.Marshal(job); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(x, "job.json"), data, 0o600); err != nil {
		return err
	}
	// The journal goes back as it grows, so the app shows the tail's tool calls live.
	journal := "worker/" + journal.JournalFile
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var sent, sentOut int64 = -1, -1
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			if st, err := os.Stat(filepath.Join(x, journal)); err == nil && st.Size() != sent {
				if c.put(ctx, x, journal, journal) == nil {
					sent = st.Size()
				}
			}
			// A writer's stdout too (a tail's reaches tare through its journal).
			if st, err := os.Stat(filepath.Join(x, "stdout.jsonl")); err == nil && job.Writer != nil && st.Size() != sentOut {
				if c.put(ctx, x, "stdout.jsonl", "stdout.jsonl") == nil {
					sentOut = st.Size()
				}
			}
		}
	}()
	werr := Worker(ctx, filepath.Join(x, "job.json"))
	close(stop)
	<-done
	if werr != nil {
		return werr
	}
	if job.Writer != nil {
		// A writer's job ended by Slurm still sends back its partial draft, in the grace
		// before SIGKILL.
		ctx = context.WithoutCancel(ctx)
	}
	for _, rel := range []string{journal, "stdout.jsonl", "stderr.log", CheckLogFile} {
		if err := c.put(ctx, x, rel, rel); err != nil {
			return err
		}
	}
	ends, err := storeObjects(job.Stage)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, rel := range ends {
		if err := c.put(ctx, job.Stage, rel, "end/"+rel); err != nil {
			return err
		}
	}
	// Last: tare takes a result.json as the tail's end.
	return c.put(ctx, x, "result.json", "result.json")
}
