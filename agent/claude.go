package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Claude is the Claude Code adapter (verified with 2.1.197).
type Claude struct{}

var claudeCLI = cli{name: "claude", bin: "claude", install: "npm ci --prefix agents/claude"}

// claudeLogin is the login file below HOME.
const claudeLogin = ".claude/.credentials.json"

// Name implements Agent.
func (Claude) Name() string { return "claude" }

// Verified implements Agent.
func (Claude) Verified() bool { return true }

// Find implements Agent.
func (Claude) Find(o FindOptions) (Install, error) { return claudeCLI.find(o) }

// Provider implements Agent.
func (Claude) Provider() Provider { return Anthropic }

// Room implements Agent. Claude Code reads its onboarding state from
// ~/.claude.json: without the keys written here an attached run stops at
// the trust, API-key and bypass-permissions dialogs. The env turns off its
// non-essential traffic (strace showed only the model connection left).
func (c Claude) Room(o RoomOptions) (Setup, error) {
	s := Setup{Env: map[string]string{
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"CLAUDE_CODE_TMPDIR":                       "/tmp",
	}}
	state := map[string]any{
		"hasCompletedOnboarding":        true,
		"bypassPermissionsModeAccepted": true,
		"projects": map[string]any{Work: map[string]any{
			"hasTrustDialogAccepted":        true,
			"hasCompletedProjectOnboarding": true,
		}},
	}
	key := ""
	if o.BaseURL != "" {
		key = tareKey
		s.Env["ANTHROPIC_BASE_URL"] = strings.TrimRight(o.BaseURL, "/")
		s.Env["ANTHROPIC_API_KEY"] = key
		s.Declared = append(s.Declared, "model: tare's model server at "+o.BaseURL, "login copy: none")
	} else {
		s.Allow = []string{"api.anthropic.com:443"}
		s.ModelHosts = []string{"api.anthropic.com:443"}
		proxyEnv(s.Env, o.Proxy)
		switch {
		case o.Login:
			s.Allow = append(s.Allow, "platform.claude.com:443") // OAuth token refresh
			f, line, login, err := loginCopy(c.Name(), o.HostHome, claudeLoginSpec)
			if err != nil {
				return Setup{}, err
			}
			s.Files, s.Logins = append(s.Files, f), append(s.Logins, login)
			s.Declared = append(s.Declared, line)
		case o.APIKey != "":
			key = o.APIKey
			s.Env["ANTHROPIC_API_KEY"] = key
			s.Declared = append(s.Declared, "login copy: none (API key in ANTHROPIC_API_KEY)")
		default:
			return Setup{}, fmt.Errorf("claude: the real provider needs a login copy (--login) or an API key")
		}
		if err := s.declareReal(c.Name(), o); err != nil {
			return Setup{}, err
		}
	}
	if o.Model != "" {
		s.Env["ANTHROPIC_MODEL"] = o.Model
	}
	if key != "" {
		// Claude Code asks once per key; it remembers the key's last 20 characters.
		tail := key
		if len(tail) > 20 {
			tail = tail[len(tail)-20:]
		}
		state["customApiKeyResponses"] = map[string]any{"approved": []string{tail}, "rejected": []string{}}
	}
	if o.Inert {
		state["primaryApiKey"] = drop // a copied key is no detector's business
	}
	f, err := jsonFile(o.Base, ".claude.json", state, 0o600)
	if err != nil {
		return Setup{}, fmt.Errorf("claude: %w", err)
	}
	s.Files = append(s.Files, f)
	s.Declared = append(s.Declared, "config: ~/.claude.json (onboarding and trust for /work only)")
	switch {
	case o.Inert && len(o.Hooks) > 0:
		return Setup{}, fmt.Errorf("claude: a room is either inert or has tare's hooks, not both")
	case o.Inert:
		// disableAllHooks also turns off the status line; the helpers run commands of their own.
		off := map[string]any{"disableAllHooks": true, "hooks": drop, "statusLine": drop, "apiKeyHelper": drop,
			"awsAuthRefresh": drop, "awsCredentialExport": drop, "otelHeadersHelper": drop, "env": drop}
		f, err := jsonFile(o.Base, ".claude/settings.json", off, 0o600)
		if err != nil {
			return Setup{}, fmt.Errorf("claude: %w", err)
		}
		s.Files = append(s.Files, f)
		s.Declared = append(s.Declared, "config: ~/.claude/settings.json (disableAllHooks; no helpers, status line or env)")
	case len(o.Hooks) > 0:
		f, err := jsonFile(o.Base, ".claude/settings.json", map[string]any{"hooks": claudeHooks(o.Hooks)}, 0o600)
		if err != nil {
			return Setup{}, fmt.Errorf("claude: %w", err)
		}
		s.Files = append(s.Files, f)
		s.Declared = append(s.Declared, fmt.Sprintf("config: ~/.claude/settings.json (%d tare hooks)", len(o.Hooks)))
	}
	return s, nil
}

