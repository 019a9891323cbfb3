package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Codex is the Codex CLI adapter (verified with 0.171.0).
type Codex struct{}

var codexCLI = cli{name: "codex", bin: "codex", install: "npm ci --prefix agents/codex"}

const (
	codexConfig = ".codex/config.toml"
	codexLogin  = ".codex/auth.json"
)

// Name implements Agent.
func (Codex) Name() string { return "codex" }

// Verified implements Agent.
func (Codex) Verified() bool { return true }

// Find implements Agent.
func (Codex) Find(o FindOptions) (Install, error) { return codexCLI.find(o) }

// Provider implements Agent.
func (Codex) Provider() Provider { return OpenAIResponses }

// codexQuiet is the config that stops Codex's own traffic (release check,
// plugin marketplace, OTLP metrics): with it strace showed only the model
// connection. Trust for /work skips the trust screen of an attached run.
// Request compression (zstd, with a ChatGPT login) is off: tare's relay reads
// each request to bound what the call may spend under a cap.
func codexQuiet() map[string]any {
	return map[string]any{
		"check_for_update_on_startup": false,
		"analytics":                   map[string]any{"enabled": false},
		"otel":                        map[string]any{"metrics_exporter": "none"},
		"features": map[string]any{
			"plugins": false, "remote_plugin": false, "apps": false, "in_app_updates": false, "plugin_sharing": false,
			"enable_request_compression": false,
		},
		"projects": map[string]any{Work: map[string]any{"trust_level": "trusted"}},
	}
}

// Room implements Agent. With tare's model server, a provider "tare" points
// Codex at it with retries off (a scripted server answers once). Hooks go in
// config.toml's [hooks], marked trusted there (codexHooks).
func (c Codex) Room(o RoomOptions) (Setup, error) {
	s := Setup{Env: map[string]string{}}
	config := codexQuiet()
	if o.Inert {
		if len(o.Hooks) > 0 {
			return Setup{}, fmt.Errorf("codex: a room is either inert or has tare's hooks, not both")
		}
		// notify runs a program after every turn; [hooks] run on events.
		config["notify"], config["hooks"] = drop, drop
		config["features"].(map[string]any)["hooks"] = false
		s.Declared = append(s.Declared, "config: ~/.codex/config.toml (no notify program, hooks off)")
	}
	if len(o.Hooks) > 0 {
		hooks, err := codexHooks(o.Hooks, inRoom(codexConfig))
		if err != nil {
			return Setup{}, err
		}
		config["hooks"] = hooks
		config["features"].(map[string]any)["hooks"] = true
		s.Declared = append(s.Declared, fmt.Sprintf("config: ~/.codex/config.toml [hooks] (%d tare hooks, trusted in [hooks.state])", len(o.Hooks)))
	}
	if o.Model != "" {
		config["model"] = o.Model
	}
	if o.BaseURL != "" {
		// Codex's own default model switches it to another request shape
		// (no "tools", header x-openai-internal-codex-responses-lite), so
		// tare names codexServerModel, which keeps the plain Responses shape.
		if o.Model == "" {
			config["model"] = codexServerModel
		}
		config["model_provider"] = "tare"
		config["model_providers"] = map[string]any{"tare": map[string]any{
			"name":                "tare",
			"base_url":            apiBase(o.BaseURL),
			"wire_api":            "responses",
			"env_key":             tareKeyEnv,
			"request_max_retries": 0,
			"stream_max_retries":  0,
		}}
		s.Env[tareKeyEnv] = tareKey
		s.Declared = append(s.Declared, "model: tare's model server at "+o.BaseURL, "login copy: none")
	} else {
		s.Allow = []string{"api.openai.com:443"}
		// A ChatGPT login's model calls go to chatgpt.com's backend.
		s.ModelHosts = []string{"api.openai.com:443", "chatgpt.com:443"}
		proxyEnv(s.Env, o.Proxy)
		switch {
		case o.Login:
			// A ChatGPT login talks to chatgpt.com's backend and refreshes at auth.openai.com.
			s.Allow = append(s.Allow, "chatgpt.com:443", "auth.openai.com:443")
			f, line, login, err := loginCopy(c.Name(), o.HostHome, codexLoginSpec)
			if err != nil {
				return Setup{}, err
			}
			s.Files, s.Logins = append(s.Files, f), append(s.Logins, login)
			s.Declared = append(s.Declared, line)
		case o.APIKey != "":
			s.Env["OPENAI_API_KEY"] = o.APIKey
			s.Env["CODEX_API_KEY"] = o.APIKey // what `codex exec` reads
			s.Declared = append(s.Declared, "login copy: none (API key in OPENAI_API_KEY)")
		default:
			return Setup{}, fmt.Errorf("codex: the real provider needs a login copy (--login) or an API key")
		}
		if err := s.declareReal(c.Name(), o); err != nil {
			return Setup{}, err
		}
	}
	f, err := tomlFile(o.Base, codexConfig, config, 0o600)
	if err != nil {
		return Setup{}, fmt.Errorf("codex: %w", err)
	}
	s.Files = append(s.Files, f)
	s.Declared = append(s.Declared, "config: ~/.codex/config.toml (provider, update check, analytics, otel and plugins off)")
	return s, nil
}

