package workshop

import (
	"encoding/json"
	"path/filepath"

	"tare/agent"
)

// Unknown is what the report says of a figure the writer's agent does not report: never 0,
// which would read as a measurement.
const Unknown = "unknown"

// served is what a writer's own stream and session say it ran with, each figure with where it
// was read, or nil and why it is unknown.
type served struct {
	Window            *int64
	WindowEvidence    string
	Reasoning         *int64
	ReasoningEvidence string
	Effort            string
	EffortEvidence    string
}

// servedOf reads the stream (events.jsonl) and the collected session (transcripts/session.jsonl)
// of each attempt folder of a writer of agent name, in order. A resumed session continues
// the same file, so a running total is its last value and a per-message figure is counted once
// per message.
func servedOf(name string, dirs []string) served {
	var sv served
	maxOf := func(p **int64, v int64) {
		if *p == nil || v > **p {
			*p = &v
		}
	}
	switch name {
	case "claude":
		sv.ReasoningEvidence = "unknown: Claude Code's stream counts thinking inside its output tokens"
		sv.EffortEvidence = "unknown: Claude Code's stream and session do not name the effort used"
		sv.WindowEvidence = "unknown: no result event in the stream"
		for _, d := range dirs {
			eachLine(filepath.Join(d, "events.jsonl"), func(line []byte) {
				var e struct {
					Type       string `json:"type"`
					ModelUsage map[string]struct {
						ContextWindow int64 `json:"contextWindow"`
					} `json:"modelUsage"`
				}
				if json.Unmarshal(line, &e) != nil || e.Type != "result" {
					return
				}
				for _, m := range e.ModelUsage {
					if m.ContextWindow > 0 {
						maxOf(&sv.Window, m.ContextWindow)
						sv.WindowEvidence = "the stream's result event, modelUsage contextWindow"
					}
				}
			})
		}
	case "codex":
		sv.WindowEvidence = "unknown: no token_count event in the collected session"
		sv.ReasoningEvidence = "unknown: no token count in the stream or the collected session"
		sv.EffortEvidence = "unknown: the collected session's turn_context names no effort (the model's default)"
		// The session's count is preferred; the stream's where no session was collected.
		var streamReasoning, sessionReasoning *int64
		for _, d := range dirs {
			eachLine(filepath.Join(d, "events.jsonl"), func(line []byte) {
				var e struct {
					Type  string `json:"type"`
					Usage *struct {
						Reasoning int64 `json:"reasoning_output_tokens"`
					} `json:"usage"`
				}
				if json.Unmarshal(line, &e) == nil && e.Type == "turn.completed" && e.Usage != nil {
					// The thread's running total: its largest is the session's.
					maxOf(&streamReasoning, e.Usage.Reasoning)
				}
			})
			eachLine(filepath.Join(d, "transcripts", "session.jsonl"), func(line []byte) {
				var e struct {
					Type    string `json:"type"`
					Payload struct {
						Type   string `json:"type"`
						Effort string `json:"effort"`
						Mode   struct {
							Settings struct {
								Effort string `json:"reasoning_effort"`
							} `json:"settings"`
						} `json:"collaboration_mode"`
						Info *struct {
							Window int64 `json:"model_context_window"`
							Total  struct {
								Reasoning *int64 `json:"reasoning_output_tokens"`
							} `json:"total_token_usage"`
						} `json:"info"`
					} `json:"payload"`
				}
				if json.Unmarshal(line, &e) != nil {
					return
				}
				switch {
				case e.Type == "turn_context":
					if eff := firstOf(e.Payload.Effort, e.Payload.Mode.Settings.Effort); eff != "" {
						sv.Effort, sv.EffortEvidence = eff, "the collected session's turn_context effort"
					}
				case e.Payload.Type == "token_count" && e.Payload.Info != nil:
					if e.Payload.Info.Window > 0 {
						maxOf(&sv.Window, e.Payload.Info.Window)
						sv.WindowEvidence = "the collected session's token_count model_context_window"
					}
					if r := e.Payload.Info.Total.Reasoning; r != nil {
						maxOf(&sessionReasoning, *r)
					}
				}
			})
		}
		switch {
		case sessionReasoning != nil:
			sv.Reasoning, sv.ReasoningEvidence = sessionReasoning, "the collected session's token_count total reasoning_output_tokens"
		case streamReasoning != nil:
			sv.Reasoning, sv.ReasoningEvidence = streamReasoning, "the stream's turn.completed usage reasoning_output_tokens (the thread's total)"
		}
	case "pi":
		sv.WindowEvidence = "unknown: pi's stream and session do not name the model's context window"
		sv.ReasoningEvidence = "unknown: pi's usage has no reasoning count"
		sv.EffortEvidence = "unknown: no thinking_level_change in the collected session"
		for _, d := range dirs {
			eachLine(filepath.Join(d, "transcripts", "session.jsonl"), func(line []byte) {
				var e struct {
					Type  string `json:"type"`
					Level string `json:"thinkingLevel"`
				}
				if json.Unmarshal(line, &e) == nil && e.Type == "thinking_level_change" && e.Level != "" {
					sv.Effort, sv.EffortEvidence = e.Level, "the collected session's thinking_level_change thinkingLevel"
				}
			})
		}
	case "gemini":
		sv.WindowEvidence = "unknown: Gemini CLI's stream and session do not name the model's context window"
		sv.ReasoningEvidence = "unknown: no message tokens in the collected session"
		sv.EffortEvidence = "unknown: Gemini CLI's stream and session do not name a thinking budget"
		thoughts := map[string]int64{}
		for _, d := range dirs {
			eachLine(filepath.Join(d, "transcripts", "session.jsonl"), func(line []byte) {
				var v any
				if json.Unmarshal(line, &v) == nil {
					geminiThoughts(v, thoughts)
				}
			})
		}
		if len(thoughts) > 0 {
			var n int64
			for _, t := range thoughts {
				n += t
			}
			sv.Reasoning, sv.ReasoningEvidence = &n, "the collected session's messages, tokens.thoughts summed"
		}
	default:
		sv.WindowEvidence, sv.ReasoningEvidence, sv.EffortEvidence = "unknown: not read for this agent", "unknown: not read for this agent", "unknown: not read for this agent"
	}
	return sv
}

// geminiThoughts finds every message (an object with an id and tokens.thoughts) in a line of
// Gemini CLI's session file, which writes whole message lists and single messages alike.
func geminiThoughts(v any, out map[string]int64) {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["id"].(string); ok {
			if tok, ok := x["tokens"].(map[string]any); ok {
				if t, ok := tok["thoughts"].(float64); ok {
					out[id] = int64(t)
				}
			}
		}
		for _, c := range x {
			geminiThoughts(c, out)
		}
	case []any:
		for _, c := range x {
			geminiThoughts(c, out)
		}
	}
}

// eachLine passes each line of the file at p, read a chunk at a time.
func eachLine(p string, fn func([]byte)) {
	f := &agent.StreamFile{Path: p}
	for {
		_, more, err := f.Read(0, fn)
		if err != nil || !more {
			break
		}
	}
	if rest := f.Pending(); len(rest) > 0 {
		fn(rest)
	}
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
