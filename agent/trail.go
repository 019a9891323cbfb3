package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Trail is an agent's session file read as steps: what a run did, where its
// session can be cut for a native resume, and the events a handoff renders.
type Trail struct {
	SessionID string
	Task      string // the first prompt the operator gave
	// Steps are the model turns that called tools and got every result, in
	// order. Step 0, the project before the run, has no entry.
	Steps []Step
	// Events are the conversation in order: the task, assistant text, tool
	// calls and their results, later prompts.
	Events []Event
}

// Step is one model turn that called tools: one tool, or several issued together.
type Step struct {
	N int // 1-based
	// IDs are the tool-use ids of the turn's calls, in the order the model
	// issued them: the ids tare's hook receives (tool_use_id) and names
	// capsules by.
	IDs []string
	// Tool is a one-line summary: each call's tool name and main argument.
	Tool string
	// Cut is the number of session lines up to and including this step's last
	// tool result: the native cut (CutSession).
	Cut int
	// Events is the number of trail events up to and including this step's
	// results: the handoff cut (Trail.Events[:Events]).
	Events int
}

// The kinds of trail events.
const (
	EventTask       = "task"        // the first prompt
	EventUser       = "user"        // a later prompt (a resume's "Continue.")
	EventAssistant  = "assistant"   // text the model wrote
	EventToolCall   = "tool_call"   // Tool, ID, Text: the main argument
	EventToolResult = "tool_result" // Tool, ID, Text: the output, IsError
)

// Event is one entry of a trail. Text is clipped to maxEventText.
type Event struct {
	Kind    string
	Tool    string
	ID      string
	Text    string
	IsError bool
}

// maxEventText bounds an event's text: enough for a handoff, small for a journal.
const maxEventText = 2000

// Trailer is an agent whose session file tare can read as a trail and cut
// after a step for a native resume (Claude Code, Codex, pi, Gemini CLI).
type Trailer interface {
	// Trail reads a session file (as SessionGlob finds it) into steps.
	Trail(session []byte) (Trail, error)
	// CutSession is the session truncated after step, valid for the agent's
	// resume (ResumeArgs after PlaceSession).
	CutSession(session []byte, step Step) ([]byte, error)
}

// ReadTrail reads a's session file as a trail.
func ReadTrail(a Agent, session []byte) (Trail, error) {
	t, ok := a.(Trailer)
	if !ok {
		return Trail{}, fmt.Errorf("%s: tare cannot read this agent's session as a trail; continue its runs by handoff from the workspace only", a.Name())
	}
	return t.Trail(session)
}

// CutSession is a's session file truncated after step, for a native resume.
func CutSession(a Agent, session []byte, step Step) ([]byte, error) {
	t, ok := a.(Trailer)
	if !ok {
		return nil, fmt.Errorf("%s: tare cannot cut this agent's session; continue by handoff", a.Name())
	}
	return t.CutSession(session, step)
}

// sessionLines splits a JSONL session file into its lines (without "\n");
// a final line without its newline counts, the empty rest after the last
// newline does not.
func sessionLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	return lines
}

