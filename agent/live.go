package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The kinds of live events.
const (
	LiveToolStart = "tool_start" // a tool call began: Tool, ID, Summary (its main argument)
	LiveToolEnd   = "tool_end"   // a tool call returned: ID, Summary (its output, clipped), IsError
	LiveText      = "text"       // the model wrote text: Summary (empty when the line only reports usage, pi's tool-call messages)
	LiveResult    = "result"     // the run ended: Summary (final text), IsError, Usage
)

// liveSummary bounds a live event's Summary: one line of a view.
const liveSummary = 200

// Live is what one line of an agent's stdout says while the run goes on,
// for the app and, for agents without hooks, for taking a capsule at each
// tool_end.
type Live struct {
	Kind    string
	Tool    string // the tool's name (empty on Claude Code's tool_end: match by ID)
	ID      string // the tool-use id (Codex: the stream's item id, e.g. "item_2", not the rollout's call_id)
	Summary string
	IsError bool
	// Usage is what the line reports: Claude Code's result carries the run's
	// total; pi reports each assistant message (LiveText), to be added up;
	// Codex's turn.completed carries the thread's running total (Usage.Thread).
	Usage Usage
}

// LiveParser is an agent whose stream tare can follow line by line.
type LiveParser interface {
	// ParseLine reads one line of the agent's headless stdout; false when the
	// line says nothing a view shows.
	ParseLine(line []byte) (Live, bool)
}

// ParseLine reads one line of a's headless stdout as it comes.
func ParseLine(a Agent, line []byte) (Live, bool) {
	p, ok := a.(LiveParser)
	line = bytes.TrimSpace(line)
	if !ok || len(line) == 0 || line[0] != '{' {
		return Live{}, false
	}
	return p.ParseLine(line)
}

// ParseLine implements LiveParser for Claude Code's stream-json: one content
// block per assistant or user event.
func (Claude) ParseLine(line []byte) (Live, bool) {
	var e struct {
		claudeEvent
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &e) != nil {
		return Live{}, false
	}
	switch e.Type {
	case "assistant", "user":
		var blocks []claudeBlock
		if json.Unmarshal(e.Message.Content, &blocks) != nil {
			return Live{}, false
		}
		for _, c := range blocks {
			switch c.Type {
			case "tool_use":
				return Live{Kind: LiveToolStart, Tool: c.Name, ID: c.ID, Summary: clip(oneLine(mainArg(c.Input)), liveSummary)}, true
			case "tool_result":
				return Live{Kind: LiveToolEnd, ID: c.ToolUseID, Summary: liveText(contentText(c.Content)), IsError: c.IsError}, true
			case "text":
				if e.Type == "assistant" && strings.TrimSpace(c.Text) != "" {
					return Live{Kind: LiveText, Summary: liveText(c.Text)}, true
				}
			}
		}
	case "result":
		res, err := Claude{}.ParseStream(bytes.NewReader(line))
		if err != nil {
			return Live{}, false
		}
		return Live{Kind: LiveResult, Summary: liveText(res.Text), IsError: res.IsError, Usage: res.Usage}, true
	}
	return Live{}, false
}

// ParseLine implements LiveParser for `codex exec --json`: command
// executions, file changes, MCP calls and web searches are tools; usage
// comes with turn.completed.
func (Codex) ParseLine(line []byte) (Live, bool) {
	var e codexEvent
	if json.Unmarshal(line, &e) != nil {
		return Live{}, false
	}
	it := e.Item
	switch e.Type {
	case "turn.completed":
		return Live{Kind: LiveResult, Usage: e.Usage.usage()}, true
	case "turn.failed":
		return Live{Kind: LiveResult, Summary: liveText(e.Error.Message), IsError: true}, true
	case "error": // a transient failure Codex retries ("Reconnecting... 2/5")
		return Live{Kind: LiveText, Summary: liveText(e.Message), IsError: true}, true
	case "item.started", "item.completed":
		if it.Type == "agent_message" {
			if e.Type == "item.completed" && strings.TrimSpace(it.Text) != "" {
				return Live{Kind: LiveText, Summary: liveText(it.Text)}, true
			}
			return Live{}, false
		}
		l := Live{Kind: LiveToolStart, ID: it.ID}
		switch it.Type {
		case "command_execution":
			l.Tool, l.Summary = "shell", unwrapShell(it.Command)
		case "file_change":
			var paths []string
			for _, c := range it.Changes {
				paths = append(paths, strings.TrimSpace(c.Kind+" "+relWork(c.Path)))
			}
			l.Tool, l.Summary = "apply_patch", strings.Join(paths, ", ")
		case "mcp_tool_call":
			l.Tool = it.Server + "." + it.Tool
		case "web_search":
			l.Tool, l.Summary = "web_search", it.Query
		default:
			return Live{}, false
		}
		l.Summary = clip(oneLine(l.Summary), liveSummary)
		if e.Type == "item.completed" {
			l.Kind = LiveToolEnd
			l.IsError = it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0)
			if it.Type == "command_execution" {
				l.Summary = liveText(it.Output)
			}
		}
		return l, true
	}
	return Live{}, false
}

// unwrapShell drops the `/bin/bash -lc '...'` Codex wraps commands in.
func unwrapShell(cmd string) string {
	for _, prefix := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c ", "/bin/zsh -lc "} {
		if rest, ok := strings.CutPrefix(cmd, prefix); ok {
			if n := len(rest); n >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[n-1] == rest[0] {
				inner := rest[1 : n-1]
				if rest[0] == '\'' {
					inner = strings.ReplaceAll(inner, `'\''`, `'`)
				} else {
					inner = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(inner)
				}
				return inner
			}
			return rest
		}
	}
	return cmd
}

// ParseLine implements LiveParser for pi's --mode json: tool_execution_start
// and _end are the tools; each assistant message_end carries its own usage
// and cost.
func (Pi) ParseLine(line []byte) (Live, bool) {
	var e struct {
		piEvent
		ToolCallID string         `json:"toolCallId"`
		ToolName   string         `json:"toolName"`
		Args       map[string]any `json:"args"`
		IsError    bool           `json:"isError"`
		Result     struct {
			Content json.RawMessage `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal(line, &e) != nil {
		return Live{}, false
	}
	switch e.Type {
	case "tool_execution_start":
		return Live{Kind: LiveToolStart, Tool: e.ToolName, ID: e.ToolCallID, Summary: clip(oneLine(mainArg(e.Args)), liveSummary)}, true
	case "tool_execution_end":
		return Live{Kind: LiveToolEnd, Tool: e.ToolName, ID: e.ToolCallID, Summary: liveText(contentText(e.Result.Content)), IsError: e.IsError}, true
	case "message_end":
		if e.Message.Role != "assistant" {
			return Live{}, false
		}
		res, err := Pi{}.ParseStream(bytes.NewReader(line))
		if err != nil {
			return Live{}, false
		}
		text := res.Text
		if res.IsError {
			text = res.Error
		}
		return Live{Kind: LiveText, Summary: liveText(text), IsError: res.IsError, Usage: res.Usage}, true
	case "agent_end":
		return Live{Kind: LiveResult}, true
	}
	return Live{}, false
}

// liveText is a text's first line, clipped for a view.
func liveText(s string) string { return clip(oneLine(s), liveSummary) }
