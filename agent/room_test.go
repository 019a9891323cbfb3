package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func fileAt(t *testing.T, s Setup, path string) File {
	t.Helper()
	for _, f := range s.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("no file %s in %+v", path, s.Files)
	return File{}
}

func TestRoomModelServer(t *testing.T) {
	url := "http://127.0.0.1:8787"
	// Claude: env points at the server, ~/.claude.json skips every first-run dialog.
	s, err := Claude{}.Room(RoomOptions{BaseURL: url, Model: "m1", Login: true, HostHome: "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"ANTHROPIC_BASE_URL": url, "ANTHROPIC_MODEL": "m1", "ANTHROPIC_API_KEY": tareKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
		"DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_TMPDIR": "/tmp"} {
		if s.Env[k] != v {
			t.Errorf("claude env %s = %q, want %q", k, s.Env[k], v)
		}
	}
	var state struct {
		Onboarded bool `json:"hasCompletedOnboarding"`
		Keys      struct {
			Approved []string `json:"approved"`
		} `json:"customApiKeyResponses"`
		Projects map[string]struct {
			Trust bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	f := fileAt(t, s, "/home/agent/.claude.json")
	if err := json.Unmarshal(f.Data, &state); err != nil || !state.Onboarded || !state.Projects[Work].Trust ||
		len(state.Keys.Approved) != 1 || !strings.HasSuffix(tareKey, state.Keys.Approved[0]) || len(state.Keys.Approved[0]) != 20 {
		t.Errorf("claude state %s: %+v %v", f.Data, state, err)
	}
	if len(s.Files) != 1 || !slices.Contains(s.Declared, "login copy: none") {
		t.Errorf("claude: with tare's model server nothing of the operator's is copied: %+v", s)
	}

	// Codex: a provider "tare" at BaseURL/v1 and the quiet keys.
	s, err = Codex{}.Room(RoomOptions{BaseURL: url + "/"})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Model         string `toml:"model"`
		ModelProvider string `toml:"model_provider"`
		Update        bool   `toml:"check_for_update_on_startup"`
		Providers     map[string]struct {
			BaseURL string `toml:"base_url"`
			WireAPI string `toml:"wire_api"`
			EnvKey  string `toml:"env_key"`
			Retries int    `toml:"request_max_retries"`
		} `toml:"model_providers"`
		Analytics struct {
			Enabled bool `toml:"enabled"`
		} `toml:"analytics"`
		Features map[string]bool `toml:"features"`
	}
	f = fileAt(t, s, "/home/agent/.codex/config.toml")
	if _, err := toml.Decode(string(f.Data), &cfg); err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["tare"]
	if cfg.ModelProvider != "tare" || cfg.Model != codexServerModel || cfg.Update || cfg.Analytics.Enabled || cfg.Features["plugins"] ||
		p.BaseURL != url+"/v1" || p.WireAPI != "responses" || p.EnvKey != tareKeyEnv || s.Env[tareKeyEnv] != tareKey {
		t.Errorf("codex config:\n%s\nenv %v", f.Data, s.Env)
	}

	// pi: models.json provider "tare" made the default in settings.json.
	for api, base := range map[Provider]string{Anthropic: url, OpenAIResponses: url + "/v1", OpenAIChat: url + "/v1"} {
		s, err = NewPi(api).Room(RoomOptions{BaseURL: url})
		if err != nil {
			t.Fatal(err)
		}
		var models struct {
			Providers map[string]struct {
				BaseURL string `json:"baseUrl"`
				API     string `json:"api"`
				APIKey  string `json:"apiKey"`
				Models  []struct {
					ID string `json:"id"`
				} `json:"models"`
			} `json:"providers"`
		}
		var settings map[string]any
		json.Unmarshal(fileAt(t, s, "/home/agent/.pi/agent/models.json").Data, &models)
		json.Unmarshal(fileAt(t, s, "/home/agent/.pi/agent/settings.json").Data, &settings)
		tare := models.Providers["tare"]
		if tare.BaseURL != base || tare.APIKey != tareKeyEnv || len(tare.Models) != 1 || tare.Models[0].ID != DefaultModel ||
			settings["defaultProvider"] != "tare" || settings["defaultModel"] != DefaultModel || s.Env["PI_OFFLINE"] != "1" {
			t.Errorf("pi %s: %+v %v %v", api, tare, settings, s.Env)
		}
	}

	if _, err := (Agy{}).Room(RoomOptions{BaseURL: url}); err == nil || !strings.Contains(err.Error(), "cloudcode-pa.googleapis.com") {
		t.Errorf("agy with tare's model server: %v", err)
	}
}

func TestRoomHooks(t *testing.T) {
	s, err := Claude{}.Room(RoomOptions{BaseURL: "http://127.0.0.1:1", Hooks: []Hook{
		{"PostToolUse", `/opt/tare/tare snap >> /tare-run/log`}, {"Stop", "/bin/true"}}})
	if err != nil {
		t.Fatal(err)
	}
	f := fileAt(t, s, "/home/agent/.claude/settings.json")
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command string
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(f.Data, &settings); err != nil {
		t.Fatal(err)
	}
	post, stop := settings.Hooks["PostToolUse"], settings.Hooks["Stop"]
	if len(post) != 1 || post[0].Matcher != "*" || post[0].Hooks[0].Command != `/opt/tare/tare snap >> /tare-run/log` ||
		len(stop) != 1 || stop[0].Matcher != "" || !strings.Contains(string(f.Data), ">>") {
		t.Errorf("hooks:\n%s", f.Data)
	}
}

// Codex: tare's hooks are [hooks] tables in config.toml, next to the provider, each marked
// trusted in [hooks.state] (without it Codex skips them silently: the engine's
// TestHooksRunAfterEveryToolCall shows they run).
func TestRoomHooksCodex(t *testing.T) {
	cmd := `/opt/tare/tare snap --store /tare-run --work /work`
	s, err := Codex{}.Room(RoomOptions{BaseURL: "http://127.0.0.1:1", Hooks: []Hook{{"PostToolUse", cmd}, {"Stop", "/bin/true"}, {"PostToolUse", "/bin/true"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(s.Declared, "\n"), "3 tare hooks, trusted") {
		t.Errorf("codex declared %q", s.Declared)
	}
	f := fileAt(t, s, "/home/agent/.codex/config.toml")
	type group struct {
		Matcher string `toml:"matcher"`
		Hooks   []struct {
			Type    string `toml:"type"`
			Command string `toml:"command"`
		} `toml:"hooks"`
	}
	var cfg struct {
		ModelProvider string          `toml:"model_provider"`
		Features      map[string]bool `toml:"features"`
		Hooks         struct {
			PostToolUse []group `toml:"PostToolUse"`
			Stop        []group `toml:"Stop"`
			State       map[string]struct {
				TrustedHash string `toml:"trusted_hash"`
			} `toml:"state"`
		} `toml:"hooks"`
	}
	if _, err := toml.Decode(string(f.Data), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, f.Data)
	}
	post, stop, state := cfg.Hooks.PostToolUse, cfg.Hooks.Stop, cfg.Hooks.State
	if cfg.ModelProvider != "tare" || !cfg.Features["hooks"] || len(post) != 2 || post[0].Matcher != "*" || len(post[0].Hooks) != 1 ||
		post[0].Hooks[0].Type != "command" || post[0].Hooks[0].Command != cmd || post[1].Hooks[0].Command != "/bin/true" ||
		len(stop) != 1 || stop[0].Matcher != "" || len(state) != 3 {
		t.Errorf("codex config:\n%s", f.Data)
	}
	for _, key := range []string{"/home/agent/.codex/config.toml:post_tool_use:0:0", "/home/agent/.codex/config.toml:post_tool_use:1:0", "/home/agent/.codex/config.toml:stop:0:0"} {
		if !strings.HasPrefix(state[key].TrustedHash, "sha256:") || len(state[key].TrustedHash) != 71 {
			t.Errorf("codex trust for %s: %q\n%s", key, state[key].TrustedHash, f.Data)
		}
	}
	if _, err := (Codex{}).Room(RoomOptions{BaseURL: "http://127.0.0.1:1", Hooks: []Hook{{"AfterEverything", "x"}}}); err == nil ||
		!strings.Contains(err.Error(), "PostToolUse") {
		t.Errorf("codex unknown hook event: %v", err)
	}
}

// The trust hash is Codex's own: these are hashes Codex 0.171 accepted (its hooks ran), for
// a hook with a matcher and shell redirections (kept as they are, as serde_json keeps them)
// and for one without a matcher.
func TestCodexHookHash(t *testing.T) {
	for _, tt := range []struct {
		hook      Hook
		key, want string
	}{
		{Hook{"PostToolUse", `/bin/sh -c 'cat >> /tmp/hx/run/hooks.jsonl; echo >> /tmp/hx/run/hooks.jsonl'`},
			"post_tool_use:0:0", "sha256:04510fb943eeb65684da3c23215eb92d78c52263578c79850d3fb10c335ae616"},
		{Hook{"Stop", `/bin/sh -c 'echo stop >> /tmp/hx/run/stop.txt'`},
			"stop:0:0", "sha256:ca6d593ecf79fe352cf69c8f56dbd6122ba99e7c44568e4e86a5718d9a1d2338"},
	} {
		hooks, err := codexHooks([]Hook{tt.hook}, "/tmp/x/.codex/config.toml")
		if err != nil {
			t.Fatal(err)
		}
		state := hooks["state"].(map[string]any)
		got, _ := state["/tmp/x/.codex/config.toml:"+tt.key].(map[string]any)
		if got["trusted_hash"] != tt.want {
			t.Errorf("%s: trust %v, want %s", tt.hook.Event, state, tt.want)
		}
	}
	for in, want := range map[string]string{"PostToolUse": "post_tool_use", "SessionStart": "session_start", "Stop": "stop", "UserPromptSubmit": "user_prompt_submit"} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%s) = %s, want %s", in, got, want)
		}
	}
}

// pi: tare's hooks are an extension in ~/.pi/agent/extensions that runs each command on the
// pi event standing for the hook event, awaited, with Claude Code's hook input on stdin.
func TestRoomHooksPi(t *testing.T) {
	cmd := `/bin/sh -c 'cat >> "/tare-run/hooks.jsonl"'`
	s, err := NewPi(OpenAIResponses).Room(RoomOptions{BaseURL: "http://127.0.0.1:1", Hooks: []Hook{{"PostToolUse", cmd}, {"SessionStart", "/bin/true"}}})
	if err != nil {
		t.Fatal(err)
	}
	f := fileAt(t, s, "/home/agent/.pi/agent/extensions/tare-hooks.ts")
	src := string(f.Data)
	for _, want := range []string{
		`"on": "tool_result"`, `"on": "session_start"`, `"event": "PostToolUse"`,
		`"command": "/bin/sh -c 'cat \u003e\u003e \"/tare-run/hooks.jsonl\"'"`, // a JSON string: valid JavaScript
		"await serial(h.command, input)", "input.tool_use_id = event.toolCallId", "export default function (pi)",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("pi extension lacks %s:\n%s", want, src)
		}
	}
	if f.Mode != 0o644 || !strings.Contains(strings.Join(s.Declared, "\n"), "extensions/tare-hooks.ts (2 tare hooks)") {
		t.Errorf("pi hooks: mode %v declared %q", f.Mode, s.Declared)
	}
	fileAt(t, s, "/home/agent/.pi/agent/models.json") // the provider is still there
	if _, err := NewPi(Anthropic).Room(RoomOptions{BaseURL: "http://127.0.0.1:1", Hooks: []Hook{{"PermissionRequest", "x"}}}); err == nil ||
		!strings.Contains(err.Error(), "PostToolUse") {
		t.Errorf("pi unknown hook event: %v", err)
	}
}

