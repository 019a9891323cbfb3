package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"tare/agent"
	"tare/engine/journal"
	"tare/engine/run"
)

// liveStream reads an agent's stdout line by line as it comes and publishes its tool calls
// (intermediate events: the app may coalesce them).
type liveStream struct {
	a    agent.Agent
	tail string
	run  *run.Run

	mu  sync.Mutex
	buf []byte
	n   int
	// produced is set once the stream shows the model's work: a tool call or text.
	produced bool
	usage    journal.Usage
	started  map[string]toolStart
	// onToolEnd, when set, runs after each tool call returns (capsules for agents without
	// an in-agent hook).
	onToolEnd func(id string)
	// beat, when set, hears every line the agent's stream parses to (see run.StallWatch).
	beat func()
	// stop, when set, ends the agent's room: a tool call that cannot be journaled stops the
	// tail, since a run whose record is lost is worth nothing (run.Emit).
	stop context.CancelCauseFunc
}

// toolStart is a tool call seen starting: its name, its main argument and when.
type toolStart struct {
	tool, summary string
	at            time.Time
}

func newLiveStream(a agent.Agent, tail string, r *run.Run) *liveStream {
	return &liveStream{a: a, tail: tail, run: r, started: map[string]toolStart{}}
}

// Write takes stream bytes; complete lines are parsed, the rest waits for its newline.
func (l *liveStream) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.line(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// flush parses a last line that came without its newline.
func (l *liveStream) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(l.buf)
		l.buf = nil
	}
}

// producedAny reports whether the agent produced anything: a tool call or the model's text.
// A timeout before that says nothing about the agent.
func (l *liveStream) producedAny() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.produced
}

func (l *liveStream) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// line handles one line of the agent's stream.
func (l *liveStream) line(b []byte) {
	ev, ok := agent.ParseLine(l.a, b)
	if !ok {
		return
	}
	if l.beat != nil {
		l.beat()
	}
	if ev.Kind == agent.LiveToolStart || ev.Kind == agent.LiveToolEnd || ev.Kind == agent.LiveText && ev.Summary != "" && !ev.IsError {
		l.produced = true
	}
	switch ev.Kind {
	case agent.LiveToolStart:
		l.started[ev.ID] = toolStart{tool: ev.Tool, summary: ev.Summary, at: time.Now()}
	case agent.LiveToolEnd:
		st, seen := l.started[ev.ID]
		delete(l.started, ev.ID)
		tool, summary := ev.Tool, ev.Summary
		var secs float64
		if seen {
			tool, summary, secs = st.tool, st.summary, time.Since(st.at).Seconds()
		}
		l.n++
		if l.onToolEnd != nil {
			l.onToolEnd(ev.ID)
		}
		if err := l.run.Emit(journal.Event{ToolCall: &journal.ToolCall{Tail: l.tail, Tool: tool, Summary: summary, Seconds: secs, Calls: l.n, Usage: l.usage}}); err != nil && l.stop != nil {
			l.stop(fmt.Errorf("journal: %w", err))
		}
	case agent.LiveText, agent.LiveResult:
		switch {
		case ev.Usage.Input+ev.Usage.Output == 0:
		case ev.Kind == agent.LiveResult || ev.Usage.Thread:
			l.usage = usageOf(ev.Usage) // a total, not a part
		default:
			l.usage = l.usage.Add(usageOf(ev.Usage))
		}
	}
}

// teeLines writes to w and to the live stream.
func teeLines(w io.Writer, live *liveStream) io.Writer { return io.MultiWriter(w, live) }
