package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// codexLine is a line of a Codex rollout (~/.codex/sessions/Y/M/D/rollout-*.jsonl).
type codexLine struct {
	Type    string `json:"type"`
	Payload struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Input     string          `json:"input"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
		Action    struct {
			Command []string `json:"command"`
		} `json:"action"`
		Message string `json:"message"` // event_msg user_message
		Item    struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"item"` // event_msg item_completed
	} `json:"payload"`
}

// Trail implements Trailer. The model's view is in the response_item lines:
// assistant messages, function_call / custom_tool_call / local_shell_call
// and their outputs, keyed by call_id. A model turn ends at its
// token_usage_record (one per response) or at a message; the operator's
// prompts are the UserMessage items of event_msg lines (the user-role
// response items also carry Codex's injected environment and instructions).
func (Codex) Trail(session []byte) (Trail, error) {
	b := newTrailBuilder()
	lines := sessionLines(session)
	records := bytes.Contains(session, []byte(`"type":"token_usage_record"`))
	turn, open, answered := 0, false, false
	endTurn := func() {
		if open {
			turn++
		}
		open, answered = false, false
	}
	// The prompts are event_msg items; rollouts without them give the user-role
	// response items that are not Codex's own injected context.
	promptItems := bytes.Contains(session, []byte(`"UserMessage"`)) || bytes.Contains(session, []byte(`"user_message"`))
	sawUserItem := false
	for i, line := range lines {
		var e codexLine
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		p := e.Payload
		switch e.Type {
		case "session_meta":
			if b.t.SessionID == "" {
				b.t.SessionID = p.ID
			}
		case "token_usage_record":
			endTurn()
		case "event_msg":
			switch {
			case p.Type == "item_completed" && p.Item.Type == "UserMessage":
				sawUserItem = true
				var parts []string
				for _, c := range p.Item.Content {
					parts = append(parts, c.Text)
				}
				b.prompt(strings.Join(parts, "\n"))
			case p.Type == "user_message" && !sawUserItem:
				b.prompt(p.Message)
			}
		case "response_item":
			group := "turn-" + strconv.Itoa(turn)
			switch p.Type {
			case "message":
				endTurn()
				text := codexText(p.Content)
				if p.Role == "assistant" {
					b.say(text)
				} else if p.Role == "user" && !promptItems && !codexInjected(text) {
					b.prompt(text)
				}
			case "function_call", "custom_tool_call", "local_shell_call":
				if answered && !records {
					endTurn() // no response records: a call after a result starts a turn
					group = "turn-" + strconv.Itoa(turn)
				}
				open = true
				var arg string
				switch p.Type {
				case "function_call":
					arg = mainArg(argMap(p.Arguments))
				case "custom_tool_call":
					arg = patchSummary(p.Input)
				default:
					arg = argString(anySlice(p.Action.Command))
					if p.Name == "" {
						p.Name = "local_shell"
					}
				}
				b.call(group, p.CallID, p.Name, arg)
			case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
				answered = true
				text, failed := codexResult(p.Output)
				b.result(p.CallID, text, failed, i)
			}
		}
	}
	if b.t.SessionID == "" {
		return Trail{}, fmt.Errorf("codex: not a Codex rollout: no session_meta line")
	}
	return b.done(), nil
}

// CutSession implements Trailer: the rollout's lines up to the step's last
// tool output. `codex exec resume` rebuilds the history from the
// response_item lines kept.
func (Codex) CutSession(session []byte, step Step) ([]byte, error) {
	return cutLines("codex", session, step)
}

// codexInjected says whether a user-role message is context Codex adds
// (environment, AGENTS.md, skills), not a prompt.
func codexInjected(text string) bool {
	text = strings.TrimSpace(text)
	return strings.HasPrefix(text, "<") || strings.HasPrefix(text, "# AGENTS.md instructions")
}

// codexText joins the text parts of a message's content.
func codexText(raw json.RawMessage) string {
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// codexExit is the header Codex puts before a shell command's output.
var codexExit = regexp.MustCompile(`(?m)^Process exited with code (-?\d+)$`)

// codexResult is a tool output's text and whether it failed. A string
// output of exec_command carries a header (chunk id, wall time, exit code,
// token count) before "Output:"; older outputs are {content, success}.
func codexResult(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var o struct {
			Content string `json:"content"`
			Output  string `json:"output"`
			Success *bool  `json:"success"`
		}
		json.Unmarshal(raw, &o)
		text := o.Content + o.Output
		return text, o.Success != nil && !*o.Success
	}
	failed := false
	if m := codexExit.FindStringSubmatch(s); m != nil {
		failed = m[1] != "0"
		if _, out, ok := strings.Cut(s, "\nOutput:\n"); ok {
			s = out
		}
	}
	return s, failed
}

// patchFile names the files an apply_patch input touches.
var patchFile = regexp.MustCompile(`(?m)^\*\*\* (?:Add|Update|Delete) File: (.+)$`)

// patchSummary is what an apply_patch (or other free-form tool) input does:
// the files it touches, or its first line.
func patchSummary(input string) string {
	var files []string
	for _, m := range patchFile.FindAllStringSubmatch(input, -1) {
		files = append(files, relWork(strings.TrimSpace(m[1])))
	}
	if len(files) > 0 {
		return strings.Join(files, ", ")
	}
	return input
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