func TestHookKind(t *testing.T) {
	want := map[string]string{"claude": HookInAgent, "codex": HookInAgent, "pi": HookInAgent, "gemini": HookInAgent, "agy": HookFromStream}
	for _, a := range All() {
		if got := HookKind(a); got != want[a.Name()] {
			t.Errorf("HookKind(%s) = %q, want %q", a.Name(), got, want[a.Name()])
		}
	}
	if _, err := (Agy{}).Room(RoomOptions{HostHome: t.TempDir(), APIKey: "k", Hooks: []Hook{{"PostToolUse", "x"}}}); err == nil {
		t.Error("agy accepted hooks it has no way to run")
	}
}

// The login copy: only the agent's login file, only for the real provider,
// mode 0600, declared; nothing else of the operator's HOME.
func TestRoomLogin(t *testing.T) {
	host := t.TempDir()
	for rel, text := range map[string]string{
		claudeLogin: `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-a","refreshToken":"sk-ant-ort01-r","expiresAt":1,"scopes":["user:inference"],"subscriptionType":"max"},
			"mcpOAuth":{"linear|abc":{"accessToken":"lin-secret","refreshToken":"lin-refresh","clientSecret":"lin-client"}}}`,
		codexLogin: `{"OPENAI_API_KEY":"sk-proj-other","tokens":{"id_token":"i","access_token":"a","refresh_token":"r","account_id":"acc"},
			"last_refresh":"2026-01-01T00:00:00Z","agent_identity":{"agent_private_key":"pk"},"bedrock_api_key":{"key":"bk"}}`,
		piLogin: `{"anthropic":{"type":"oauth","access":"a","refresh":"r","expires":1},"openai":{"type":"api_key","key":"sk-openai"},
			"github-copilot":{"type":"oauth","refresh":"ghr","access":"gha","expires":1,"enterpriseUrl":"x"}}`,
		agyLogin:            `{"access_token":"ya29.a","refresh_token":"1//r","client_secret":"GOCSPX-other"}`,
		geminiLogin:         `{"access_token":"ya29.g","refresh_token":"1//g","expiry_date":1,"token_type":"Bearer","extra_key":"kx"}`,
		".claude/CLAUDE.md": "personal notes", ".claude.json": `{"mcpServers":{"x":{}}}`, ".codex/config.toml": "model = \"x\"",
	} {
		p := filepath.Join(host, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o600)
	}
	// Each copy holds the agent's own login for the room's provider and nothing else; its
	// declared line names the kept keys.
	logins := map[string]struct {
		rel  string
		keep []string
		out  []string
	}{
		"claude": {claudeLogin, []string{"claudeAiOauth.accessToken", "claudeAiOauth.expiresAt", "claudeAiOauth.refreshToken", "claudeAiOauth.scopes", "claudeAiOauth.subscriptionType"},
			[]string{"mcpOAuth", "lin-secret", "lin-client"}},
		"codex": {codexLogin, []string{"last_refresh", "tokens.access_token", "tokens.account_id", "tokens.id_token", "tokens.refresh_token"},
			[]string{"sk-proj-other", "agent_identity", "pk", "bedrock", "bk"}},
		"pi":     {piLogin, []string{"anthropic.access", "anthropic.expires", "anthropic.refresh", "anthropic.type"}, []string{"sk-openai", "github", "ghr", "gha"}},
		"gemini": {geminiLogin, []string{"access_token", "expiry_date", "refresh_token", "token_type"}, []string{"extra_key", "kx"}},
		"agy":    {agyLogin, []string{"access_token", "refresh_token"}, []string{"client_secret", "GOCSPX"}},
	}
	for _, a := range All() {
		s, err := a.Room(RoomOptions{HostHome: host, Login: true, Proxy: "http://127.0.0.1:3128"})
		if err != nil {
			t.Fatalf("%s: %v", a.Name(), err)
		}
		want := logins[a.Name()]
		f := fileAt(t, s, "/home/agent/"+want.rel)
		var doc map[string]any
		if err := json.Unmarshal(f.Data, &doc); err != nil {
			t.Fatalf("%s: the login copy is not JSON: %v\n%s", a.Name(), err, f.Data)
		}
		line := "login copy: ~/" + want.rel + " (0600), only "
		if got := LoginKeys(doc); strings.Join(got, " ") != strings.Join(want.keep, " ") || f.Mode != 0o600 ||
			!slices.ContainsFunc(s.Declared, func(d string) bool {
				return strings.HasPrefix(d, line) && strings.HasSuffix(d, strings.Join(want.keep, ", "))
			}) {
			t.Errorf("%s: login copy keys %v (want %v), mode %o, declared %q", a.Name(), got, want.keep, f.Mode, s.Declared)
		}
		for _, other := range want.out {
			if strings.Contains(string(f.Data), other) {
				t.Errorf("%s: the login copy carries %q:\n%s", a.Name(), other, f.Data)
			}
		}
		if len(s.Logins) != 1 || s.Logins[0].Path != f.Path || s.Logins[0].Source != filepath.Join(host, want.rel) {
			t.Errorf("%s: the setup's logins %+v", a.Name(), s.Logins)
		}
		for _, g := range s.Files {
			if g.Path == "/home/agent/"+want.rel {
				continue
			}
			if strings.Contains(string(g.Data), "mcpServers") || strings.Contains(string(g.Data), "personal notes") || strings.Contains(string(g.Data), `"x"`) {
				t.Errorf("%s: %s carries the operator's config: %s", a.Name(), g.Path, g.Data)
			}
		}
		if s.Env["HTTPS_PROXY"] != "http://127.0.0.1:3128" || len(s.Allow) == 0 {
			t.Errorf("%s: proxy env %v allow %v", a.Name(), s.Env, s.Allow)
		}
		if _, err := a.Room(RoomOptions{HostHome: t.TempDir(), Login: true}); err == nil {
			t.Errorf("%s: a missing login file was not an error", a.Name())
		}
		if _, err := a.Room(RoomOptions{HostHome: host}); err == nil {
			t.Errorf("%s: the real provider without login or key was not an error", a.Name())
		}
		s, err = a.Room(RoomOptions{APIKey: "sk-key-1"})
		if err != nil || len(s.Files) > 0 && strings.Contains(s.Files[0].Path, "auth") {
			t.Errorf("%s: API key room: %+v %v", a.Name(), s, err)
		}
	}
}

