package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Gemini is the Gemini CLI adapter (verified with @google/gemini-cli 0.61.0).
type Gemini struct{}

var geminiCLI = cli{name: "gemini", bin: "gemini", install: "npm ci --prefix agents/gemini"}

// GeminiAPI is Google's Gemini API (models/NAME:streamGenerateContent), which
// Gemini CLI speaks with an API key and tare's model server answers.
const GeminiAPI Provider = "gemini-generate-content"

const (
	geminiDir = ".gemini"
	// geminiChats is where a run in /work keeps its sessions: Gemini CLI names the
	// project's folder after the cwd's base name (its projects.json maps /work to "work").
	geminiChats = geminiDir + "/tmp/work/chats"
	// geminiModel is the model asked for with tare's model server when none is given:
	// Gemini CLI shapes its prompt by model family, and this is the one verified offline.
	geminiModel = "gemini-2.5-pro"
	// geminiServerAttempts is how often Gemini CLI tries a model request to tare's model server.
	geminiServerAttempts = 3
	// geminiLogin is Gemini CLI's Google login below HOME.
	geminiLogin = geminiDir + "/oauth_creds.json"
	// geminiHookRunner is tare's hook runner for Gemini CLI (see geminiHookSource).
	geminiHookRunner = geminiDir + "/tare-hooks.cjs"
)

// Name implements Agent.
func (Gemini) Name() string { return "gemini" }

// Verified implements Agent.
func (Gemini) Verified() bool { return true }

// Find implements Agent.
func (Gemini) Find(o FindOptions) (Install, error) { return geminiCLI.find(o) }

// Provider implements Agent.
func (Gemini) Provider() Provider { return GeminiAPI }

func (Gemini) hookKind() string { return HookInAgent }

