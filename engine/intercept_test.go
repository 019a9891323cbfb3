package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/engine/journal"
	"tare/engine/probe"
	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
)

// providerHosts are the real providers' model hosts the tests stand tare's model server in for.
var providerHosts = []string{"api.anthropic.com:443", "api.openai.com:443", "chatgpt.com:443",
	"cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443"}

// standIn serves srv over TLS with a certificate for providerHosts from a test CA, and points
// the interception's upstream at it: trusted says whether the meter's roots hold that CA
// (false: another CA's, so the stand-in is an impostor the meter must refuse).
func standIn(t *testing.T, srv *modelserver.Server, trusted bool) {
	t.Helper()
	ca, err := newRoomCA(providerHosts)
	if err != nil {
		t.Fatal(err)
	}
	certs := map[string]tls.Certificate{}
	for _, h := range providerHosts {
		leaf, err := ca.leaf(h)
		if err != nil {
			t.Fatal(err)
		}
		certs[hostName(h)] = leaf
	}
	target, _ := url.Parse("http://" + srv.Addr())
	ts := httptest.NewUnstartedServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }, FlushInterval: -1})
	ts.TLS = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		c := certs[h.ServerName]
		return &c, nil
	}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	roots := x509.NewCertPool()
	if trusted {
		roots.AddCert(ca.cert)
	} else {
		other, err := newRoomCA(providerHosts)
		if err != nil {
			t.Fatal(err)
		}
		roots.AddCert(other.cert)
	}
	addrs := map[string]string{}
	for _, h := range providerHosts {
		addrs[h] = ts.Listener.Addr().String()
	}
	testUpstream.addrs, testUpstream.roots, testUpstream.trust = addrs, roots, ca.pem
	t.Cleanup(func() { testUpstream.addrs, testUpstream.roots, testUpstream.trust = nil, nil, nil })
}

// loginHome is a HOME with a dummy login of the agent, for a room on the real provider.
func loginHome(t *testing.T, name string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	files := map[string][2]string{
		"claude": {".claude/.credentials.json", `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-dummy","refreshToken":"sk-ant-ort01-dummy","expiresAt":4102444800000,"scopes":["user:inference"],"subscriptionType":"max"}}`},
		"codex":  {".codex/auth.json", `{"OPENAI_API_KEY":"sk-test-dummy"}`},
		"pi":     {".pi/agent/auth.json", `{"anthropic":{"type":"api_key","key":"sk-ant-api03-dummy"}}`},
		// An access token far from expiry: Gemini CLI checks it (tokeninfo) but needs no refresh.
		"gemini": {".gemini/oauth_creds.json", `{"access_token":"ya29.dummy","refresh_token":"1//dummy","scope":"https://www.googleapis.com/auth/cloud-platform","token_type":"Bearer","expiry_date":4102444800000}`},
	}
	f := files[name]
	p := filepath.Join(home, f[0])
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(f[1]), 0o600); err != nil {
		t.Fatal(err)
	}
}

const interceptScript = `
[[turn]]
text = "Making the file."
shell = "echo metered > m.txt"

[[turn]]
text = "Done."
`

