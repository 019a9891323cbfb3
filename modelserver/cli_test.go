package modelserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The real proof: Claude Code, Codex and pi, run on the host with a fresh
// HOME and cwd each, against one server replaying testdata/two-turns.toml.
// All runs share the server at once, as rooms do.

const cliPrompt = "Create made.txt and notes/hello.txt."

// needCLIs skips t under -short: it runs the real agent CLIs against the server. Without
// -short a missing CLI still fails the test.
func needCLIs(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real agent CLIs; skipped under -short")
	}
}

// agentBin finds an agent CLI in ../agents/NAME/node_modules/.bin. Every test that runs a
// CLI asks it for one first, so it is where such a test skips under -short.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	needCLIs(t)
	p, err := filepath.Abs(filepath.Join("..", "agents", name, "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("agent CLI %s not found at %s: run npm ci in agents/ (cd %s && npm ci)", name, p, filepath.Dir(filepath.Dir(filepath.Dir(p))))
	}
	return p
}

// cliRun is one agent run: its argv, env and the files placed in its HOME.
type cliRun struct {
	name  string
	bin   string
	args  []string
	env   []string
	files map[string]string // path relative to HOME -> content
	// usage is where the agent's output reports token usage: "claude",
	// "codex" or "pi".
	usage string
}

func TestRealCLIs(t *testing.T) {
	claude, codex, pi := agentBin(t, "claude"), agentBin(t, "codex"), agentBin(t, "pi")
	sc, err := LoadScript(filepath.Join("testdata", "two-turns.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var logBuf safeBuffer
	srv := startServer(t, Options{Script: sc, Log: &logBuf, Seed: 1})
	url := srv.URL()

	runs := []cliRun{
		claudeRun(claude, url, "-p", cliPrompt),
		codexRun(codex, url, cliPrompt),
		piRun(pi, url, "tare-anthropic", "-p", cliPrompt),
		piRun(pi, url, "tare-chat", "-p", cliPrompt),
		piRun(pi, url, "tare-responses", "-p", cliPrompt),
	}
	t.Run("agents", func(t *testing.T) {
		for _, r := range runs {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				runCLI(t, r)
			})
		}
	})
	if t.Failed() {
		t.Logf("server log:\n%s", logBuf.String())
		return
	}
	// Every run took both scripted turns: claude and pi-anthropic speak
	// Messages, codex and pi-responses Responses, pi-chat Chat Completions.
	served := map[string]int{}
	for _, r := range srv.Requests() {
		switch r.Outcome {
		case "unmapped", "bad_request", "not_found":
			t.Errorf("request %s %s answered %q: %s", r.Method, r.Path, r.Outcome, r.Note)
		case "turn":
			served[fmt.Sprintf("%s turn %d", r.API, r.Turn)]++
		}
	}
	want := map[string]int{"anthropic turn 1": 2, "anthropic turn 2": 2, "responses turn 1": 2,
		"responses turn 2": 2, "chat turn 1": 1, "chat turn 2": 1}
	for k, n := range want {
		if served[k] < n {
			t.Errorf("server served %s %d times, want at least %d (all: %v)", k, served[k], n, served)
		}
	}
}

// reportedUsage reads the token usage an agent printed, which the server
// estimated; cost accounting in tare starts from these numbers.
func reportedUsage(kind, stdout string) (in, out float64) {
	num := func(v any) float64 { f, _ := v.(float64); return f }
	for _, line := range strings.Split(stdout, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch {
		case kind == "claude" && ev["type"] == "result":
			in, out = num(get(ev, "usage", "input_tokens")), num(get(ev, "usage", "output_tokens"))
		case kind == "codex" && ev["type"] == "turn.completed":
			in, out = num(get(ev, "usage", "input_tokens")), num(get(ev, "usage", "output_tokens"))
		case kind == "pi" && ev["type"] == "message_end" && get(ev, "message", "role") == "assistant":
			in += num(get(ev, "message", "usage", "input"))
			out += num(get(ev, "message", "usage", "output"))
		}
	}
	return in, out
}

var baseEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "LANG=C.UTF-8"}

// claudeRun is Claude Code headless as REPORT.md runs it: env -i style,
// IS_SANDBOX=1 for root, non-essential traffic off. args start with -p.
func claudeRun(bin, url string, args ...string) cliRun {
	return cliRun{name: "claude", bin: bin,
		args: append(args, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"),
		env: append([]string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-tare-test", "IS_SANDBOX=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
			"DISABLE_ERROR_REPORTING=1"}, baseEnv...),
		usage: "claude"}
}

// codexRun is codex exec with a quiet config.toml pointing at the server.
func codexRun(bin, url string, args ...string) cliRun {
	return cliRun{name: "codex", bin: bin,
		args:  append([]string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}, args...),
		env:   append([]string{"TARE_TEST_KEY=sk-tare-test"}, baseEnv...),
		files: map[string]string{".codex/config.toml": codexConfig(url + "/v1")},
		usage: "codex"}
}

// piRun is pi in JSON mode with models.json offering the server under
// three providers: tare-anthropic, tare-chat and tare-responses.
func piRun(bin, url, provider string, args ...string) cliRun {
	model := map[string]any{"id": "tare-model", "reasoning": false, "contextWindow": 200000, "maxTokens": 8000,
		"cost": map[string]any{"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
	models := map[string]any{"providers": map[string]any{
		"tare-anthropic": map[string]any{"baseUrl": url, "api": "anthropic-messages", "apiKey": "sk-ant-tare-test",
			"models": []any{model}},
		"tare-chat": map[string]any{"baseUrl": url + "/v1", "api": "openai-completions", "apiKey": "sk-tare-test",
			"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
			"models": []any{model}},
		"tare-responses": map[string]any{"baseUrl": url + "/v1", "api": "openai-responses", "apiKey": "sk-tare-test",
			"models": []any{model}},
	}}
	b, _ := json.MarshalIndent(models, "", "  ")
	return cliRun{name: "pi-" + provider, bin: bin,
		args:  append(args, "--mode", "json", "--provider", provider, "--model", "tare-model"),
		env:   append([]string{"PI_OFFLINE=1", "PI_TELEMETRY=0", "PI_SKIP_VERSION_CHECK=1"}, baseEnv...),
		files: map[string]string{".pi/agent/models.json": string(b)},
		usage: "pi"}
}

func codexConfig(baseURL string) string {
	return `model = "gpt-5.1-codex"
model_provider = "tare"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.tare]
name = "tare model server"
base_url = "` + baseURL + `"
wire_api = "responses"
env_key = "TARE_TEST_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[analytics]
enabled = false

[otel]
metrics_exporter = "none"

[features]
plugins = false
remote_plugin = false
apps = false
in_app_updates = false
plugin_sharing = false
`
}

// agentHome is a fresh HOME and cwd for one agent.
type agentHome struct {
	home, cwd string
	env       []string
}

func newAgentHome(t *testing.T, r cliRun) agentHome {
	dir := t.TempDir()
	home, cwd, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "ws"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, cwd, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range r.files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append([]string{"HOME=" + home, "TMPDIR=" + tmp, "CLAUDE_CODE_TMPDIR=" + tmp,
		"CODEX_HOME=" + filepath.Join(home, ".codex")}, r.env...)
	return agentHome{home: home, cwd: cwd, env: env}
}

// run runs the agent to completion in its cwd, failing the test unless it
// exits 0, and returns its stdout.
func (a agentHome) run(t *testing.T, name, bin string, args ...string) string {
	t.Helper()
	stdout, stderr, code := a.exec(t, name, bin, args...)
	if code != 0 {
		t.Logf("%s stdout:\n%s", name, tail(stdout, 6000))
		t.Logf("%s stderr:\n%s", name, tail(stderr, 3000))
		t.Fatalf("%s exited with %d (want 0)", name, code)
	}
	return stdout
}

// exec runs the agent to completion in its cwd and returns its output and
// exit code.
func (a agentHome) exec(t *testing.T, name, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 75*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = a.cwd, a.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Own process group: the timeout and the cleanup kill the agent's
	// children (node launchers, shells) too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	err := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	t.Logf("%s ran %v", name, time.Since(start).Round(time.Millisecond))
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		code = ee.ExitCode()
	default:
		t.Logf("%s stdout:\n%s\nstderr:\n%s", name, tail(out.String(), 6000), tail(errOut.String(), 3000))
		t.Fatalf("%s: %v (timeout: %v)", name, err, ctx.Err())
	}
	return out.String(), errOut.String(), code
}

// runCLI runs one agent in a fresh HOME and cwd and checks that both
// scripted tool calls ran and the run ended cleanly.
func runCLI(t *testing.T, r cliRun) {
	a := newAgentHome(t, r)
	stdout := a.run(t, r.name, r.bin, r.args...)
	dump := func() { t.Logf("%s stdout:\n%s", r.name, tail(stdout, 6000)) }
	checks := map[string]string{"made.txt": "tare-ok\n", "notes/hello.txt": "hello from tare\n"}
	for rel, want := range checks {
		got, err := os.ReadFile(filepath.Join(a.cwd, rel))
		if err != nil {
			dump()
			t.Fatalf("%s did not create %s in its cwd: %v", r.name, rel, err)
		}
		if string(got) != want {
			t.Errorf("%s: %s = %q, want %q", r.name, rel, got, want)
		}
	}
	if !strings.Contains(stdout, "All done.") {
		dump()
		t.Errorf("%s output lacks the final scripted text %q", r.name, "All done.")
	}
	// Two requests of several KB each: input is in the thousands of tokens.
	if in, out := reportedUsage(r.usage, stdout); in < 500 || out < 2 {
		dump()
		t.Errorf("%s reported usage input=%v output=%v; want the server's estimates (input >= 500, output >= 2)", r.name, in, out)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestRealCLIResume proves that the turn comes from the conversation
// history: a resumed session continues the script where it stopped.
func TestRealCLIResume(t *testing.T) {
	claude, codex, pi := agentBin(t, "claude"), agentBin(t, "codex"), agentBin(t, "pi")
	sc := mustScript(t, `
[[turn]]
shell = "echo one > one.txt"
[[turn]]
text = "First part done."
[[turn]]
shell = "echo two > two.txt"
[[turn]]
text = "Resumed and done."
`)
	srv := startServer(t, Options{Script: sc})
	url := srv.URL()
	const sessionID = "5f0c7a52-2d43-4c1e-9a51-3c7f1b0e9d11"
	cases := []struct {
		name          string
		first, resume func(a agentHome, firstOut string) cliRun
	}{
		{"claude",
			func(agentHome, string) cliRun {
				return claudeRun(claude, url, "-p", "Start.", "--session-id", sessionID)
			},
			func(agentHome, string) cliRun {
				return claudeRun(claude, url, "-p", "Continue.", "--resume", sessionID)
			}},
		{"codex",
			func(agentHome, string) cliRun { return codexRun(codex, url, "Start.") },
			func(_ agentHome, out string) cliRun {
				return codexRun(codex, url, "resume", codexThread(t, out), "Continue.")
			}},
		{"pi",
			func(a agentHome, _ string) cliRun {
				return piRun(pi, url, "tare-anthropic", "--session", filepath.Join(a.home, "s.jsonl"), "-p", "Start.")
			},
			func(a agentHome, _ string) cliRun {
				return piRun(pi, url, "tare-anthropic", "--session", filepath.Join(a.home, "s.jsonl"), "-p", "Continue.")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := newAgentHome(t, c.first(agentHome{}, ""))
			r := c.first(a, "")
			out := a.run(t, c.name+" first", r.bin, r.args...)
			if _, err := os.Stat(filepath.Join(a.cwd, "one.txt")); err != nil || !strings.Contains(out, "First part done.") {
				t.Fatalf("first run: one.txt err=%v, output has text: %v\n%s", err, strings.Contains(out, "First part done."), tail(out, 4000))
			}
			if _, err := os.Stat(filepath.Join(a.cwd, "two.txt")); err == nil {
				t.Fatal("first run already ran turn 3")
			}
			r = c.resume(a, out)
			out = a.run(t, c.name+" resume", r.bin, r.args...)
			if _, err := os.Stat(filepath.Join(a.cwd, "two.txt")); err != nil || !strings.Contains(out, "Resumed and done.") {
				t.Fatalf("resume: two.txt err=%v, output has text: %v\n%s", err, strings.Contains(out, "Resumed and done."), tail(out, 4000))
			}
		})
	}
}

// codexThread finds the thread id in codex exec --json output.
func codexThread(t *testing.T, out string) string {
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "thread.started" && ev.ThreadID != "" {
			return ev.ThreadID
		}
	}
	t.Fatalf("no thread.started event in codex output:\n%s", tail(out, 3000))
	return ""
}

// TestRealCLIErrors shows how the real CLIs take the injected provider
// failures: what tare's runs will see.
func TestRealCLIErrors(t *testing.T) {
	claude, codex, pi := agentBin(t, "claude"), agentBin(t, "codex"), agentBin(t, "pi")
	script := func(kind string) *Script {
		return mustScript(t, fmt.Sprintf(`
[[turn]]
text = "Trying."
shell = "echo one > one.txt"
error = %q
error_times = 1
[[turn]]
text = "Finished after the error."
`, kind))
	}
	cases := []struct {
		name, kind string
		run        func(url string) cliRun
		ok         bool   // the agent retries and finishes
		want       string // text in its output
	}{
		// Claude Code retries a 429 and finishes.
		{"claude-quota", "quota", func(u string) cliRun { return claudeRun(claude, u, "-p", "go") }, true, "Finished after the error."},
		// Claude Code retries a 529 overloaded_error and finishes. (A cut
		// stream is not tested: Claude Code retries it or ends in error
		// depending on how much of the stream it had read.)
		{"claude-overloaded", "overloaded", func(u string) cliRun { return claudeRun(claude, u, "-p", "go") }, true, "Finished after the error."},
		// Codex (request_max_retries = 0) stops on insufficient_quota.
		{"codex-quota", "quota", func(u string) cliRun { return codexRun(codex, u, "go") }, false, "Quota exceeded"},
		// pi retries a cut stream, even without a session id.
		{"pi-drop", "drop", func(u string) cliRun { return piRun(pi, u, "tare-anthropic", "-p", "go") }, true, "Finished after the error."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, Options{Script: script(c.kind)})
			r := c.run(srv.URL())
			a := newAgentHome(t, r)
			stdout, stderr, code := a.exec(t, c.name, r.bin, r.args...)
			_, statErr := os.Stat(filepath.Join(a.cwd, "one.txt"))
			if c.ok && (code != 0 || statErr != nil) || !c.ok && statErr == nil {
				t.Errorf("%s: exit %d, one.txt: %v; want the run to %s", c.name, code, statErr, map[bool]string{true: "recover", false: "fail"}[c.ok])
			}
			if !strings.Contains(stdout+stderr, c.want) {
				t.Errorf("%s: output lacks %q:\n%s\n%s", c.name, c.want, tail(stdout, 3000), tail(stderr, 2000))
			}
			var kinds []string
			for _, q := range srv.Requests() {
				if q.API != "" {
					kinds = append(kinds, fmt.Sprintf("%s#%d", q.Outcome, q.Attempt))
				}
			}
			if len(kinds) == 0 || kinds[0] != c.kind+"#1" {
				t.Errorf("%s: server outcomes %v, want the first to be %s#1", c.name, kinds, c.kind)
			}
			t.Logf("%s: exit %d, server outcomes %v", c.name, code, kinds)
		})
	}
}