// Room implements Agent. In -p mode Gemini CLI takes its auth type only from settings
// (GOOGLE_GEMINI_BASE_URL alone selects a "gateway" type that -p refuses), so
// settings.json selects gemini-api-key and the base URL and key come by env. Usage
// statistics off is what keeps it from calling play.googleapis.com (strace showed only
// the model connection left). The system settings paths point at files that do not
// exist, so nothing of the host's /etc/gemini-cli reaches the room; there is no
// GEMINI_CLI_TRUST_WORKSPACE, so the workspace's own .gemini/settings.json (hooks, MCP
// servers the agent could write) is never loaded.
func (g Gemini) Room(o RoomOptions) (Setup, error) {
	s := Setup{Env: map[string]string{
		"GEMINI_CLI_NO_RELAUNCH":          "true", // no second node process, a second faster
		"GEMINI_CLI_SYSTEM_SETTINGS_PATH": inRoom(geminiDir + "/no-system-settings.json"),
		"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": inRoom(geminiDir + "/no-system-defaults.json"),
	}}
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	}
	model := o.Model
	if o.BaseURL != "" {
		s.Env["GOOGLE_GEMINI_BASE_URL"] = strings.TrimRight(o.BaseURL, "/")
		s.Env["GEMINI_API_KEY"] = tareKey
		if model == "" {
			model = geminiModel
		}
		// Gemini CLI tries a failing request 10 times, up to 30 s apart: four minutes of
		// waiting on a scripted overload. Three attempts still recover from a scripted
		// error_times of up to 2.
		settings["general"].(map[string]any)["maxAttempts"] = geminiServerAttempts
		s.Declared = append(s.Declared, "model: tare's model server at "+o.BaseURL, "login copy: none",
			fmt.Sprintf("retries: %d attempts per model request (Gemini CLI's default is 10)", geminiServerAttempts))
	} else {
		s.Allow = []string{"generativelanguage.googleapis.com:443"}
		// The relay reads the model calls to either: the Gemini API (an API key) and Code
		// Assist (a Google login), whose wrapped answers the meter reads as well.
		s.ModelHosts = []string{"generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443"}
		proxyEnv(s.Env, o.Proxy)
		switch {
		case o.Login:
			// A Google login reaches the model through Code Assist, with its token checked
			// (tokeninfo) and refreshed by Google's OAuth server, which stays an unread
			// tunnel. Run here against tare's model server standing in for both; no Google
			// account was at hand.
			f, line, login, err := loginCopy(g.Name(), o.HostHome, googleLogin(geminiLogin, "log in on the host with `gemini` (Login with Google), or give an API key (GEMINI_API_KEY)"))
			if err != nil {
				return Setup{}, err
			}
			s.Logins = append(s.Logins, login)
			s.Allow = []string{"cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443"}
			settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "oauth-personal"}}
			s.Files = append(s.Files, f)
			s.Declared = append(s.Declared, line)
		case o.APIKey != "":
			s.Env["GEMINI_API_KEY"] = o.APIKey
			s.Declared = append(s.Declared, "login copy: none (API key in GEMINI_API_KEY)")
		default:
			return Setup{}, fmt.Errorf("gemini: the real provider needs a login copy (--login) or an API key (GEMINI_API_KEY)")
		}
		if err := s.declareReal(g.Name(), o); err != nil {
			return Setup{}, err
		}
	}
	if model != "" {
		settings["model"] = map[string]any{"name": model}
	}
	switch {
	case o.Inert && len(o.Hooks) > 0:
		return Setup{}, fmt.Errorf("gemini: a room is either inert or has tare's hooks, not both")
	case o.Inert:
		// Hooks and tool discovery run commands of the operator's.
		settings["hooks"] = drop
		var base struct {
			Tools map[string]any `json:"tools"`
		}
		if old, err := baseFile(o.Base, geminiDir+"/settings.json"); err == nil && json.Unmarshal(old, &base) == nil && base.Tools != nil {
			settings["tools"] = map[string]any{"discoveryCommand": drop, "callCommand": drop}
		}
	case len(o.Hooks) > 0:
		hooks, runner, err := geminiHooks(o.Hooks)
		if err != nil {
			return Setup{}, err
		}
		settings["hooks"] = hooks
		s.Files = append(s.Files, runner)
	}
	f, err := jsonFile(o.Base, geminiDir+"/settings.json", settings, 0o600)
	if err != nil {
		return Setup{}, fmt.Errorf("gemini: %w", err)
	}
	s.Files = append(s.Files, f)
	line := "config: ~/.gemini/settings.json (API-key auth, usage statistics and telemetry off"
	if len(o.Hooks) > 0 {
		line += fmt.Sprintf(", %d tare hooks", len(o.Hooks))
	}
	s.Declared = append(s.Declared, line+")")
	return s, nil
}

// geminiPrompt is the prompt as one argument yargs cannot take for a flag.
func geminiPrompt(prompt string) string { return "--prompt=" + prompt }

// geminiHeadless are the flags of a headless run: JSON lines out, tools approved without
// asking (--yolo holds only in a trusted folder, which --skip-trust makes /work for this
// run without loading its settings).
var geminiHeadless = []string{"--output-format", "stream-json", "--yolo", "--skip-trust"}

// RunArgs implements Agent.
func (Gemini) RunArgs(prompt string, extra []string) []string {
	return append(append(append([]string{}, geminiHeadless...), extra...), geminiPrompt(prompt))
}

// ResumeArgs implements Agent: --resume takes the session id.
func (Gemini) ResumeArgs(session, prompt string, extra []string) []string {
	args := append([]string{"--resume", session}, geminiHeadless...)
	return append(append(args, extra...), geminiPrompt(prompt))
}

// AttachArgs implements Agent. The room's /work is trusted for the session, so its
// first screen is the prompt, not the trust dialog.
func (Gemini) AttachArgs(extra []string, yolo bool) []string {
	args := []string{"--skip-trust"}
	if yolo {
		args = append(args, "--yolo")
	}
	return append(args, extra...)
}