var codexHeadless = []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}

// RunArgs implements Agent. Codex's own sandbox is off: the room is the
// sandbox. Stdin must be empty, or Codex waits to read more prompt from it.
func (Codex) RunArgs(prompt string, extra []string) []string {
	args := append(append([]string{}, codexHeadless...), extra...)
	return append(args, "--", prompt)
}

// ResumeArgs implements Agent: `exec resume ID` finds the rollout by its id
// in ~/.codex/sessions, without Codex's sqlite state.
func (Codex) ResumeArgs(session, prompt string, extra []string) []string {
	args := append(append([]string{}, codexHeadless...), extra...)
	return append(args, "resume", session, "--", prompt)
}

// AttachArgs implements Agent.
func (Codex) AttachArgs(extra []string, yolo bool) []string {
	var args []string
	if yolo {
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	}
	return append(args, extra...)
}

// SessionGlob implements Agent.
func (Codex) SessionGlob() string { return inRoom(".codex/sessions/*/*/*/rollout-*.jsonl") }

// PlaceSession implements Agent. The rollout alone suffices (verified: a
// resume by id in a fresh HOME holding only it and config.toml re-sent the
// history); the date folders come from the rollout's session_meta, and any
// date works.
func (Codex) PlaceSession(data []byte, id string) []File {
	t := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var meta struct {
		Timestamp string `json:"timestamp"`
		Payload   struct {
			Timestamp string `json:"timestamp"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &meta) == nil {
		for _, s := range []string{meta.Payload.Timestamp, meta.Timestamp} {
			if parsed, err := time.Parse(time.RFC3339Nano, s); err == nil {
				t = parsed.UTC()
				break
			}
		}
	}
	rel := fmt.Sprintf(".codex/sessions/%s/rollout-%s-%s.jsonl", t.Format("2006/01/02"), t.Format("2006-01-02T15-04-05"), id)
	return []File{{Path: inRoom(rel), Data: data, Mode: 0o600}}
}

type codexUsage struct {
	Input      int64 `json:"input_tokens"`
	Cached     int64 `json:"cached_input_tokens"`
	CacheWrite int64 `json:"cache_write_input_tokens"`
	Output     int64 `json:"output_tokens"`
}

func (u codexUsage) usage() Usage {
	return Usage{Input: u.Input - u.Cached - u.CacheWrite, Output: u.Output, CacheRead: u.Cached, CacheWrite: u.CacheWrite, Thread: true}
}

// codexEvent is one line of `codex exec --json`, as ParseStream and ParseLine read it.
type codexEvent struct {
	Type     string     `json:"type"`
	ThreadID string     `json:"thread_id"`
	Message  string     `json:"message"`
	Usage    codexUsage `json:"usage"`
	Error    struct {
		Message string `json:"message"`
	} `json:"error"`
	Item struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Text     string `json:"text"`
		Message  string `json:"message"`
		Command  string `json:"command"`
		Output   string `json:"aggregated_output"`
		ExitCode *int   `json:"exit_code"`
		Status   string `json:"status"`
		Server   string `json:"server"`
		Tool     string `json:"tool"`
		Query    string `json:"query"`
		Changes  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
}

// ParseStream implements Agent. turn.completed's usage is the thread's
// running total (Usage.Thread); Codex reports no cost. An error item is a
// warning (the custom provider's missing model metadata is one); a failed
// turn or a stream without a completed turn is the error.
func (Codex) ParseStream(r io.Reader) (Result, error) {
	res := Result{Usage: Usage{Thread: true}}
	completed := false
	var lastErr string
	err := eachJSON(r, func(line []byte) error {
		var e codexEvent
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		switch e.Type {
		case "thread.started":
			res.SessionID = e.ThreadID
		case "item.completed":
			switch e.Item.Type {
			case "agent_message":
				res.Text = e.Item.Text
			case "error":
				res.Warnings = append(res.Warnings, e.Item.Message)
			}
		case "turn.completed":
			completed = true
			res.Usage = e.Usage.usage()
		case "turn.failed":
			res.IsError, res.Error = true, e.Error.Message
		case "error":
			lastErr = e.Message
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("codex: %w", err)
	}
	if !completed && !res.IsError {
		res.IsError, res.Error = true, "the stream ended without a completed turn"
		if lastErr != "" {
			res.Error += ": " + lastErr
		}
	}
	return res, nil
}

// codexServerModel is the model Codex asks tare's model server for: a real
// id, so that its metadata is known (no warning) and a dry run is costed at
// the price of the model a real run would use. With codex 0.171.0 its
// requests carry the same fields and tools as with an unknown id (compared
// with `tare probe codex --requests`); the offline report used it too.
const codexServerModel = "gpt-5.1-codex"

// SessionModel implements ModelNamer: the model of the rollout's last
// turn_context, which Codex's stream never names.
func (Codex) SessionModel(session []byte) string {
	model := ""
	rolloutLines(session, `"turn_context"`, func(line []byte) {
		var e struct {
			Type    string `json:"type"`
			Payload struct {
				Model string `json:"model"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &e) == nil && e.Type == "turn_context" && e.Payload.Model != "" {
			model = e.Payload.Model
		}
	})
	return model
}