// A login file a room cannot take (not JSON, or without the agent's login for the room's
// provider) is refused in one line naming the file and the fix.
func TestRoomLoginRefused(t *testing.T) {
	for _, c := range []struct {
		a         Agent
		rel, text string
		want      string
	}{
		{Claude{}, claudeLogin, `{"mcpOAuth":{"x":{"accessToken":"t"}}}`, "holds no claudeAiOauth login"},
		{Claude{}, claudeLogin, `{"claudeAiOauth":`, "not a JSON object"},
		{Claude{}, claudeLogin, `[1]`, "not a JSON object"},
		{Pi{}, piLogin, `{"openai":{"type":"api_key","key":"k"}}`, "holds no anthropic login"},
		{Codex{}, codexLogin, `{"OPENAI_API_KEY":null,"agent_identity":{"agent_private_key":"pk"}}`, "holds no API-key login"},
		{Gemini{}, geminiLogin, `{"client_secret":"s"}`, "holds no Google OAuth login"},
	} {
		host := t.TempDir()
		p := filepath.Join(host, c.rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c.text), 0o600)
		_, err := c.a.Room(RoomOptions{HostHome: host, Login: true})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "fix: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s with %s: error %v, want one line naming %s, %q and the fix", c.a.Name(), c.text, err, p, c.want)
		}
	}
}