// PresetSessionArgs implements SessionPresetter.
func (Gemini) PresetSessionArgs(id string) []string { return []string{"--session-id", id} }

// SessionGlob implements Agent.
func (Gemini) SessionGlob() string { return inRoom(geminiChats + "/*.jsonl") }

// sessionFileKey is the part of session id that names its file: Gemini CLI writes
// session-<minute>-<first 8 characters of the id>.jsonl.
func (Gemini) sessionFileKey(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// PlaceSession implements Agent. The session file alone suffices: Gemini CLI finds a
// session by the id in the files of its project's chats folder.
func (g Gemini) PlaceSession(data []byte, id string) []File {
	stamp := "2000-01-01T00-00"
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var head struct {
		StartTime string `json:"startTime"`
	}
	if json.Unmarshal(line, &head) == nil && len(head.StartTime) >= 16 {
		stamp = strings.ReplaceAll(head.StartTime[:16], ":", "-")
	}
	return []File{{Path: inRoom(geminiChats + "/session-" + stamp + "-" + g.sessionFileKey(id) + ".jsonl"), Data: data, Mode: 0o600}}
}

// geminiEvent is a line of Gemini CLI's stream-json output.
type geminiEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Delta     bool   `json:"delta"`
	Status    string `json:"status"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats struct {
		Models map[string]geminiTokens `json:"models"`
	} `json:"stats"`
}

// geminiTokens is one model's tokens in the result's stats: input_tokens counts the
// whole prompt, cached the part of it read from cache, input the rest.
type geminiTokens struct {
	InputTokens int64 `json:"input_tokens"`
	Output      int64 `json:"output_tokens"`
	Cached      int64 `json:"cached"`
}

// ParseStream implements Agent: the assistant's text comes in delta messages (joined
// here, the last stretch after a tool call is the final text); the result event has each
// model's tokens (Models only when there are several: one model's requests are read from
// the session file). Gemini CLI reports no cost: tare prices the tokens.
func (Gemini) ParseStream(r io.Reader) (Result, error) {
	var res Result
	var text strings.Builder
	done := false
	var errs []string
	err := eachJSON(r, func(line []byte) error {
		var e geminiEvent
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		switch e.Type {
		case "init":
			res.SessionID, res.Usage.Model = e.SessionID, e.Model
		case "message":
			if e.Role == "assistant" {
				if !e.Delta {
					text.Reset()
				}
				text.WriteString(e.Content)
			}
		case "tool_use":
			text.Reset()
		case "error":
			if e.Message != "" {
				errs = append(errs, e.Message)
			}
		case "result":
			done = true
			res.IsError = e.Status != "success"
			if e.Error != nil && e.Error.Message != "" {
				errs = append(errs, e.Error.Message)
			}
			res.Models = nil
			names := make([]string, 0, len(e.Stats.Models))
			for k := range e.Stats.Models {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				t := e.Stats.Models[k]
				m := ModelUsage{Model: k, Input: t.InputTokens - t.Cached, Output: t.Output, CacheRead: t.Cached}
				res.Models = append(res.Models, m)
				res.Usage.Input += m.Input
				res.Usage.Output += m.Output
				res.Usage.CacheRead += m.CacheRead
			}
			best := -1 // the model that wrote most is the run's model
			for i, m := range res.Models {
				if best < 0 || m.Output > res.Models[best].Output {
					best = i
				}
			}
			if best >= 0 {
				res.Usage.Model = res.Models[best].Model
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("gemini: %w", err)
	}
	if len(res.Models) == 1 {
		// One model: its requests, each with its own prompt size (a long-context price),
		// come from the session file (SessionRequests).
		res.Models = nil
	}
	res.Text = text.String()
	switch {
	case !done:
		res.IsError = true
		errs = append(errs, "the stream ended without a result event")
	case res.IsError && len(errs) == 0:
		errs = append(errs, "the run ended with status error")
	}
	if res.IsError {
		res.Error = strings.Join(errs, ": ")
	}
	return res, nil
}
