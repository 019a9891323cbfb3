package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Agy is the Antigravity CLI (agy) adapter. It is written from public
// documentation and reports from its users only: agy is a native binary from
// Google's installer, not on npm, and was never run here. Verified is false
// and the probe says so.
//
// What the sources say: headless `agy -p PROMPT --output-format stream-json`
// (init, step_update and result events), `--dangerously-skip-permissions`,
// `--conversation ID` to resume, `--print-timeout` bounding a print run;
// state in ~/.gemini/antigravity-cli/ (settings.json, conversations/<id>.pb,
// brain/<id>/), global rules in ~/.gemini/GEMINI.md, MCP servers in
// ~/.gemini/config/mcp_config.json, skills in ~/.gemini/config/skills/; the
// login is an OAuth token kept in the OS keyring, or in
// ~/.gemini/antigravity-cli/antigravity-oauth-token when agy sees an SSH
// session; the model backend is cloudcode-pa.googleapis.com.
type Agy struct{}

var agyCLI = cli{name: "agy", bin: "agy", install: "curl -fsSL https://antigravity.google/cli/install.sh | bash"}

const (
	agyDir   = ".gemini/antigravity-cli"
	agyLogin = agyDir + "/antigravity-oauth-token"
)

// Name implements Agent.
func (Agy) Name() string { return "agy" }

// Verified implements Agent: never run here.
func (Agy) Verified() bool { return false }

// Find implements Agent.
func (Agy) Find(o FindOptions) (Install, error) { return agyCLI.find(o) }

// Provider implements Agent.
func (Agy) Provider() Provider { return GoogleCodeAssist }

// Room implements Agent. agy has no base-URL setting: it runs against
// Google's backend only.
func (a Agy) Room(o RoomOptions) (Setup, error) {
	if o.BaseURL != "" {
		return Setup{}, fmt.Errorf("agy: Antigravity talks only to Google's backend (cloudcode-pa.googleapis.com), which tare's model server does not speak; run it against the real provider with a login copy")
	}
	if len(o.Hooks) > 0 {
		return Setup{}, fmt.Errorf("agy: hooks are not supported by tare's agy adapter")
	}
	s := Setup{
		Env:   map[string]string{"AGY_CLI_DISABLE_AUTO_UPDATE": "T"},
		Allow: []string{"cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443", "www.googleapis.com:443"},
	}
	proxyEnv(s.Env, o.Proxy)
	switch {
	case o.Login:
		f, line, login, err := loginCopy(a.Name(), o.HostHome, googleLogin(agyLogin,
			"log in on the host with `agy` over SSH (agy keeps the token in a file only then), or give an API key"))
		if err != nil {
			return Setup{}, err
		}
		s.Files, s.Logins = append(s.Files, f), append(s.Logins, login)
		// Reported: agy reads the token file instead of the keyring when it sees an SSH session.
		s.Env["SSH_CONNECTION"] = "127.0.0.1 0 127.0.0.1 0"
		s.Declared = append(s.Declared, line, "env: SSH_CONNECTION set so agy uses its token file (unverified)")
	case o.APIKey != "":
		s.Env["ANTIGRAVITY_API_KEY"] = o.APIKey
		s.Declared = append(s.Declared, "login copy: none (API key in ANTIGRAVITY_API_KEY, unverified)")
	default:
		return Setup{}, fmt.Errorf("agy: the real provider needs a login copy (--login) or an API key")
	}
	settings := map[string]any{"enableTelemetry": false, "trustedWorkspaces": []string{Work}}
	if o.Model != "" {
		settings["model"] = o.Model
	}
	f, err := jsonFile(o.Base, agyDir+"/settings.json", settings, 0o600)
	if err != nil {
		return Setup{}, fmt.Errorf("agy: %w", err)
	}
	s.Files = append(s.Files, f)
	if err := s.declareReal(a.Name(), o); err != nil {
		return Setup{}, err
	}
	s.Declared = append(s.Declared, "config: ~/.gemini/antigravity-cli/settings.json (telemetry off, /work trusted; unverified keys)")
	return s, nil
}

