package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Pi is the pi coding agent adapter (verified with 0.73.1). API is the model
// API it is configured to speak (pi speaks several); the zero value speaks
// Anthropic Messages.
type Pi struct {
	API Provider
}

// NewPi returns the pi adapter speaking api.
func NewPi(api Provider) Pi { return Pi{API: api} }

var piCLI = cli{name: "pi", bin: "pi", install: "npm ci --prefix agents/pi"}

const (
	piDir      = ".pi/agent"
	piLogin    = piDir + "/auth.json"
	piSessions = piDir + "/sessions/--work--" // cwd /work
)

// Name implements Agent.
func (Pi) Name() string { return "pi" }

// Verified implements Agent.
func (Pi) Verified() bool { return true }

// Find implements Agent.
func (Pi) Find(o FindOptions) (Install, error) { return piCLI.find(o) }

// Provider implements Agent.
func (p Pi) Provider() Provider {
	if p.API == "" {
		return Anthropic
	}
	return p.API
}

// piAPI is pi's name for a model API.
func piAPI(p Provider) (string, error) {
	switch p {
	case Anthropic:
		return "anthropic-messages", nil
	case OpenAIResponses:
		return "openai-responses", nil
	case OpenAIChat:
		return "openai-completions", nil
	}
	return "", fmt.Errorf("pi: cannot speak %s (choose %s, %s or %s)", p, Anthropic, OpenAIResponses, OpenAIChat)
}

// Room implements Agent. With tare's model server, models.json defines a
// provider "tare" and settings.json makes it and the model the default, so
// headless and attached runs need no provider flags (verified both). Hooks
// run from an extension tare writes to ~/.pi/agent/extensions.
func (p Pi) Room(o RoomOptions) (Setup, error) {
	api, err := piAPI(p.Provider())
	if err != nil {
		return Setup{}, err
	}
	s := Setup{Env: map[string]string{"PI_OFFLINE": "1", "PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1"}}
	if len(o.Hooks) > 0 {
		f, err := piHooks(o.Hooks)
		if err != nil {
			return Setup{}, err
		}
		s.Files = append(s.Files, f)
		s.Declared = append(s.Declared, fmt.Sprintf("config: ~/%s (%d tare hooks)", piExtension, len(o.Hooks)))
	}
	settings := map[string]any{"enableInstallTelemetry": false}
	if o.Inert {
		if len(o.Hooks) > 0 {
			return Setup{}, fmt.Errorf("pi: a room is either inert or has tare's hooks, not both")
		}
		// Packages and extensions are code pi runs as it starts.
		settings["packages"], settings["extensions"] = drop, drop
	}
	if o.BaseURL != "" {
		model := o.Model
		if model == "" {
			model = DefaultModel
		}
		base := strings.TrimRight(o.BaseURL, "/")
		if p.Provider() != Anthropic {
			base = apiBase(base)
		}
		provider := map[string]any{
			"baseUrl": base,
			"api":     api,
			"apiKey":  tareKeyEnv, // pi reads the named env var
			"models": []any{map[string]any{
				// Declared able to reason, so a --thinking level asked (a workshop writer's
				// effort) is taken, not clamped to off; settings keep off as the default.
				"id": model, "name": model, "reasoning": true, "contextWindow": 200000, "maxTokens": 32000,
				"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
			}},
		}
		if p.Provider() == OpenAIChat {
			provider["compat"] = map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false}
		}
		f, err := jsonFile(o.Base, piDir+"/models.json", map[string]any{"providers": map[string]any{"tare": provider}}, 0o600)
		if err != nil {
			return Setup{}, fmt.Errorf("pi: %w", err)
		}
		s.Files = append(s.Files, f)
		settings["defaultProvider"], settings["defaultModel"], settings["defaultThinkingLevel"] = "tare", model, "off"
		s.Env[tareKeyEnv] = tareKey
		s.Declared = append(s.Declared, "model: tare's model server at "+o.BaseURL, "login copy: none",
			"config: ~/.pi/agent/models.json (provider tare, "+api+")")
	} else {
		name, keyEnv := "anthropic", "ANTHROPIC_API_KEY"
		s.Allow = []string{"api.anthropic.com:443"}
		if p.Provider() != Anthropic {
			name, keyEnv = "openai", "OPENAI_API_KEY"
			s.Allow = []string{"api.openai.com:443"}
		}
		s.ModelHosts = []string{"api.anthropic.com:443", "api.openai.com:443", "chatgpt.com:443"}
		proxyEnv(s.Env, o.Proxy)
		switch {
		case o.Login:
			// The copy holds that provider's entry alone, never the other providers' keys.
			f, line, login, err := loginCopy(p.Name(), o.HostHome, piLoginSpec(name))
			if err != nil {
				return Setup{}, err
			}
			if name = login.What; name == "openai-codex" { // a ChatGPT subscription login
				s.Allow = []string{"chatgpt.com:443", "auth.openai.com:443"}
			}
			if name == "anthropic" {
				s.Allow = append(s.Allow, "platform.claude.com:443") // OAuth token refresh
			}
			s.Files, s.Logins = append(s.Files, f), append(s.Logins, login)
			s.Declared = append(s.Declared, line)
		case o.APIKey != "":
			s.Env[keyEnv] = o.APIKey
			s.Declared = append(s.Declared, "login copy: none (API key in "+keyEnv+")")
		default:
			return Setup{}, fmt.Errorf("pi: the real provider needs a login copy (--login) or an API key")
		}
		settings["defaultProvider"] = name
		if o.Model != "" {
			settings["defaultModel"] = o.Model
		}
		if err := s.declareReal(p.Name(), o); err != nil {
			return Setup{}, err
		}
	}
	f, err := jsonFile(o.Base, piDir+"/settings.json", settings, 0o600)
	if err != nil {
		return Setup{}, fmt.Errorf("pi: %w", err)
	}
	s.Files = append(s.Files, f)
	s.Declared = append(s.Declared, "config: ~/.pi/agent/settings.json (default provider and model, install telemetry off)")
	return s, nil
}