// With a base home (the probe's planted twin) tare's config merges into the
// planted files, so planted MCP servers survive.
func TestRoomMergesIntoBase(t *testing.T) {
	canary := Canary{Token: "tare-canary-base"}
	for _, a := range []Agent{Claude{}, Codex{}, Pi{}, Gemini{}} {
		base := t.TempDir()
		if err := a.Plant(base, canary); err != nil {
			t.Fatal(err)
		}
		s, err := a.Room(RoomOptions{BaseURL: "http://127.0.0.1:9", Base: base})
		if err != nil {
			t.Fatalf("%s: %v", a.Name(), err)
		}
		for _, f := range s.Files {
			p := filepath.Join(base, strings.TrimPrefix(f.Path, Home))
			if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
				t.Fatal(err)
			}
		}
		var mcp, provider bool
		for _, src := range a.Personal(base, "") {
			if src.Kind == KindMCP && strings.Contains(strings.Join(src.Fingerprints, " "), canary.Token) {
				mcp = true
			}
		}
		for _, f := range s.Files {
			provider = provider || strings.Contains(string(f.Data), "127.0.0.1:9") || strings.Contains(string(f.Data), "hasCompletedOnboarding") ||
				strings.Contains(string(f.Data), `"selectedType": "gemini-api-key"`) // Gemini's base URL goes by env
		}
		if (a.Name() != "pi" && !mcp) || !provider {
			t.Errorf("%s: after merging, planted MCP %v, tare's config %v", a.Name(), mcp, provider)
		}
	}
}

