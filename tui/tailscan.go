package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// scanChunk is how much of a journal one read of a tail's scan takes.
const scanChunk = 1 << 20

// loadHistory finds the tail's tool calls in its run's journal, from byte from on: the
// store keeps only the last few of a live tail and none of a finished one. A skim finds
// them (skimToolCall) and none is decoded until it is drawn (callList), so a tail of a
// million calls opens without its calls being read into memory.
func loadHistory(dir, id string, from int64) tea.Cmd {
	return func() tea.Msg { return scanTail(dir, id, from) }
}

// scanTail finds the tail's tool calls (where each is: none is decoded) from byte from to the journal's last complete line.
func scanTail(dir, id string, from int64) tailHistoryMsg {
	path := filepath.Join(dir, journal.JournalFile)
	msg := tailHistoryMsg{dir: dir, tail: id, from: from, to: from}
	f, err := journal.OpenNoFollow(path, os.O_RDONLY, 0)
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
			at := msg.to
			if _, tail, ok := skimToolCall(line); ok {
				if string(tail) == id {
					msg.refs = append(msg.refs, callRef{at, int32(len(line))})
				}
			} else if bytes.Contains(line, []byte(`"tail_started"`)) || bytes.Contains(line, []byte(`"tool_call"`)) {
				var e journal.Event
				if json.Unmarshal(line, &e) != nil {
					if used+i+1 == n && n < len(buf) {
						return msg // a torn last line: the next scan reads it whole
					}
				} else {
					msg.add(e, callRef{at, int32(len(line))})
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

// add takes one of the journal's events that a skim did not place into the scan: a call of
// the tail (at ref), or its start (a retry starts its list over).
func (m *tailHistoryMsg) add(e journal.Event, ref callRef) {
	switch {
	case e.TailStarted != nil && e.TailStarted.ID == m.tail:
		m.refs, m.restart = nil, true
	case e.ToolCall != nil && e.ToolCall.Tail == m.tail:
		m.refs = append(m.refs, ref)
	}
}
