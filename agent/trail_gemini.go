package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// geminiMessage is a message of a Gemini CLI session
// (~/.gemini/tmp/<project>/chats/session-*.jsonl): a line of its own, or an entry of a
// {"$set": {"messages": [...]}} line (how a resume writes the history again). A message
// is written again when it changes (a model turn once more when its tool calls are done),
// so the last line of an id wins, in the place of its first; but the history a resume
// writes gives a model turn's calls as functionCall parts of its content, not as
// toolCalls, so calls once recorded are kept.
type geminiMessage struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []geminiCall    `json:"toolCalls"`
}

// geminiCall is a recorded tool call with its result.
type geminiCall struct {
	Name   string         `json:"name"`
	Args   map[string]any `json:"args"`
	Status string         `json:"status"`
	Result []struct {
		FunctionResponse struct {
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	} `json:"result"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

// calls are a model message's tool calls: toolCalls, or the functionCall parts of its
// content (a resume's rewritten history, every call done).
func (m geminiMessage) calls() []geminiCall {
	if len(m.ToolCalls) > 0 {
		return m.ToolCalls
	}
	var parts []struct {
		FunctionCall *struct {
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"functionCall"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var out []geminiCall
	for _, p := range parts {
		if p.FunctionCall != nil {
			out = append(out, geminiCall{Name: p.FunctionCall.Name, Args: p.FunctionCall.Args, Status: "success"})
		}
	}
	return out
}

type geminiLine struct {
	geminiMessage
	SessionID string `json:"sessionId"`
	Set       struct {
		Messages []geminiMessage `json:"messages"`
	} `json:"$set"`
}

// geminiText is a message's text: a string, or parts with text (a user turn's
// functionResponse parts are not text).
func geminiText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// Trail implements Trailer. A step is one model message's tool calls; their ids are
// geminiCallID of the message and their place in it, the ids tare's hook runner gives
// them. A step is cut after the line that records its calls done (Gemini CLI
// writes them with their results before its next model request).
func (Gemini) Trail(session []byte) (Trail, error) {
	type entry struct {
		m     geminiMessage
		calls []geminiCall
		done  int // the first line with its tool calls done, -1 before
	}
	var order []string
	at := map[string]*entry{}
	b := newTrailBuilder()
	see := func(m geminiMessage, line int) {
		if m.ID == "" || (m.Type != "user" && m.Type != "gemini") {
			return
		}
		e, ok := at[m.ID]
		if !ok {
			order = append(order, m.ID)
			e = &entry{done: -1}
			at[m.ID] = e
		}
		e.m = m
		if calls := m.calls(); len(calls) >= len(e.calls) {
			e.calls = calls
		}
		if e.done < 0 && len(e.calls) > 0 && e.calls[0].Status != "" {
			e.done = line
		}
	}
	for i, raw := range sessionLines(session) {
		var l geminiLine
		if json.Unmarshal(raw, &l) != nil {
			continue
		}
		if l.SessionID != "" && b.t.SessionID == "" {
			b.t.SessionID = l.SessionID
		}
		for _, m := range l.Set.Messages {
			see(m, i)
		}
		see(l.geminiMessage, i)
	}
	if b.t.SessionID == "" {
		return Trail{}, fmt.Errorf("gemini: not a Gemini CLI session: no header line with a sessionId")
	}
	for _, id := range order {
		e := at[id]
		m := e.m
		text := geminiText(m.Content)
		if m.Type == "user" {
			if !strings.HasPrefix(strings.TrimSpace(text), "<session_context>") {
				b.prompt(text)
			}
			continue
		}
		b.say(text)
		for k, c := range e.calls {
			b.call(m.ID, geminiCallID(m.ID, k), c.Name, mainArg(c.Args))
		}
		for k, c := range e.calls {
			call := geminiCallID(m.ID, k)
			var out string
			if json.Unmarshal(c.ResultDisplay, &out) != nil || out == "" {
				for _, r := range c.Result {
					out += string(r.FunctionResponse.Response)
				}
			}
			if c.Status != "" && e.done >= 0 {
				b.result(call, out, c.Status != "success" || c.failedCommand(), e.done)
			}
		}
	}
	return b.done(), nil
}

// CutSession implements Trailer: the session's lines up to the one recording the step's
// calls done.
func (Gemini) CutSession(session []byte, step Step) ([]byte, error) {
	return cutLines("gemini", session, step)
}

// exitCode is how Gemini CLI's shell tool tells the model a command failed: the call itself
// has status success.
var exitCode = regexp.MustCompile(`(?m)^Exit Code: ([1-9][0-9]*)`)

// failedCommand says whether the call is a shell command that exited non-zero.
func (c geminiCall) failedCommand() bool {
	for _, r := range c.Result {
		var out struct {
			Output string `json:"output"`
		}
		if json.Unmarshal(r.FunctionResponse.Response, &out) == nil && exitCode.MatchString(out.Output) {
			return true
		}
	}
	return false
}

// geminiMessageTokens is a model message's usage as the session file records it: input is the
// whole prompt, cached the part of it read from cache, thoughts are billed as output.
type geminiMessageTokens struct {
	Tokens *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
	} `json:"tokens"`
}

// SessionRequests implements RequestLister: each model message of session that placed (the
// session file a resume started from, nil for a fresh run) does not hold is one model
// request, with its tokens. A message is written again as it changes; its last line counts.
func (Gemini) SessionRequests(session, placed []byte) []Request {
	old := map[string]bool{}
	for _, raw := range sessionLines(placed) {
		var m geminiMessage
		if json.Unmarshal(raw, &m) == nil && m.Type == "gemini" {
			old[m.ID] = true
		}
	}
	var order []string
	at := map[string]Request{}
	for _, raw := range sessionLines(session) {
		var m struct {
			geminiMessage
			geminiMessageTokens
		}
		if json.Unmarshal(raw, &m) != nil || m.Type != "gemini" || m.ID == "" || old[m.ID] || m.Tokens == nil {
			continue
		}
		if _, ok := at[m.ID]; !ok {
			order = append(order, m.ID)
		}
		t := m.Tokens
		at[m.ID] = Request{Input: t.Input - t.Cached, Output: t.Output + t.Thoughts, CacheRead: t.Cached}
	}
	out := make([]Request, 0, len(order))
	for _, id := range order {
		out = append(out, at[id])
	}
	return out
}
