package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine"
)

// scanChunk is how much of a journal one read of a tail's scan takes.
const scanChunk = 4 << 20

// loadHistory reads the tail's tool calls from its run's journal, from byte from on: the
// store keeps only the last few of a live tail and none of a finished one. Only the tail's
// own lines are decoded (a skim finds them, see skimToolCall), so a tail of a run of a
// million events opens without the run being read into memory.
func loadHistory(dir, id string, from int64) tea.Cmd {
	return func() tea.Msg { return scanTail(dir, id, from) }
}

// scanTail reads the tail's tool calls from byte from to the journal's last complete line.
func scanTail(dir, id string, from int64) tailHistoryMsg {
	path := filepath.Join(dir, engine.JournalFile)
	msg := tailHistoryMsg{dir: dir, tail: id, from: from, to: from}
	f, err := os.Open(path)
	if err != nil {
		msg.err = err
		return msg
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() < from {
		msg.from, msg.to = 0, 0 // the journal was replaced: read it again
	}
	buf := make([]byte, scanChunk)
	for {
		n, err := f.ReadAt(buf, msg.to)
		if err != nil && err != io.EOF {
			msg.err = fmt.Errorf("journal %s: %v", path, err)
			return msg
		}
		used := 0
		for {
			i := bytes.IndexByte(buf[used:n], '\n')
			if i < 0 {
				break
			}
			line := buf[used : used+i+1]
			if _, tail, ok := skimToolCall(line); ok {
				if string(tail) == id {
					var e engine.Event
					if json.Unmarshal(line, &e) == nil && e.ToolCall != nil {
						msg.add(e)
					}
				}
			} else if bytes.Contains(line, []byte(`"tail_started"`)) || bytes.Contains(line, []byte(`"tool_call"`)) {
				var e engine.Event
				if json.Unmarshal(line, &e) != nil {
					if used+i+1 == n && n < len(buf) {
						return msg // a torn last line: the next scan reads it whole
					}
				} else {
					msg.add(e)
				}
			}
			used += i + 1
			msg.to += int64(i + 1)
		}
		if n < len(buf) {
			return msg
		}
		if used == 0 {
			buf = make([]byte, 2*len(buf)) // one line longer than a chunk
		}
	}
}

// add takes one of the journal's events into the scan: the tail's tool calls, and its
// start (a retry starts its list over).
func (m *tailHistoryMsg) add(e engine.Event) {
	switch {
	case e.TailStarted != nil && e.TailStarted.ID == m.tail:
		m.tools, m.restart = nil, true
	case e.ToolCall != nil && e.ToolCall.Tail == m.tail:
		m.tools = append(m.tools, *e.ToolCall)
	}
	m.seq = max(m.seq, e.Seq)
}