// agyHeadless are the print-mode flags; a print run stops after
// --print-timeout (default 5m, too short for a task).
var agyHeadless = []string{"--output-format", "stream-json", "--dangerously-skip-permissions", "--print-timeout", "60m"}

// RunArgs implements Agent.
func (Agy) RunArgs(prompt string, extra []string) []string {
	args := append([]string{"-p", prompt}, agyHeadless...)
	return append(args, extra...)
}

// ResumeArgs implements Agent.
func (Agy) ResumeArgs(session, prompt string, extra []string) []string {
	args := append([]string{"--conversation", session, "-p", prompt}, agyHeadless...)
	return append(args, extra...)
}

// AttachArgs implements Agent.
func (Agy) AttachArgs(extra []string, yolo bool) []string {
	var args []string
	if yolo {
		args = append(args, "--dangerously-skip-permissions")
	}
	return append(args, extra...)
}

// SessionGlob implements Agent: conversations are protocol buffers.
func (Agy) SessionGlob() string { return inRoom(agyDir + "/conversations/*.pb") }

// PlaceSession implements Agent. Unverified: whether agy resumes from the
// conversation file alone (it also keeps brain/<id>/ and history.jsonl) is unknown.
func (Agy) PlaceSession(data []byte, id string) []File {
	return []File{{Path: inRoom(agyDir + "/conversations/" + id + ".pb"), Data: data, Mode: 0o600}}
}

// ParseStream implements Agent. The stream-json schema is known only from
// release notes (typed init, step_update and terminal result events), so
// the reader takes the usual field names and, for a text-mode stdout, the
// whole output as the answer.
func (Agy) ParseStream(r io.Reader) (Result, error) {
	var res Result
	var plain []string
	sawJSON, done := false, false
	err := eachLine(r, func(line string) {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			plain = append(plain, line)
			return
		}
		sawJSON = true
		if id := firstString(e, "conversation_id", "conversationId", "session_id", "sessionId"); id != "" && res.SessionID == "" {
			res.SessionID = id
		}
		switch e["type"] {
		case "result":
			done = true
			res.Text = firstString(e, "result", "response", "text")
			status := firstString(e, "status", "subtype")
			res.IsError = e["is_error"] == true || e["error"] != nil || (status != "" && status != "success")
			if res.IsError {
				res.Error = strings.TrimSpace(status + " " + firstString(e, "error", "message"))
			}
			for _, k := range []string{"usage", "stats"} {
				if u, ok := e[k].(map[string]any); ok {
					res.Usage = Usage{
						Input:     firstInt(u, "input_tokens", "inputTokens", "prompt_tokens", "input"),
						Output:    firstInt(u, "output_tokens", "outputTokens", "candidates_tokens", "output"),
						CacheRead: firstInt(u, "cached_input_tokens", "cachedInputTokens", "cached", "cache_read_input_tokens"),
						Model:     firstString(e, "model"),
					}
					res.Usage.Input -= res.Usage.CacheRead
				}
			}
		case "message":
			if firstString(e, "role") == "assistant" {
				if t := firstString(e, "content", "text"); t != "" {
					res.Text = t
				}
			}
		case "error":
			res.IsError, res.Error = true, firstString(e, "message", "error")
		}
	})
	if err != nil {
		return res, fmt.Errorf("agy: %w", err)
	}
	if !sawJSON {
		res.Text = strings.TrimSpace(strings.Join(plain, "\n"))
		return res, nil
	}
	if !done && !res.IsError {
		res.IsError, res.Error = true, "the stream ended without a result event"
	}
	return res, nil
}

// eachLine calls fn with every non-empty line of r.
func eachLine(r io.Reader, fn func(string)) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read stream: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			fn(line)
		}
	}
	return nil
}

