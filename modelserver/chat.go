package modelserver

import "time"

// OpenAI Chat Completions: the stream is bare "data:" chunks: the role,
// the content pieces, each tool call (id, name, then argument pieces),
// the finish_reason, a last chunk with empty choices and the usage, and
// "data: [DONE]".

func (m *reply) finishReason() string {
	if len(m.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (m *reply) chatUsage() map[string]any {
	return map[string]any{
		"prompt_tokens":         m.in,
		"completion_tokens":     m.out,
		"total_tokens":          m.in + m.out,
		"prompt_tokens_details": map[string]any{"cached_tokens": 0},
	}
}

// chatCall is the wire form of a tool call; custom tools do not exist in
// this dialect, so their input travels as {"input": ...}.
func chatArgs(c toolCall) string {
	if c.custom {
		return `{"input":` + quoteJSON(c.input) + `}`
	}
	return string(c.args)
}

func (m *reply) chatCompletion() map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if m.text != "" {
		msg["content"] = m.text
	}
	if len(m.calls) > 0 {
		var calls []any
		for _, c := range m.calls {
			calls = append(calls, map[string]any{"id": newID("call_"), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": chatArgs(c)}})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": newID("chatcmpl-tare"), "object": "chat.completion", "created": time.Now().Unix(), "model": m.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": m.finishReason(), "logprobs": nil}},
		"usage":   m.chatUsage(),
	}
}

func (m *reply) chatEvents() []sseEvent {
	id, created := newID("chatcmpl-tare"), time.Now().Unix()
	var events []sseEvent
	chunk := func(delta map[string]any, finish any) {
		events = append(events, sseEvent{data: map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": m.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, piece := range chunks(m.text, textChunk) {
		chunk(map[string]any{"content": piece}, nil)
	}
	for i, c := range m.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": newID("call_"), "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""},
		}}}, nil)
		for _, piece := range chunks(chatArgs(c), argsChunk) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": piece},
			}}}, nil)
		}
	}
	chunk(map[string]any{}, m.finishReason())
	events = append(events,
		sseEvent{data: map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": m.model,
			"choices": []any{}, "usage": m.chatUsage(),
		}},
		sseEvent{data: "[DONE]"},
	)
	return events
}
