package modelserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// api is the wire dialect of a model request.
type api string

const (
	apiAnthropic api = "anthropic"
	apiResponses api = "responses"
	apiChat      api = "chat"
)

// convo is what the server needs to know about a model request, whatever
// its dialect.
type convo struct {
	api    api
	model  string
	stream bool
	// tools are the tools the request offers.
	tools []offeredTool
	// turns is the number of assistant turns already in the history: a run
	// of assistant messages / output items not broken by a user message or
	// a tool result counts once.
	turns int
	// cwd is the working directory named in the system prompt or
	// environment context, "" when none.
	cwd string
	// key is the conversation key (session id) the client sent, "" if none.
	key string
	// draws is the draw stream of the address the request came in on (Server.Stream), ""
	// for the main address.
	draws string
	// schema is set when the request asks for structured JSON output.
	schema     map[string]any
	structured bool
	// history identifies the conversation so far (hash of the messages);
	// identical retries of a keyless conversation share it.
	history string
	// inputTokens is the usage estimate for the request (body chars / 4).
	inputTokens int
}

// offeredTool is one tool of the request's tool list.
type offeredTool struct {
	name string
	// kind is "function" for JSON-argument tools, "custom" for Responses
	// free-form tools; other built-ins keep their type.
	kind  string
	props map[string]any
}

// conversationKeyHeaders carry a session id, in order of preference:
// Claude Code, Codex (session-id, thread-id), pi (session_id,
// x-session-affinity, x-client-request-id for openai-responses).
var conversationKeyHeaders = []string{
	"X-Claude-Code-Session-Id",
	"Session-Id",
	"Session_id",
	"Thread-Id",
	"X-Session-Affinity",
	"X-Client-Request-Id",
}

func conversationKey(h http.Header) string {
	for _, k := range conversationKeyHeaders {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			return v
		}
	}
	return ""
}