func firstString(m map[string]any, ks ...string) string {
	for _, k := range ks {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case map[string]any:
			if s := firstString(v, "message", "text"); s != "" {
				return s
			}
		}
	}
	return ""
}

func firstInt(m map[string]any, ks ...string) int64 {
	for _, k := range ks {
		if v, ok := m[k].(float64); ok {
			return int64(v)
		}
	}
	return 0
}

// Personal implements Agent: agy reuses the Gemini CLI's ~/.gemini tree, so
// the Gemini CLI's own files there are listed too.
func (Agy) Personal(hostHome, project string) []Source {
	var out []Source
	gem := filepath.Join(hostHome, ".gemini")
	out = instructionFiles(out, "global rules", filepath.Join(gem, "GEMINI.md"), filepath.Join(gem, "AGENTS.md"))
	for _, dir := range ancestors(project) {
		out = instructionFiles(out, "ancestor of the project", filepath.Join(dir, "GEMINI.md"), filepath.Join(dir, "AGENTS.md"))
		for _, rules := range []string{".agents/rules", ".agent/rules"} {
			out = instructionFiles(out, "ancestor of the project", markdownIn(filepath.Join(dir, rules))...)
		}
	}
	for _, p := range []string{filepath.Join(gem, "config", "mcp_config.json"), filepath.Join(gem, "antigravity", "mcp_config.json"), filepath.Join(gem, "settings.json")} {
		var cfg struct {
			Servers map[string]json.RawMessage `json:"mcpServers"`
		}
		if readJSON(p, &cfg) && len(cfg.Servers) > 0 {
			out = append(out, Source{Path: p, Kind: KindMCP, Fingerprints: keys(cfg.Servers), Note: "mcpServers"})
		}
	}
	out = skills(out, filepath.Join(gem, "config", "skills"), "")
	out = skills(out, filepath.Join(gem, "antigravity", "skills"), "")
	out = fileSource(out, filepath.Join(gem, "extensions"), KindPlugin, nil, "Gemini CLI extensions")
	out = fileSource(out, filepath.Join(gem, filepath.FromSlash(agyDir), "plugins"), KindPlugin, nil, "agy plugins")
	out = fileSource(out, filepath.Join(gem, filepath.FromSlash(agyDir), "settings.json"), KindSettings, nil, "")
	out = fileSource(out, filepath.Join(gem, "settings.json"), KindSettings, nil, "Gemini CLI settings")
	out = fileSource(out, filepath.Join(hostHome, filepath.FromSlash(agyLogin)), KindLogin, nil, "agy OAuth token file")
	out = fileSource(out, filepath.Join(gem, "oauth_creds.json"), KindLogin, nil, "Gemini CLI OAuth credentials")
	var accounts struct {
		Active string `json:"active"`
	}
	if p := filepath.Join(gem, "google_accounts.json"); readJSON(p, &accounts) && accounts.Active != "" {
		out = append(out, Source{Path: p, Kind: KindEmail, Fingerprints: []string{accounts.Active}, Note: "active Google account"})
	}
	return out
}

// Plant implements Agent (unverified that agy reads each of these).
func (Agy) Plant(home string, c Canary) error {
	if err := c.check("agy"); err != nil {
		return err
	}
	files := map[string]string{
		".gemini/GEMINI.md": c.instruction("~/.gemini/GEMINI.md"),
		".gemini/config/skills/" + c.Token + "-skill/SKILL.md": c.skill(c.Token+"-skill", "~/.gemini/config/skills"),
	}
	for rel, text := range files {
		if err := writeHome(home, rel, []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := writeJSON(home, ".gemini/config/mcp_config.json", map[string]any{"mcpServers": map[string]any{c.mcpName(): c.mcpServer()}}); err != nil {
		return err
	}
	return writeJSON(home, ".gemini/google_accounts.json", map[string]any{"active": c.email(), "old": []string{}})
}