// CodexSessionUsage is the running total a rollout already holds (its last
// token_count), to subtract from a resumed run's turn.completed usage.
func CodexSessionUsage(data []byte) Usage {
	var total codexUsage
	rolloutLines(data, `"token_count"`, func(line []byte) {
		var e struct {
			Payload struct {
				Type string `json:"type"`
				Info *struct {
					Total codexUsage `json:"total_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &e) == nil && e.Payload.Type == "token_count" && e.Payload.Info != nil {
			total = e.Payload.Info.Total
		}
	})
	return total.usage()
}

// SessionRequests implements RequestLister: each model request of the rollout, from the
// last_token_usage of its token_count events (one per response; a repeat with the same
// running total is the same response), without the placed session's own.
func (Codex) SessionRequests(session, placed []byte) []Request {
	all := codexRequests(session)
	if skip := len(codexRequests(placed)); skip <= len(all) {
		return all[skip:]
	}
	return nil
}

func codexRequests(data []byte) []Request {
	var out []Request
	var last int64 = -1
	rolloutLines(data, `"token_count"`, func(line []byte) {
		var e struct {
			Payload struct {
				Type string `json:"type"`
				Info *struct {
					Total codexUsage `json:"total_token_usage"`
					Last  codexUsage `json:"last_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &e) != nil || e.Payload.Type != "token_count" || e.Payload.Info == nil {
			return
		}
		total := e.Payload.Info.Total
		if n := total.Input + total.Output; n != last {
			last = n
			u := e.Payload.Info.Last.usage()
			out = append(out, Request{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite})
		}
	})
	return out
}

// rolloutLines calls fn with each line of a Codex rollout that holds marker
// (lines of a long session can reach megabytes).
func rolloutLines(data []byte, marker string, fn func(line []byte)) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(marker)) {
			fn(sc.Bytes())
		}
	}
}