// textOf joins the text of a content value: a string or an array of blocks
// with a "text" field (text, input_text, output_text).
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Text != "" {
			b.WriteString(bl.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var cwdPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?m)Primary working directory:\s*(\S[^\n]*)`),      // Claude Code
	regexp.MustCompile(`<cwd>([^<\n]+)</cwd>`),                             // Codex
	regexp.MustCompile(`(?m)Current working directory:\s*(\S[^\n]*)`),      // pi
	regexp.MustCompile(`Workspace Directories:\*\*\s*\n\s*-\s*(\S[^\n]*)`), // Gemini CLI
	regexp.MustCompile(`(?m)^\s*-?\s*Working directory:\s*(\S[^\n]*)`),
}

// findCwd looks for the agent's working directory in prompt texts.
func findCwd(texts ...string) string {
	for _, re := range cwdPatterns {
		for _, t := range texts {
			if m := re.FindStringSubmatch(t); m != nil {
				d := strings.TrimSpace(m[1])
				if strings.HasPrefix(d, "/") {
					return strings.TrimRight(d, " .")
				}
			}
		}
	}
	return ""
}

// claudeFiller is the assistant text Claude Code writes in place of a reply the model never
// gave, so a resumed session's messages still alternate.
const claudeFiller = "No response requested."

func hashOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

func estimateTokens(chars int) int {
	if chars < 4 {
		return 1
	}
	return chars / 4
}

// parseConvo reads a model request body of the given dialect.
func parseConvo(a api, body []byte, h http.Header) (*convo, error) {
	var c *convo
	var err error
	switch a {
	case apiAnthropic:
		c, err = parseAnthropic(body)
	case apiResponses:
		c, err = parseResponses(body)
	case apiChat:
		c, err = parseChat(body)
	default:
		return nil, fmt.Errorf("unknown api %q", a)
	}
	if err != nil {
		return nil, err
	}
	c.api = a
	c.inputTokens = estimateTokens(len(body))
	if k := conversationKey(h); k != "" {
		c.key = k
	}
	return c, nil
}

func parseAnthropic(body []byte) (*convo, error) {
	var req struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
		Tools    []struct {
			Name        string         `json:"name"`
			Type        string         `json:"type"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
		Metadata struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
		OutputConfig struct {
			Format *struct {
				Type   string         `json:"type"`
				Schema map[string]any `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("messages request: %v", err)
	}
	c := &convo{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		kind := "function"
		if t.Type != "" && t.Type != "custom" {
			kind = t.Type // server tools such as web_search_20250305
		}
		c.tools = append(c.tools, offeredTool{name: t.Name, kind: kind, props: props(t.InputSchema)})
	}
	if f := req.OutputConfig.Format; f != nil && f.Type == "json_schema" {
		c.structured, c.schema = true, f.Schema
	}
	msgs, err := messageList(req.Messages)
	if err != nil {
		return nil, fmt.Errorf("messages request: messages: %v", err)
	}
	texts := []string{textOf(req.System)}
	inAssistant := false
	for i, m := range msgs {
		switch {
		case m.Role == "assistant" && strings.TrimSpace(textOf(m.Content)) == claudeFiller:
			// Claude Code's stand-in for a turn the model never took (a session resumed right
			// after a tool result): not a scripted turn.
		case m.Role == "assistant":
			if !inAssistant {
				c.turns++
			}
			inAssistant = true
		case m.Role == "system":
			// Claude Code's mid-conversation system entries do not end a turn.
		default:
			inAssistant = false
		}
		if i < 3 || m.Role == "system" {
			texts = append(texts, textOf(m.Content))
		}
	}
	c.cwd = findCwd(texts...)
	c.history = hashOf(req.Messages)
	// Older Claude Code versions put the session id in metadata.user_id.
	if strings.HasPrefix(req.Metadata.UserID, "{") {
		var uid struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(req.Metadata.UserID), &uid) == nil {
			c.key = uid.SessionID
		}
	}
	return c, nil
}

func parseResponses(body []byte) (*convo, error) {
	var req struct {
		Model        string          `json:"model"`
		Stream       bool            `json:"stream"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		Tools        []struct {
			Type       string         `json:"type"`
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"tools"`
		Text struct {
			Format *struct {
				Type   string         `json:"type"`
				Schema map[string]any `json:"schema"`
			} `json:"format"`
		} `json:"text"`
		PromptCacheKey string `json:"prompt_cache_key"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("responses request: %v", err)
	}
	c := &convo{model: req.Model, stream: req.Stream, key: req.PromptCacheKey}
	for _, t := range req.Tools {
		switch t.Type {
		case "function", "":
			c.tools = append(c.tools, offeredTool{name: t.Name, kind: "function", props: props(t.Parameters)})
		case "custom":
			c.tools = append(c.tools, offeredTool{name: t.Name, kind: "custom"})
		default:
			name := t.Name
			if name == "" {
				name = t.Type
			}
			c.tools = append(c.tools, offeredTool{name: name, kind: t.Type})
		}
	}
	if f := req.Text.Format; f != nil && f.Type == "json_schema" {
		c.structured, c.schema = true, f.Schema
	}
	texts := []string{req.Instructions}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		texts = append(texts, s)
	} else if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return nil, fmt.Errorf("responses request: input: %v", err)
		}
	}
	inAssistant := false
	for i, it := range items {
		switch {
		case it.Role == "assistant",
			strings.HasSuffix(it.Type, "_call") && it.Type != "",
			it.Type == "reasoning":
			if !inAssistant {
				c.turns++
			}
			inAssistant = true
		case it.Role == "system" || it.Role == "developer":
		default:
			inAssistant = false
		}
		if i < 6 {
			texts = append(texts, textOf(it.Content))
		}
	}
	c.cwd = findCwd(texts...)
	c.history = hashOf(req.Input)
	return c, nil
}

func parseChat(body []byte) (*convo, error) {
	var req struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		Messages json.RawMessage `json:"messages"`
		Tools    []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ResponseFormat *struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("chat request: %v", err)
	}
	c := &convo{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		c.tools = append(c.tools, offeredTool{name: t.Function.Name, kind: "function", props: props(t.Function.Parameters)})
	}
	if f := req.ResponseFormat; f != nil && f.Type == "json_schema" {
		c.structured, c.schema = true, f.JSONSchema.Schema
	}
	msgs, err := messageList(req.Messages)
	if err != nil {
		return nil, fmt.Errorf("chat request: messages: %v", err)
	}
	var texts []string
	inAssistant := false
	for i, m := range msgs {
		switch m.Role {
		case "assistant":
			if !inAssistant {
				c.turns++
			}
			inAssistant = true
		case "system", "developer":
		default:
			inAssistant = false
		}
		if i < 4 {
			texts = append(texts, textOf(m.Content))
		}
	}
	c.cwd = findCwd(texts...)
	c.history = hashOf(req.Messages)
	return c, nil
}

// message is a chat or Anthropic message; content is a string or blocks.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func messageList(raw json.RawMessage) ([]message, error) {
	var msgs []message
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	err := json.Unmarshal(raw, &msgs)
	return msgs, err
}

func props(schema map[string]any) map[string]any {
	p, _ := schema["properties"].(map[string]any)
	return p
}
