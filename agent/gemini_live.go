package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ParseLine implements LiveParser for Gemini CLI's stream-json: tool_use and tool_result
// carry the CLI's own call id (the trail names calls by their model message instead, see geminiCallID), the
// assistant's text comes in pieces, the result has the run's tokens.
func (Gemini) ParseLine(line []byte) (Live, bool) {
	var e struct {
		geminiEvent
		ToolName   string         `json:"tool_name"`
		ToolID     string         `json:"tool_id"`
		Parameters map[string]any `json:"parameters"`
		Output     string         `json:"output"`
	}
	if json.Unmarshal(line, &e) != nil {
		return Live{}, false
	}
	switch e.Type {
	case "tool_use":
		return Live{Kind: LiveToolStart, Tool: e.ToolName, ID: e.ToolID, Summary: clip(oneLine(mainArg(e.Parameters)), liveSummary)}, true
	case "tool_result":
		out := e.Output
		if e.Error != nil && out == "" {
			out = e.Error.Message
		}
		return Live{Kind: LiveToolEnd, ID: e.ToolID, Summary: liveText(out), IsError: e.Status != "success"}, true
	case "message":
		if e.Role == "assistant" && strings.TrimSpace(e.Content) != "" {
			return Live{Kind: LiveText, Summary: liveText(e.Content)}, true
		}
	case "result":
		res, err := Gemini{}.ParseStream(bytes.NewReader(line))
		if err != nil {
			return Live{}, false
		}
		return Live{Kind: LiveResult, Summary: liveText(res.Error), IsError: res.IsError, Usage: res.Usage}, true
	}
	return Live{}, false
}