// TestRoomAllowOnlyNarrows: tare's network.allow narrows an agent's hosts and the declared
// line follows; a list leaving out every host the agent needs is one error naming the fix.
func TestRoomAllowOnlyNarrows(t *testing.T) {
	host := t.TempDir()
	p := filepath.Join(host, claudeLogin)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"claudeAiOauth":{"accessToken":"t"}}`), 0o600)
	o := RoomOptions{HostHome: host, Login: true, Proxy: "http://127.0.0.1:3128", AllowOnly: []string{"api.anthropic.com:443", "api.openai.com:443"}}
	s, err := Claude{}.Room(o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Allow, ",") != "api.anthropic.com:443" || !slices.Contains(s.Declared, "model: real provider through proxy http://127.0.0.1:3128 (allowed: api.anthropic.com:443)") {
		t.Errorf("narrowed: allow %v, declared %q", s.Allow, s.Declared)
	}
	o.AllowOnly = []string{"api.openai.com:443"}
	if _, err := (Claude{}).Room(o); err == nil || !strings.Contains(err.Error(), "network.allow") || !strings.Contains(err.Error(), "fix:") {
		t.Errorf("a list without Claude's hosts: %v", err)
	}
}

// TestInertRoomRunsNoneOfTheBasesCommands: a room started from a copy of the operator's
// files keeps their text and MCP servers but none of what runs a command: Claude Code's
// hooks, status line and key helper, Codex's notify program and [hooks], pi's packages,
// Gemini CLI's hooks and tool discovery commands.
func TestInertRoomRunsNoneOfTheBasesCommands(t *testing.T) {
	base := t.TempDir()
	files := map[string]string{
		".claude.json":            `{"primaryApiKey":"sk-ant-copied","mcpServers":{"gh":{"command":"gh-mcp"}}}`,
		".claude/settings.json":   `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/x"}]}]},"statusLine":{"type":"command","command":"x"},"apiKeyHelper":"x","model":"opus"}`,
		".codex/config.toml":      "notify = [\"notify-send\", \"done\"]\n[mcp_servers.gh]\ncommand = \"gh-mcp\"\n[hooks]\n[[hooks.Stop]]\n",
		".pi/agent/settings.json": `{"packages":["npm:pi-evil"],"extensions":["/x.ts"],"theme":"dark"}`,
		".gemini/settings.json": `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/gx"}]}]},` +
			`"mcpServers":{"gh":{"command":"gh-mcp"}},"tools":{"discoveryCommand":"disc-x","callCommand":"call-x","core":["ls"]}}`,
	}
	for rel, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(base, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]struct{ kept, gone []string }{
		"claude": {[]string{`"disableAllHooks": true`, `"model": "opus"`, "gh-mcp"}, []string{"touch /tmp/x", "statusLine", "apiKeyHelper", "sk-ant-copied"}},
		"codex":  {[]string{"gh-mcp", "hooks = false"}, []string{"notify", "[hooks", "Stop"}},
		"pi":     {[]string{`"theme": "dark"`}, []string{"pi-evil", "/x.ts"}},
		"gemini": {[]string{"gh-mcp", `"core"`}, []string{"touch /tmp/gx", "disc-x", "call-x"}},
	}
	for _, a := range []Agent{Claude{}, Codex{}, Pi{}, Gemini{}} {
		s, err := a.Room(RoomOptions{BaseURL: "http://127.0.0.1:9", Base: base, Inert: true})
		if err != nil {
			t.Fatalf("%s: %v", a.Name(), err)
		}
		var all strings.Builder
		for _, f := range s.Files {
			all.Write(f.Data)
		}
		for _, k := range want[a.Name()].kept {
			if !strings.Contains(all.String(), k) {
				t.Errorf("%s: the inert room's config lacks %q:\n%s", a.Name(), k, all.String())
			}
		}
		for _, g := range want[a.Name()].gone {
			if strings.Contains(all.String(), g) {
				t.Errorf("%s: the inert room's config still has %q:\n%s", a.Name(), g, all.String())
			}
		}
		if _, err := a.Room(RoomOptions{BaseURL: "http://127.0.0.1:9", Base: base, Inert: true, Hooks: []Hook{{Event: "Stop", Command: "x"}}}); err == nil {
			t.Errorf("%s: a room both inert and with tare's hooks was built", a.Name())
		}
	}
}

// TestRoomLoginPiChatGPT: pi on OpenAI with a ChatGPT subscription login in auth.json gets
// that entry alone (not the OpenAI key beside it, nor the Anthropic login), and the proxy
// lets through ChatGPT's hosts.
func TestRoomLoginPiChatGPT(t *testing.T) {
	host := t.TempDir()
	p := filepath.Join(host, piLogin)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"openai":{"type":"api_key","key":"sk-other"},"openai-codex":{"type":"oauth","access":"a","refresh":"r","expires":1,"accountId":"acc"},
		"anthropic":{"type":"api_key","key":"sk-ant-other"}}`), 0o600)
	s, err := NewPi(OpenAIResponses).Room(RoomOptions{HostHome: host, Login: true, Proxy: "http://127.0.0.1:3128"})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(fileAt(t, s, "/home/agent/"+piLogin).Data, &doc)
	want := "openai-codex.access openai-codex.accountId openai-codex.expires openai-codex.refresh openai-codex.type"
	if got := strings.Join(LoginKeys(doc), " "); got != want || !slices.Contains(s.Allow, "chatgpt.com:443") {
		t.Errorf("pi on OpenAI with a ChatGPT login: copy keys %q (want %q), allow %v", got, want, s.Allow)
	}
}
