package modelserver

import "encoding/json"

// Anthropic Messages API: the stream is message_start, ping, then per
// content block content_block_start / *_delta / content_block_stop, then
// message_delta (stop_reason, usage) and message_stop.

type anthropicBlock struct {
	typ   string
	text  string
	id    string
	name  string
	input json.RawMessage
}

func (m *reply) anthropicBlocks() []anthropicBlock {
	var blocks []anthropicBlock
	if m.text != "" {
		blocks = append(blocks, anthropicBlock{typ: "text", text: m.text})
	}
	for _, c := range m.calls {
		args := c.args
		if c.custom {
			args, _ = json.Marshal(map[string]string{"input": c.input})
		}
		blocks = append(blocks, anthropicBlock{typ: "tool_use", id: newID("toolu_"), name: c.name, input: args})
	}
	return blocks
}

func (m *reply) stopReason() string {
	if len(m.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (m *reply) anthropicUsage(out int) map[string]any {
	return map[string]any{
		"input_tokens":                m.in,
		"output_tokens":               out,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
	}
}

func (m *reply) anthropicMessage() map[string]any {
	var content []any
	for _, b := range m.anthropicBlocks() {
		if b.typ == "text" {
			content = append(content, map[string]any{"type": "text", "text": b.text})
		} else {
			content = append(content, map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
		}
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id": newID("msg_tare_"), "type": "message", "role": "assistant", "model": m.model,
		"content": content, "stop_reason": m.stopReason(), "stop_sequence": nil,
		"usage": m.anthropicUsage(m.out),
	}
}

func (m *reply) anthropicEvents() []sseEvent {
	ev := func(typ string, fields map[string]any) sseEvent {
		fields["type"] = typ
		return sseEvent{name: typ, data: fields}
	}
	events := []sseEvent{
		ev("message_start", map[string]any{"message": map[string]any{
			"id": newID("msg_tare_"), "type": "message", "role": "assistant", "model": m.model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": m.anthropicUsage(1),
		}}),
		ev("ping", map[string]any{}),
	}
	for i, b := range m.anthropicBlocks() {
		if b.typ == "text" {
			events = append(events, ev("content_block_start", map[string]any{
				"index": i, "content_block": map[string]any{"type": "text", "text": ""}}))
			for _, piece := range chunks(b.text, textChunk) {
				events = append(events, ev("content_block_delta", map[string]any{
					"index": i, "delta": map[string]any{"type": "text_delta", "text": piece}}))
			}
		} else {
			events = append(events, ev("content_block_start", map[string]any{
				"index": i, "content_block": map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}}))
			for _, piece := range chunks(string(b.input), argsChunk) {
				events = append(events, ev("content_block_delta", map[string]any{
					"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}))
			}
		}
		events = append(events, ev("content_block_stop", map[string]any{"index": i}))
	}
	events = append(events,
		ev("message_delta", map[string]any{
			"delta": map[string]any{"stop_reason": m.stopReason(), "stop_sequence": nil},
			"usage": m.anthropicUsage(m.out),
		}),
		ev("message_stop", map[string]any{}),
	)
	return events
}