// TestInterceptMetersRealProviderCalls: claude and codex on their real provider (a dummy
// login; tare's model server over TLS stands in for api.anthropic.com and api.openai.com
// behind the room's proxy). The proxy reads their model calls with the room's own CA, which
// the real CLIs trust, and the relay's count equals the model server's own; the host log
// says the model host was read.
func TestInterceptMetersRealProviderCalls(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte(interceptScript), "intercept.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"claude", "codex", "pi"} {
		t.Run(name, func(t *testing.T) {
			srv := scriptServer(t, script)
			standIn(t, srv, true)
			loginHome(t, name)
			env, start := newTestRun(t, name, "", "grep -q metered m.txt")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			side := journal.Side{Key: "a", Agent: name}
			if name == "codex" {
				// The model whose requests carry the plain tool set the script's shell maps to.
				side.Args = []string{"-m", "gpt-5.1-codex"}
			}
			spec := tailSpec{ID: "real", Side: side, How: "fresh", Prompt: "Make the file.", Start: start}
			if err := runTail(ctx, env, spec); err != nil {
				t.Fatal(err)
			}
			tl := env.run.Snapshot().Tails["real"]
			stderr, _ := os.ReadFile(filepath.Join(env.run.Dir(), "tails", "real", "stderr.log"))
			if tl == nil || tl.Status != journal.StatusPassed {
				t.Fatalf("tail %+v: want passed\nstderr: %s", tl, stderr)
			}
			var in, out int64
			calls := 0
			for _, r := range srv.Requests() {
				if r.API != "" {
					calls++
					in += int64(r.InputTokens)
					out += int64(r.OutputTokens)
				}
			}
			m := tl.Metered
			if m == nil || m.Calls != calls || calls < 2 || m.Input+m.CacheRead+m.CacheWrite != in || m.Output != out {
				t.Errorf("relay metered %+v; the model server answered %d calls, %d in, %d out", m, calls, in, out)
			}
			read := false
			for _, r := range readHosts(t, filepath.Join(env.run.Dir(), "tails", "real", HostsFile)) {
				read = read || (r.Read && r.Allowed && (r.Host == "api.anthropic.com:443" || r.Host == "api.openai.com:443"))
			}
			if !read {
				t.Errorf("host log: no model host marked read")
			}
		})
	}
}

// TestCostCapOnARealProvider: a cost cap below one call's price on claude's real provider:
// the first call goes through (nothing was spent yet), the next is refused by the relay in
// Anthropic's error shape and never reaches the provider, and the tail ends over budget.
func TestCostCapOnARealProvider(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte(interceptScript), "intercept.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptServer(t, script)
	standIn(t, srv, true)
	loginHome(t, "claude")
	env, start := newTestRun(t, "claude", "", "grep -q metered m.txt")
	env.recipe.Caps = &run.Caps{TailCost: 1e-9}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := tailSpec{ID: "capped", Side: journal.Side{Key: "a", Agent: "claude"}, How: "fresh", Prompt: "Make the file.", Start: start}
	if err := runTail(ctx, env, spec); err != nil {
		t.Fatal(err)
	}
	tl := env.run.Snapshot().Tails["capped"]
	if tl == nil || tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonOverBudget {
		t.Fatalf("tail %+v: want no verdict, over budget", tl)
	}
	calls := 0
	for _, r := range srv.Requests() {
		if r.API != "" {
			calls++
		}
	}
	if m := tl.Metered; m == nil || m.Calls != 1 || calls != 1 || m.Refused < 1 || m.Cost <= 0 {
		t.Errorf("metered %+v, provider saw %d model calls: want one priced call through, the next refused at the relay", m, calls)
	}
}