// claudeHooks is the settings.json "hooks" object; tool events match every tool.
func claudeHooks(hooks []Hook) map[string]any {
	out := map[string]any{}
	for _, h := range hooks {
		entry := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": h.Command}}}
		if toolEvent(h.Event) {
			entry["matcher"] = "*"
		}
		list, _ := out[h.Event].([]any)
		out[h.Event] = append(list, entry)
	}
	return out
}

// RunArgs implements Agent. stream-json needs --verbose with -p; "--" keeps
// a prompt starting with "-" a prompt.
func (Claude) RunArgs(prompt string, extra []string) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	return append(append(args, extra...), "--", prompt)
}

// ResumeArgs implements Agent.
func (Claude) ResumeArgs(session, prompt string, extra []string) []string {
	args := []string{"-p", "--resume", session, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	return append(append(args, extra...), "--", prompt)
}

// AttachArgs implements Agent.
func (Claude) AttachArgs(extra []string, yolo bool) []string {
	var args []string
	if yolo {
		args = append(args, "--dangerously-skip-permissions")
	}
	return append(args, extra...)
}

// PresetSessionArgs implements SessionPresetter: the transcript is then <id>.jsonl.
func (Claude) PresetSessionArgs(id string) []string { return []string{"--session-id", id} }

// claudeProject is where transcripts of a run in /work land, below HOME.
const claudeProject = ".claude/projects/-work"

// SessionGlob implements Agent.
func (Claude) SessionGlob() string { return inRoom(claudeProject + "/*.jsonl") }

// PlaceSession implements Agent. The transcript alone suffices: a resume in
// a fresh HOME holding only it (and ~/.claude.json) re-sent the history.
func (Claude) PlaceSession(data []byte, id string) []File {
	return []File{{Path: inRoom(claudeProject + "/" + id + ".jsonl"), Data: data, Mode: 0o600}}
}

type claudeEvent struct {
	Type      string   `json:"type"`
	Subtype   string   `json:"subtype"`
	SessionID string   `json:"session_id"`
	IsError   bool     `json:"is_error"`
	Result    string   `json:"result"`
	Errors    []string `json:"errors"`
	Cost      *float64 `json:"total_cost_usd"`
	Usage     struct {
		Input      int64 `json:"input_tokens"`
		Output     int64 `json:"output_tokens"`
		CacheWrite int64 `json:"cache_creation_input_tokens"`
		CacheRead  int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	ModelUsage map[string]claudeModelUsage `json:"modelUsage"`
	Message    struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
		} `json:"usage"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
}

// claudeModelUsage is one model's entry of the result's modelUsage.
type claudeModelUsage struct {
	Input      int64 `json:"inputTokens"`
	Output     int64 `json:"outputTokens"`
	CacheRead  int64 `json:"cacheReadInputTokens"`
	CacheWrite int64 `json:"cacheCreationInputTokens"`
}

// ParseStream implements Agent: the result event carries the run's usage,
// cost (computed by Claude Code from its price table), what each model used
// (modelUsage), and final text; the assistant events show each request.
func (Claude) ParseStream(r io.Reader) (Result, error) {
	var res Result
	var last string
	done := false
	// Each request's usage, by message id: Claude Code repeats a message once
	// per content block, with the same usage.
	requests := map[string][]Request{}
	seen := map[string]bool{}
	err := eachJSON(r, func(line []byte) error {
		var e claudeEvent
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		if e.SessionID != "" && res.SessionID == "" {
			res.SessionID = e.SessionID
		}
		switch e.Type {
		case "assistant":
			if t := textOf(e.Message.Content); t != "" {
				last = t
			}
			if m := e.Message; m.ID != "" && m.Model != "" && !seen[m.ID] {
				seen[m.ID] = true
				requests[m.Model] = append(requests[m.Model], Request{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite})
			}
		case "result":
			done = true
			res.Text = e.Result
			res.IsError = e.IsError || (e.Subtype != "" && e.Subtype != "success")
			if res.IsError {
				var why []string
				if e.Subtype != "success" {
					why = append(why, e.Subtype)
				}
				res.Error = strings.Join(append(append(why, e.Result), e.Errors...), ": ")
			}
			res.Usage = Usage{Input: e.Usage.Input, Output: e.Usage.Output, CacheRead: e.Usage.CacheRead, CacheWrite: e.Usage.CacheWrite}
			if e.Cost != nil {
				res.Usage.CostUSD, res.Usage.CostReported = *e.Cost, true
			}
			res.Usage.Model = mainModel(e.ModelUsage)
			res.Models = claudeModels(e.ModelUsage, requests)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("claude: %w", err)
	}
	if !done {
		res.IsError, res.Error = true, "the stream ended without a result event"
		res.Text = last
	}
	return res, nil
}

var (
	contextSuffix = regexp.MustCompile(`\[[^\]]*\]$`)
	// slugUnsafe is what Claude Code turns into "-" to name a project's folder.
	slugUnsafe = regexp.MustCompile(`[^A-Za-z0-9]`)
)

// claudeModels is what each model of modelUsage used, with its requests as the stream showed
// them (keyed by the model without Claude Code's "[1m]" context tag, as the API names it).
func claudeModels(m map[string]claudeModelUsage, requests map[string][]Request) []ModelUsage {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]ModelUsage, 0, len(names))
	for _, k := range names {
		u := m[k]
		out = append(out, ModelUsage{Model: k, Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
			Requests: requests[contextSuffix.ReplaceAllString(k, "")]})
	}
	return out
}

// mainModel is the model that wrote most, without Claude Code's "[1m]" context tag.
func mainModel(m map[string]claudeModelUsage) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	best := ""
	for _, k := range names {
		if best == "" || m[k].Output > m[best].Output {
			best = k
		}
	}
	return contextSuffix.ReplaceAllString(best, "")
}

// Personal implements Agent: the leak vectors of SANDBOX.md for Claude Code.
func (Claude) Personal(hostHome, project string) []Source {
	var out []Source
	dot := filepath.Join(hostHome, ".claude")
	out = instructionFiles(out, "", filepath.Join(dot, "CLAUDE.md"))
	out = instructionFiles(out, "", markdownIn(filepath.Join(dot, "rules"))...)
	out = instructionFiles(out, "used when chosen as output style", markdownIn(filepath.Join(dot, "output-styles"))...)
	if project != "" {
		real := project
		if r, err := filepath.EvalSymlinks(project); err == nil {
			real = r // Claude Code names the folder after the real path
		}
		slug := slugUnsafe.ReplaceAllString(filepath.Clean(real), "-")
		out = instructionFiles(out, "auto memory of this project", markdownIn(filepath.Join(dot, "projects", slug, "memory"))...)
	}
	for _, dir := range ancestors(project) {
		out = instructionFiles(out, "ancestor of the project",
			filepath.Join(dir, "CLAUDE.md"), filepath.Join(dir, "CLAUDE.local.md"), filepath.Join(dir, ".claude", "CLAUDE.md"))
		out = instructionFiles(out, "ancestor of the project", markdownIn(filepath.Join(dir, ".claude", "rules"))...)
	}
	out = instructionFiles(out, "managed policy", "/etc/claude-code/CLAUDE.md")

	var state struct {
		MCP      map[string]json.RawMessage `json:"mcpServers"`
		Projects map[string]struct {
			MCP map[string]json.RawMessage `json:"mcpServers"`
		} `json:"projects"`
		Account struct {
			Email string `json:"emailAddress"`
		} `json:"oauthAccount"`
	}
	if p := filepath.Join(hostHome, ".claude.json"); readJSON(p, &state) {
		names := keys(state.MCP)
		for _, proj := range state.Projects {
			names = append(names, keys(proj.MCP)...)
		}
		if len(names) > 0 {
			out = append(out, Source{Path: p, Kind: KindMCP, Fingerprints: unique(names), Note: "mcpServers and projects[].mcpServers"})
		}
		if state.Account.Email != "" {
			out = append(out, Source{Path: p, Kind: KindEmail, Fingerprints: []string{state.Account.Email}, Note: "oauthAccount.emailAddress"})
		}
	}
	var managed struct {
		MCP map[string]json.RawMessage `json:"mcpServers"`
	}
	if p := "/etc/claude-code/managed-mcp.json"; readJSON(p, &managed) && len(managed.MCP) > 0 {
		out = append(out, Source{Path: p, Kind: KindMCP, Fingerprints: keys(managed.MCP), Note: "managed policy"})
	}

	out = skills(out, filepath.Join(dot, "skills"), "")
	out = definitions(out, filepath.Join(dot, "agents"), KindAgent)
	out = definitions(out, filepath.Join(dot, "commands"), KindCommand)
	var plugins struct {
		Plugins map[string]json.RawMessage `json:"plugins"`
	}
	pluginDir := filepath.Join(dot, "plugins")
	if readJSON(filepath.Join(pluginDir, "installed_plugins.json"), &plugins) && len(plugins.Plugins) > 0 {
		var names, short []string
		for _, k := range keys(plugins.Plugins) {
			name, _, _ := strings.Cut(k, "@")
			prints := named(name, "")
			if len(prints) == 0 {
				short = append(short, fmt.Sprintf("%q", name))
			}
			names = append(names, prints...)
		}
		src := Source{Path: pluginDir, Kind: KindPlugin, Fingerprints: names, Note: "installed plugins"}
		if len(short) > 0 {
			src.Unseen = fmt.Sprintf("the plugin names %s are too short to recognise", strings.Join(short, ", "))
		}
		out = append(out, src)
	} else {
		out = fileSource(out, pluginDir, KindPlugin, nil, "")
	}
	for _, p := range []string{filepath.Join(dot, "settings.json"), filepath.Join(dot, "settings.local.json"), "/etc/claude-code/managed-settings.json"} {
		if isFile(p) {
			out = append(out, claudeSettings(p))
		}
	}
	out = fileSource(out, filepath.Join(hostHome, claudeLogin), KindLogin, nil, "OAuth tokens")
	return out
}

// claudeSettings is a settings file's Source: hook and apiKeyHelper commands
// as fingerprints (their output can reach the model), env only counted (it
// may hold secrets).
func claudeSettings(p string) Source {
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
		Env          map[string]json.RawMessage `json:"env"`
		APIKeyHelper string                     `json:"apiKeyHelper"`
	}
	readJSON(p, &s)
	var prints []string
	for _, event := range s.Hooks {
		for _, m := range event {
			for _, h := range m.Hooks {
				prints = append(prints, h.Command)
			}
		}
	}
	if s.APIKeyHelper != "" {
		prints = append(prints, s.APIKeyHelper)
	}
	var long []string
	for _, f := range unique(prints) {
		if len(f) >= minFingerprint {
			long = append(long, f)
		}
	}
	note := fmt.Sprintf("%d hook commands, %d env variables", len(prints), len(s.Env))
	if s.APIKeyHelper != "" {
		note += ", apiKeyHelper"
	}
	return Source{Path: p, Kind: KindSettings, Fingerprints: long, Note: note}
}

// unique sorts and de-duplicates.
func unique(in []string) []string {
	slices.Sort(in)
	return slices.Compact(in)
}

// Plant implements Agent.
func (Claude) Plant(home string, c Canary) error {
	if err := c.check("claude"); err != nil {
		return err
	}
	files := map[string]string{
		".claude/CLAUDE.md":                             c.instruction("~/.claude/CLAUDE.md"),
		".claude/rules/" + c.Token + ".md":              c.instruction("~/.claude/rules"),
		".claude/skills/" + c.Token + "-skill/SKILL.md": c.skill(c.Token+"-skill", "~/.claude/skills"),
		".claude/agents/" + c.Token + "-agent.md":       fmt.Sprintf("---\nname: %s-agent\ndescription: Canary subagent %s planted in ~/.claude/agents.\n---\n\nReply with %s-agent.\n", c.Token, c.Token, c.Token),
		".claude/commands/" + c.Token + "-command.md":   fmt.Sprintf("---\ndescription: Canary command %s planted in ~/.claude/commands.\n---\n\nReply with %s-command.\n", c.Token, c.Token),
	}
	for rel, text := range files {
		if err := writeHome(home, rel, []byte(text), 0o644); err != nil {
			return err
		}
	}
	server := c.mcpServer()
	server["type"] = "stdio"
	return writeJSON(home, ".claude.json", map[string]any{
		"mcpServers":   map[string]any{c.mcpName(): server},
		"oauthAccount": map[string]any{"emailAddress": c.email(), "displayName": c.Token},
	})
}