// piPrompt keeps a prompt a prompt: pi takes an argument starting with "-"
// for a flag and one starting with "@" for a file to attach, and has no "--".
// A leading space is the least change that avoids both.
func piPrompt(prompt string) string {
	if strings.HasPrefix(prompt, "-") || strings.HasPrefix(prompt, "@") {
		return " " + prompt
	}
	return prompt
}

// RunArgs implements Agent. pi has no permission prompts to turn off.
func (Pi) RunArgs(prompt string, extra []string) []string {
	return append([]string{"--mode", "json", "-p", piPrompt(prompt)}, extra...)
}

// ResumeArgs implements Agent: --session takes the id (pi finds the file in
// its sessions folder) or a path.
func (Pi) ResumeArgs(session, prompt string, extra []string) []string {
	return append([]string{"--session", session, "--mode", "json", "-p", piPrompt(prompt)}, extra...)
}

// AttachArgs implements Agent; yolo changes nothing (pi never asks).
func (Pi) AttachArgs(extra []string, yolo bool) []string { return append([]string{}, extra...) }

// SessionGlob implements Agent.
func (Pi) SessionGlob() string { return inRoom(piSessions + "/*.jsonl") }

// PlaceSession implements Agent. The session file alone suffices (verified:
// `--session ID` in a fresh HOME holding only it and models.json re-sent the
// history); its name is the header's timestamp and the id, as pi writes it.
func (Pi) PlaceSession(data []byte, id string) []File {
	stamp := "2000-01-01T00-00-00-000Z"
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var head struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
	}
	if json.Unmarshal(line, &head) == nil && head.Type == "session" && head.Timestamp != "" {
		stamp = strings.NewReplacer(":", "-", ".", "-").Replace(head.Timestamp)
	}
	return []File{{Path: inRoom(piSessions + "/" + stamp + "_" + id + ".jsonl"), Data: data, Mode: 0o600}}
}

type piEvent struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Message struct {
		Role    string `json:"role"`
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason   string `json:"stopReason"`
		ErrorMessage string `json:"errorMessage"`
		Usage        struct {
			Input      int64 `json:"input"`
			Output     int64 `json:"output"`
			CacheRead  int64 `json:"cacheRead"`
			CacheWrite int64 `json:"cacheWrite"`
			Cost       struct {
				Total float64 `json:"total"`
			} `json:"cost"`
		} `json:"usage"`
	} `json:"message"`
}