// cutLines keeps the first step.Cut lines of a JSONL session.
func cutLines(name string, data []byte, step Step) ([]byte, error) {
	lines := sessionLines(data)
	if step.Cut < 1 || step.Cut > len(lines) {
		return nil, fmt.Errorf("%s: cannot cut the session after step %d: its cut %d is outside the session's %d lines (read the steps from this session file)",
			name, step.N, step.Cut, len(lines))
	}
	var b bytes.Buffer
	for _, l := range lines[:step.Cut] {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// trailBuilder collects events and steps while a session is read line by
// line. A step is opened by the first call of a model turn (its group) and
// complete when every call of it has its result.
type trailBuilder struct {
	t     Trail
	steps []*openStep
	byID  map[string]*openStep
	tools map[string]string // tool-use id -> tool name
}

type openStep struct {
	group   string
	ids     []string
	tools   []string
	pending map[string]bool
	cut     int
	events  int
}

func newTrailBuilder() *trailBuilder {
	return &trailBuilder{byID: map[string]*openStep{}, tools: map[string]string{}}
}

func (b *trailBuilder) event(e Event) {
	e.Text = clip(e.Text, maxEventText)
	b.t.Events = append(b.t.Events, e)
}

// prompt records a prompt from the operator: the first is the task.
func (b *trailBuilder) prompt(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if b.t.Task == "" {
		b.t.Task = text
		b.event(Event{Kind: EventTask, Text: text})
		return
	}
	b.event(Event{Kind: EventUser, Text: text})
}

func (b *trailBuilder) say(text string) {
	if text = strings.TrimSpace(text); text != "" {
		b.event(Event{Kind: EventAssistant, Text: text})
	}
}

// call records a tool call of model turn group; arg is its main argument.
func (b *trailBuilder) call(group, id, tool, arg string) {
	b.event(Event{Kind: EventToolCall, Tool: tool, ID: id, Text: arg})
	if id == "" || b.byID[id] != nil {
		return
	}
	var s *openStep
	if n := len(b.steps); n > 0 && b.steps[n-1].group == group && group != "" {
		s = b.steps[n-1]
	} else {
		s = &openStep{group: group, pending: map[string]bool{}}
		b.steps = append(b.steps, s)
	}
	s.ids = append(s.ids, id)
	s.tools = append(s.tools, summary(tool, arg))
	s.pending[id] = true
	b.byID[id] = s
	b.tools[id] = tool
}

// result records the result of call id, read from session line index line (0-based).
func (b *trailBuilder) result(id, text string, isError bool, line int) {
	b.event(Event{Kind: EventToolResult, Tool: b.tools[id], ID: id, Text: text, IsError: isError})
	s := b.byID[id]
	if s == nil || !s.pending[id] {
		return
	}
	delete(s.pending, id)
	if len(s.pending) == 0 {
		s.cut, s.events = line+1, len(b.t.Events)
	}
}

// done returns the trail: complete steps only (a turn whose tools never
// answered cannot be resumed natively), numbered from 1.
func (b *trailBuilder) done() Trail {
	for _, s := range b.steps {
		if len(s.pending) > 0 {
			continue
		}
		b.t.Steps = append(b.t.Steps, Step{
			N: len(b.t.Steps) + 1, IDs: s.ids, Tool: clip(strings.Join(s.tools, " + "), 160), Cut: s.cut, Events: s.events,
		})
	}
	return b.t
}

// summary is one line for a call: "Bash: ls -la".
func summary(tool, arg string) string {
	arg = oneLine(arg)
	if arg == "" {
		return tool
	}
	return clip(tool+": "+arg, 120)
}

// oneLine is s's first non-empty line, with " …" when more follows.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	first, rest, more := strings.Cut(s, "\n")
	first = strings.TrimSpace(first)
	if more && strings.TrimSpace(rest) != "" {
		return first + " …"
	}
	return first
}

// clip shortens s to at most n runes, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " \n") + "…"
}

// mainArgKeys are the arguments that say what a call does, most telling
// first: shell commands, then paths, then patterns and queries.
var mainArgKeys = []string{"command", "cmd", "file_path", "path", "notebook_path", "pattern", "url", "query", "description", "prompt"}

// mainArg is the argument that says what a call does, with paths below the
// workspace made relative ("/work/a.txt" -> "a.txt").
func mainArg(input map[string]any) string {
	for _, k := range mainArgKeys {
		if v, ok := input[k]; ok {
			if s := argString(v); s != "" {
				return relWork(s)
			}
		}
	}
	keys := make([]string, 0, len(input))
	for k := range input {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s, ok := input[k].(string); ok && s != "" {
			return relWork(s)
		}
	}
	if len(input) == 0 {
		return ""
	}
	data, _ := json.Marshal(input)
	return string(data)
}

// argString is a string argument, or a command given as an argv array
// (["bash", "-lc", "cmd"] gives "cmd").
func argString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var argv []string
		for _, a := range v {
			if s, ok := a.(string); ok {
				argv = append(argv, s)
			}
		}
		if n := len(argv); n >= 3 && slices.Contains([]string{"-c", "-lc"}, argv[n-2]) {
			return argv[n-1]
		}
		return strings.Join(argv, " ")
	}
	return ""
}

// relWork makes a path below the room's workspace relative to it.
func relWork(s string) string {
	if rest, ok := strings.CutPrefix(s, Work+"/"); ok && !strings.ContainsAny(s, " \n") {
		return rest
	}
	return s
}

// argMap decodes a call's arguments (an object, or a JSON string holding one).
func argMap(raw json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		return m
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && json.Unmarshal([]byte(s), &m) == nil {
		return m
	}
	return nil
}

// contentText joins the text of a result's content: a string, or blocks
// with "text" (Anthropic and pi style); other blocks (images) are named.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != "":
			parts = append(parts, b.Text)
		case b.Type != "" && b.Type != "text":
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
