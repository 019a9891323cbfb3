package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tare/agent"
)

// TestWatchAnswerKnowsEachAgentsFinalResult: a writer's room is stopped grace after its
// stream carries the agent's final result, in each agent's own shape (streams captured from
// the pinned CLIs): Claude Code's result, Codex's turn.completed, pi's agent_end, Gemini
// CLI's result. A stream that went on after a result (pi retrying a failed answer) is not.
func TestWatchAnswerKnowsEachAgentsFinalResult(t *testing.T) {
	cases := []struct {
		agent agent.Agent
		file  string
	}{
		{agent.Claude{}, "claude_stream.jsonl"},
		{agent.Codex{}, "codex_exec_events.jsonl"},
		{agent.Pi{}, "pi_json_events.jsonl"},
		{agent.Gemini{}, "gemini_stream_json.jsonl"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "agent", "testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			events := filepath.Join(t.TempDir(), "events.jsonl")
			os.WriteFile(events, data, 0o644)
			ctx, stop := context.WithCancelCause(context.Background())
			w := watchAnswer(c.agent, events, 50*time.Millisecond, stop)
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the room was not stopped after the answer")
			}
			if !w.end() || !errors.Is(context.Cause(ctx), errAnswered) {
				t.Fatalf("stopped %v cause %v", w.stopped, context.Cause(ctx))
			}
		})
	}
	t.Run("went on after a result", func(t *testing.T) {
		data, _ := os.ReadFile(filepath.Join("..", "agent", "testdata", "pi_json_events.jsonl"))
		// pi's retry after a failed answer: agent_end, then the next attempt's tool call.
		data = append(data, `{"type":"auto_retry_start","attempt":1,"delayMs":2000}`+"\n"+
			`{"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{"command":"ls"}}`+"\n"...)
		events := filepath.Join(t.TempDir(), "events.jsonl")
		os.WriteFile(events, data, 0o644)
		ctx, stop := context.WithCancelCause(context.Background())
		w := watchAnswer(agent.Pi{}, events, 50*time.Millisecond, stop)
		// Eight polls, forty graces: it would have been stopped by now had the result counted.
		time.Sleep(8 * answerPoll)
		if w.end() || ctx.Err() != nil {
			t.Fatal("a writer that went on after a result was stopped as answered")
		}
	})
}
