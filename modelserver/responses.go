package modelserver

import (
	"time"
)

// OpenAI Responses API: the stream is response.created,
// response.in_progress, then per output item output_item.added, its parts
// (content_part.added, output_text.delta..., output_text.done,
// content_part.done for a message; function_call_arguments.delta / .done
// for a function call), output_item.done, and finally response.completed
// carrying the usage. Every event has a sequence_number.

func (m *reply) responsesItems() []map[string]any {
	if m.respID != "" {
		return m.items
	}
	m.respID = newID("resp_tare_")
	m.created = time.Now().Unix()
	if m.text != "" {
		m.items = append(m.items, map[string]any{
			"type": "message", "id": newID("msg_tare_"), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": m.text, "annotations": []any{}}},
		})
	}
	for _, c := range m.calls {
		if c.custom {
			m.items = append(m.items, map[string]any{
				"type": "custom_tool_call", "id": newID("ctc_tare_"), "call_id": newID("call_"),
				"name": c.name, "input": c.input, "status": "completed",
			})
			continue
		}
		m.items = append(m.items, map[string]any{
			"type": "function_call", "id": newID("fc_tare_"), "call_id": newID("call_"),
			"name": c.name, "arguments": string(c.args), "status": "completed",
		})
	}
	return m.items
}

func (m *reply) responsesUsage() map[string]any {
	return map[string]any{
		"input_tokens":          m.in,
		"input_tokens_details":  map[string]any{"cached_tokens": 0},
		"output_tokens":         m.out,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          m.in + m.out,
	}
}

// responsesObject is the response object; while in progress it has no
// output and no usage.
func (m *reply) responsesObject(status string, done bool) map[string]any {
	items := m.responsesItems()
	r := map[string]any{
		"id": m.respID, "object": "response", "created_at": m.created, "status": status,
		"error": nil, "incomplete_details": nil, "model": m.model,
		"output": []any{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": nil,
	}
	if done {
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = it
		}
		r["output"] = out
		r["usage"] = m.responsesUsage()
	}
	return r
}

func (m *reply) responsesEvents() []sseEvent {
	var events []sseEvent
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		events = append(events, sseEvent{name: typ, data: fields})
	}
	ev("response.created", map[string]any{"response": m.responsesObject("in_progress", false)})
	ev("response.in_progress", map[string]any{"response": m.responsesObject("in_progress", false)})
	for i, it := range m.responsesItems() {
		id := it["id"]
		switch it["type"] {
		case "message":
			text := m.text
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
			ev("response.content_part.added", map[string]any{"output_index": i, "item_id": id, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, piece := range chunks(text, textChunk) {
				ev("response.output_text.delta", map[string]any{"output_index": i, "item_id": id, "content_index": 0, "delta": piece})
			}
			ev("response.output_text.done", map[string]any{"output_index": i, "item_id": id, "content_index": 0, "text": text})
			ev("response.content_part.done", map[string]any{"output_index": i, "item_id": id, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case "function_call":
			args, _ := it["arguments"].(string)
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"type": "function_call", "id": id, "call_id": it["call_id"], "name": it["name"],
				"arguments": "", "status": "in_progress"}})
			for _, piece := range chunks(args, argsChunk) {
				ev("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": id, "delta": piece})
			}
			ev("response.function_call_arguments.done", map[string]any{"output_index": i, "item_id": id, "arguments": args})
		case "custom_tool_call":
			input, _ := it["input"].(string)
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"type": "custom_tool_call", "id": id, "call_id": it["call_id"], "name": it["name"],
				"input": "", "status": "in_progress"}})
			ev("response.custom_tool_call_input.delta", map[string]any{"output_index": i, "item_id": id, "delta": input})
			ev("response.custom_tool_call_input.done", map[string]any{"output_index": i, "item_id": id, "input": input})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": m.responsesObject("completed", true)})
	return events
}