// ParseStream implements Agent: usage and cost (priced by pi from
// models.json) are per assistant message and summed here.
func (Pi) ParseStream(r io.Reader) (Result, error) {
	var res Result
	answered := false
	err := eachJSON(r, func(line []byte) error {
		var e piEvent
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		switch {
		case e.Type == "session":
			res.SessionID = e.ID
		case e.Type == "message_end" && e.Message.Role == "assistant":
			answered = true
			u := e.Message.Usage
			res.Usage.Input += u.Input
			res.Usage.Output += u.Output
			res.Usage.CacheRead += u.CacheRead
			res.Usage.CacheWrite += u.CacheWrite
			res.Usage.CostUSD += u.Cost.Total
			if e.Message.Model != "" {
				res.Usage.Model = e.Message.Model
			}
			if t := textOf(e.Message.Content); t != "" {
				res.Text = t
			}
			res.IsError = e.Message.StopReason == "error" || e.Message.StopReason == "aborted"
			res.Error = ""
			if res.IsError {
				res.Error = strings.TrimSpace(e.Message.StopReason + ": " + e.Message.ErrorMessage)
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("pi: %w", err)
	}
	res.Usage.CostReported = res.Usage.CostUSD > 0
	if !answered {
		res.IsError, res.Error = true, "the stream ended without an assistant message"
	}
	return res, nil
}

// Personal implements Agent.
func (Pi) Personal(hostHome, project string) []Source {
	var out []Source
	dot := filepath.Join(hostHome, filepath.FromSlash(piDir))
	out = instructionFiles(out, "", filepath.Join(dot, "AGENTS.md"), filepath.Join(dot, "CLAUDE.md"))
	out = instructionFiles(out, "replaces or extends the system prompt", filepath.Join(dot, "SYSTEM.md"), filepath.Join(dot, "APPEND_SYSTEM.md"))
	for _, dir := range ancestors(project) {
		out = instructionFiles(out, "ancestor of the project", filepath.Join(dir, "AGENTS.md"), filepath.Join(dir, "CLAUDE.md"))
		out = skills(out, filepath.Join(dir, ".agents", "skills"), "ancestor of the project")
	}
	out = skills(out, filepath.Join(dot, "skills"), "")
	if entries, err := os.ReadDir(filepath.Join(dot, "skills")); err == nil {
		for _, e := range entries { // root .md files are skills too
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
				if s, ok := markdownDefinition(filepath.Join(dot, "skills", e.Name()), KindSkill, strings.TrimSuffix(e.Name(), ".md")); ok {
					out = append(out, s)
				}
			}
		}
	}
	out = skills(out, filepath.Join(hostHome, ".agents", "skills"), "shared ~/.agents/skills")
	out = definitions(out, filepath.Join(dot, "prompts"), KindCommand)
	out = fileSource(out, filepath.Join(dot, "extensions"), KindPlugin, nil, "extensions run inside pi")
	var settings struct {
		Packages []json.RawMessage `json:"packages"`
	}
	if p := filepath.Join(dot, "settings.json"); readJSON(p, &settings) {
		out = append(out, Source{Path: p, Kind: KindSettings, Note: fmt.Sprintf("%d packages", len(settings.Packages))})
	}
	out = fileSource(out, filepath.Join(dot, "models.json"), KindSettings, nil, "custom providers (may hold API keys)")
	var mcp struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if p := filepath.Join(dot, "mcp.json"); readJSON(p, &mcp) {
		out = append(out, Source{Path: p, Kind: KindMCP, Fingerprints: keys(mcp.Servers), Note: "pi has no built-in MCP; read only by an MCP extension"})
	}
	out = fileSource(out, filepath.Join(hostHome, filepath.FromSlash(piLogin)), KindLogin, nil, "OAuth tokens or API keys per provider")
	return out
}

// Plant implements Agent. pi has no MCP and keeps no account email, so only
// instructions and skills are planted.
func (Pi) Plant(home string, c Canary) error {
	if err := c.check("pi"); err != nil {
		return err
	}
	files := map[string]string{
		piDir + "/AGENTS.md":                             c.instruction("~/.pi/agent/AGENTS.md"),
		piDir + "/skills/" + c.Token + "-skill/SKILL.md": c.skill(c.Token+"-skill", "~/.pi/agent/skills"),
		".agents/skills/" + c.Token + "-shared/SKILL.md": c.skill(c.Token+"-shared", "~/.agents/skills"),
	}
	for rel, text := range files {
		if err := writeHome(home, rel, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
