package engine

import (
	"bytes"
	"io"
	"sync"

	"tare/agent"
)

// liveStream reads an agent's stdout line by line as it comes and publishes its tool calls
// (intermediate events: the app may coalesce them).
type liveStream struct {
	a    agent.Agent
	tail string
	run  *run

	mu  sync.Mutex
	buf []byte
	n   int
}

func newLiveStream(a agent.Agent, tail string, r *run) *liveStream {
	return &liveStream{a: a, tail: tail, run: r}
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

func (l *liveStream) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// line handles one line of the agent's stream.
func (l *liveStream) line(b []byte) {
	_ = b // LIVE-PENDING: agent.ParseLine
}

// teeLines writes to w and to the live stream.
func teeLines(w io.Writer, live *liveStream) io.Writer { return io.MultiWriter(w, live) }
