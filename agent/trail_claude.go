package agent

import (
	"encoding/json"
	"fmt"
	"strings"
)

// claudeEntry is a line of a Claude Code transcript (~/.claude/projects/-work/ID.jsonl).
type claudeEntry struct {
	Type        string `json:"type"`
	SessionID   string `json:"sessionId"`
	IsSidechain bool   `json:"isSidechain"`
	IsMeta      bool   `json:"isMeta"`
	Message     struct {
		ID      string          `json:"id"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// claudeBlock is a content block of a transcript message.
type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     map[string]any  `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Trail implements Trailer. Claude Code writes one transcript line per
// content block; the blocks of one model turn share message.id, so a step is
// the tool_use lines of one message id. Subagent (sidechain) and meta lines
// are left out.
func (Claude) Trail(session []byte) (Trail, error) {
	b := newTrailBuilder()
	for i, line := range sessionLines(session) {
		var e claudeEntry
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		if b.t.SessionID == "" && e.SessionID != "" {
			b.t.SessionID = e.SessionID
		}
		if e.IsSidechain || e.IsMeta || (e.Type != "user" && e.Type != "assistant") {
			continue
		}
		var prompt string
		if json.Unmarshal(e.Message.Content, &prompt) == nil {
			if e.Type == "user" {
				b.prompt(prompt)
			}
			continue
		}
		var blocks []claudeBlock
		if json.Unmarshal(e.Message.Content, &blocks) != nil {
			continue
		}
		var texts []string
		for _, c := range blocks {
			switch c.Type {
			case "text":
				texts = append(texts, c.Text)
			case "tool_use":
				b.call(e.Message.ID, c.ID, c.Name, mainArg(c.Input))
			case "tool_result":
				b.result(c.ToolUseID, contentText(c.Content), c.IsError, i)
			}
		}
		if e.Type == "assistant" {
			b.say(strings.Join(texts, "\n"))
			continue
		}
		var kept []string
		for _, t := range texts {
			if !strings.HasPrefix(strings.TrimSpace(t), "<system-reminder>") {
				kept = append(kept, t)
			}
		}
		b.prompt(strings.Join(kept, "\n"))
	}
	if b.t.SessionID == "" {
		return Trail{}, fmt.Errorf("claude: not a Claude Code transcript: no line carries a sessionId")
	}
	return b.done(), nil
}

// CutSession implements Trailer: the transcript's lines up to the step's last
// tool result. A resume loads the chain ending at the last line, so the
// conversation continues from there.
func (Claude) CutSession(session []byte, step Step) ([]byte, error) {
	return cutLines("claude", session, step)
}
