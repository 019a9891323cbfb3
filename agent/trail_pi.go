package agent

import (
	"encoding/json"
	"fmt"
	"strings"
)

// piEntry is a line of a pi session (~/.pi/agent/sessions/--work--/*.jsonl, version 3).
type piEntry struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	ParentID string `json:"parentId"`
	Message  struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		IsError    bool            `json:"isError"`
	} `json:"message"`
}

type piBlock struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// Trail implements Trailer. A pi session is a tree (entries point at their
// parentId; /tree and forks add branches); the trail follows the branch
// that ends at the last entry, which is the one a resume continues. A step is
// one assistant message's toolCall blocks.
func (Pi) Trail(session []byte) (Trail, error) {
	lines := sessionLines(session)
	entries := make([]piEntry, len(lines))
	at := map[string]int{}
	b := newTrailBuilder()
	last := -1
	for i, line := range lines {
		if json.Unmarshal(line, &entries[i]) != nil {
			continue
		}
		e := entries[i]
		if e.Type == "session" && b.t.SessionID == "" {
			b.t.SessionID = e.ID
			continue
		}
		if e.ID != "" {
			at[e.ID] = i
			last = i
		}
	}
	if b.t.SessionID == "" {
		return Trail{}, fmt.Errorf("pi: not a pi session: no session header line")
	}
	onBranch := map[int]bool{}
	for i := last; i >= 0; {
		onBranch[i] = true
		parent, ok := at[entries[i].ParentID]
		if !ok || parent >= i {
			break
		}
		i = parent
	}
	for i, e := range entries {
		if !onBranch[i] || e.Type != "message" {
			continue
		}
		m := e.Message
		if m.Role == "toolResult" {
			b.result(m.ToolCallID, contentText(m.Content), m.IsError, i)
			continue
		}
		var blocks []piBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			var s string
			if json.Unmarshal(m.Content, &s) == nil && m.Role == "user" {
				b.prompt(s)
			}
			continue
		}
		var texts []string
		for _, c := range blocks {
			switch c.Type {
			case "text":
				texts = append(texts, c.Text)
			case "toolCall":
				if m.Role == "assistant" {
					b.say(strings.Join(texts, "\n"))
					texts = nil
					b.call(e.ID, c.ID, c.Name, mainArg(c.Arguments))
				}
			}
		}
		switch m.Role {
		case "user":
			b.prompt(strings.Join(texts, "\n"))
		case "assistant":
			b.say(strings.Join(texts, "\n"))
		}
	}
	return b.done(), nil
}

// CutSession implements Trailer: the session's entries up to the step's last
// tool result. pi resumes at the last entry of the file, so the kept prefix
// ends the conversation there.
func (Pi) CutSession(session []byte, step Step) ([]byte, error) {
	return cutLines("pi", session, step)
}