// TestInterceptVerifiesTheProvider: the meter re-encrypts towards the provider and verifies
// its certificate: an upstream whose certificate the roots do not vouch for gets no request
// (the agent gets a 502), while the same stand-in with trusted roots answers.
func TestInterceptVerifiesTheProvider(t *testing.T) {
	srv := scriptServer(t, nil)
	call := func() (int, string) {
		m, err := modelserver.NewProviderMeter(providerHosts, providerTransport(), CostOf)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		req, _ := http.NewRequest("POST", "http://"+m.Addr()+"/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
		req.Host = "api.anthropic.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	standIn(t, srv, false)
	if code, body := call(); code != http.StatusBadGateway || len(srv.Requests()) != 0 {
		t.Errorf("impostor upstream: %d %s, %d requests reached it; want 502 and none", code, body, len(srv.Requests()))
	}
	standIn(t, srv, true)
	if code, body := call(); code != http.StatusOK || len(srv.Requests()) != 1 {
		t.Errorf("trusted upstream: %d %s; want the call answered", code, body)
	}
}

// TestInterceptReadsOnlyModelHosts: a claude room with a login allows the model host and
// the token-refresh host; only the model host is read, the CA given to the room is
// constrained to it (a leaf for any other name fails to verify), and its key is not in the
// room.
func TestInterceptReadsOnlyModelHosts(t *testing.T) {
	needRooms(t)
	a, inst, cfg := mustFind(t, "claude")
	loginHome(t, "claude")
	box, setup, err := room.Build(room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), Login: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	env := &tailEnv{recipe: &run.Recipe{}}
	m, err := env.interceptRoom(&box, &setup, false)
	if err != nil || m == nil {
		t.Fatalf("interceptRoom: %v, %v", m, err)
	}
	defer m.Close()
	rl := box.Relays[0]
	if len(rl.Intercept) != 1 || rl.Intercept[0].Host != "api.anthropic.com:443" || len(rl.Allow) != 2 {
		t.Fatalf("allow %v, intercepted %d: want api.anthropic.com:443 read, platform.claude.com:443 tunnelled", rl.Allow, len(rl.Intercept))
	}
	var caPEM []byte
	for _, f := range box.Files {
		if strings.Contains(string(f.Data), "PRIVATE KEY") {
			t.Errorf("room file %s holds a private key", f.Path)
		}
		if f.Path == roomCAFile {
			caPEM = f.Data
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no CA at %s in the room", roomCAFile)
	}
	leaf, _ := x509.ParseCertificate(rl.Intercept[0].Cert.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "api.anthropic.com"}); err != nil {
		t.Errorf("the room's leaf does not verify against the room's CA: %v", err)
	}
	if box.Env["SSL_CERT_FILE"] != roomBundleFile || box.Env["NODE_EXTRA_CA_CERTS"] != roomCAFile || !setup.EnvNames["SSL_CERT_FILE"] {
		t.Errorf("room env %v: want the CA named, and declared as tare's", box.Env)
	}
	if !strings.Contains(strings.Join(setup.Declared, "\n"), "tls: tare's relay reads the model calls to api.anthropic.com:443") {
		t.Errorf("declared %v: want the interception said", setup.Declared)
	}
	// The CA is constrained to the names it reads: even signed by it, a leaf for the
	// token-refresh host does not verify.
	ca, err := newRoomCA([]string{"api.anthropic.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.leaf("platform.claude.com:443")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	stray, _ := x509.ParseCertificate(other.Certificate[0])
	if _, err := stray.Verify(x509.VerifyOptions{Roots: pool, DNSName: "platform.claude.com"}); err == nil {
		t.Errorf("a leaf for platform.claude.com verifies against a CA made for api.anthropic.com")
	}
}

// TestInterceptedRoomReadsClean: the probe's detectors, run on the inspection of a metered
// claude room and a metered Gemini room (Code Assist read) on their real providers, find
// nothing: the CA's variables are tare's own, declared, and its files are in the room's
// fresh HOME, not the host's.
func TestInterceptedRoomReadsClean(t *testing.T) {
	needRooms(t)
	for _, name := range []string{"claude", "gemini"} {
		t.Run(name, func(t *testing.T) {
			a, inst, cfg := mustFind(t, name)
			loginHome(t, name)
			project := t.TempDir()
			box, setup, err := room.Build(room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: project, Login: true}, "")
			if err != nil {
				t.Fatal(err)
			}
			m, err := (&tailEnv{recipe: &run.Recipe{}}).interceptRoom(&box, &setup, false)
			if err != nil || m == nil {
				t.Fatalf("interceptRoom: %v, %v: want the model host read", m, err)
			}
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			env, leaks, err := probe.InspectRoom(ctx, box, setup, project)
			if err != nil {
				t.Fatal(err)
			}
			if env["SSL_CERT_FILE"] != roomBundleFile {
				t.Fatalf("room env %v: want SSL_CERT_FILE set", env)
			}
			if len(leaks) != 0 {
				t.Errorf("a metered room read as leaking: %+v", leaks)
			}
		})
	}
}