// Personal implements Agent.
func (Codex) Personal(hostHome, project string) []Source {
	var out []Source
	dot := filepath.Join(hostHome, ".codex")
	out = instructionFiles(out, "AGENTS.override.md wins over AGENTS.md",
		filepath.Join(dot, "AGENTS.override.md"), filepath.Join(dot, "AGENTS.md"))
	for _, dir := range ancestors(project) {
		out = instructionFiles(out, "ancestor of the project (read from the git root down)",
			filepath.Join(dir, "AGENTS.override.md"), filepath.Join(dir, "AGENTS.md"))
	}
	for _, p := range []string{filepath.Join(dot, "config.toml"), "/etc/codex/config.toml", "/etc/codex/managed_config.toml"} {
		out = append(out, codexConfigSources(p)...)
	}
	out = skills(out, filepath.Join(dot, "skills"), "")
	out = skills(out, filepath.Join(hostHome, ".agents", "skills"), "shared ~/.agents/skills")
	for _, p := range markdownIn(filepath.Join(dot, "prompts")) {
		if s, ok := markdownDefinition(p, KindCommand, strings.TrimSuffix(filepath.Base(p), ".md")); ok {
			s.Note = "custom prompt: reaches the model only when invoked (/prompts:name)"
			out = append(out, s)
		}
	}
	out = fileSource(out, filepath.Join(dot, "rules"), KindSettings, nil, "execpolicy rules")
	if p := filepath.Join(hostHome, codexLogin); isFile(p) {
		out = append(out, Source{Path: p, Kind: KindLogin, Note: "API key or ChatGPT tokens"})
		var auth struct {
			Tokens struct {
				IDToken string `json:"id_token"`
			} `json:"tokens"`
		}
		if readJSON(p, &auth) {
			if email := jwtEmail(auth.Tokens.IDToken); email != "" {
				out = append(out, Source{Path: p, Kind: KindEmail, Fingerprints: append([]string{email}, base64Forms(email)...), Note: "tokens.id_token email claim (base64 inside the token)"})
			}
		}
	}
	return out
}

var mcpUnsafe = regexp.MustCompile(`[^A-Za-z0-9_]`)

// codexConfigSources reads a config.toml: its MCP servers, the instructions
// it carries, and the file itself as settings.
func codexConfigSources(p string) []Source {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var cfg struct {
		MCP          map[string]any `toml:"mcp_servers"`
		Instructions string         `toml:"instructions"`
		Developer    string         `toml:"developer_instructions"`
		File         string         `toml:"model_instructions_file"`
		Provider     string         `toml:"model_provider"`
	}
	out := []Source{{Path: p, Kind: KindSettings}}
	if _, err := toml.Decode(string(data), &cfg); err != nil {
		out[0].Note = "not valid TOML: " + err.Error()
		return out
	}
	if cfg.Provider != "" {
		out[0].Note = "model_provider " + cfg.Provider
	}
	if len(cfg.MCP) > 0 {
		var names []string
		for k := range cfg.MCP {
			// Codex shows a server to the model as the namespace mcp__<name>
			// with every character but letters, digits and _ made "_".
			names = append(names, k, "mcp__"+mcpUnsafe.ReplaceAllString(k, "_"))
		}
		out = append(out, Source{Path: p, Kind: KindMCP, Fingerprints: unique(names), Note: "[mcp_servers]"})
	}
	if text := strings.TrimSpace(cfg.Instructions + "\n" + cfg.Developer); text != "" {
		prints, unseen := textPrints([]byte(text))
		out = append(out, Source{Path: p, Kind: KindInstructions, Fingerprints: prints, Unseen: unseen, Note: "instructions in config.toml"})
	}
	if cfg.File != "" {
		out = instructionFiles(out, "model_instructions_file of "+p, cfg.File)
	}
	return out
}

// Plant implements Agent.
func (Codex) Plant(home string, c Canary) error {
	if err := c.check("codex"); err != nil {
		return err
	}
	files := map[string]string{
		".codex/AGENTS.md": c.instruction("~/.codex/AGENTS.md"),
		".codex/skills/" + c.Token + "-skill/SKILL.md":   c.skill(c.Token+"-skill", "~/.codex/skills"),
		".agents/skills/" + c.Token + "-shared/SKILL.md": c.skill(c.Token+"-shared", "~/.agents/skills"),
	}
	for rel, text := range files {
		if err := writeHome(home, rel, []byte(text), 0o644); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{"mcp_servers": map[string]any{c.mcpName(): c.mcpServer()}}); err != nil {
		return fmt.Errorf("plant codex config: %w", err)
	}
	if err := writeHome(home, codexConfig, buf.Bytes(), 0o600); err != nil {
		return err
	}
	return writeJSON(home, codexLogin, map[string]any{
		"OPENAI_API_KEY": nil,
		"tokens": map[string]any{
			"id_token":      fakeJWT(map[string]any{"email": c.email()}),
			"access_token":  "canary-" + c.Token,
			"refresh_token": "canary-" + c.Token,
			"account_id":    c.Token,
		},
	})
}
