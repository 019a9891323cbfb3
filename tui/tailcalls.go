package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"

	"tare/engine/journal"
)

// callRef is where the journal holds one tool call: its line's offset and length.
type callRef struct {
	off int64
	n   int32
}

// maxDecoded bounds the calls a list keeps decoded; past it, they are decoded again when
// drawn.
const maxDecoded = 4096

// callList is a tail view's tool calls. Until the first scan of the journal is in, they are
// the store's (pre); after, the scan's places (refs), each decoded only when its row is
// drawn or its step is asked for, so a tail of a million calls costs what the screen shows.
// Rows are keyed by position from 1 ("1", "2"...).
type callList struct {
	path    string
	pre     []journal.ToolCall
	refs    []callRef
	loaded  bool
	decoded map[int]journal.ToolCall
	rows    []row
}

// take adds a scan's calls: a scan from the start, or one in which the tail started over
// (a retry), replaces them.
func (l *callList) take(m tailHistoryMsg) {
	if !l.loaded || m.from == 0 || m.restart {
		l.refs, l.decoded, l.rows = nil, nil, nil
	}
	l.refs = append(l.refs, m.refs...)
	l.loaded = true
}

func (l *callList) len() int {
	if l.loaded {
		return len(l.refs)
	}
	return len(l.pre)
}

// rowsNow is a row per call, without cells (the table fills those it draws).
func (l *callList) rowsNow() []row {
	n := l.len()
	if len(l.rows) > n {
		l.rows = nil
	}
	l.rows = slices.Grow(l.rows, n-len(l.rows))
	for i := len(l.rows); i < n; i++ {
		l.rows = append(l.rows, row{key: strconv.Itoa(i + 1)})
	}
	return l.rows
}

// call is the i-th call (from 0).
func (l *callList) call(i int) (journal.ToolCall, error) {
	if !l.loaded {
		return l.pre[i], nil
	}
	if c, ok := l.decoded[i]; ok {
		return c, nil
	}
	ref := l.refs[i]
	f, err := os.Open(l.path)
	if err != nil {
		return journal.ToolCall{}, err
	}
	defer f.Close()
	line := make([]byte, ref.n)
	if _, err := f.ReadAt(line, ref.off); err != nil {
		return journal.ToolCall{}, fmt.Errorf("journal %s: %v", l.path, err)
	}
	var e journal.Event
	if err := json.Unmarshal(line, &e); err != nil || e.ToolCall == nil {
		return journal.ToolCall{}, fmt.Errorf("journal %s: the line at byte %d is not a tool call (%v); was the journal replaced?", l.path, ref.off, err)
	}
	if l.decoded == nil || len(l.decoded) >= maxDecoded {
		l.decoded = map[int]journal.ToolCall{}
	}
	l.decoded[i] = *e.ToolCall
	return *e.ToolCall, nil
}

// index is a row key's call (from 0), or -1.
func (l *callList) index(key string) int {
	i, err := strconv.Atoi(key)
	if err != nil || i < 1 || i > l.len() {
		return -1
	}
	return i - 1
}

// step is the step a row shows: the call's count, or its position when it has none.
func (l *callList) step(key string) int {
	i := l.index(key)
	if i < 0 {
		return 0
	}
	if c, err := l.call(i); err == nil && c.Calls > 0 {
		return c.Calls
	}
	return i + 1
}

// cells are a row's cells, for the table to draw.
func (l *callList) cells(key string) []cell {
	i := l.index(key)
	if i < 0 {
		return []cell{{"", dim}, {"", plain}, {"", plain}, {"", dim}}
	}
	t, err := l.call(i)
	if err != nil {
		return []cell{{strconv.Itoa(i + 1), dim}, {"?", bad}, {err.Error(), bad}, {"", dim}}
	}
	took := ""
	if t.Seconds > 0 {
		took = fmt.Sprintf("%.1fs", t.Seconds)
	}
	step := t.Calls
	if step == 0 {
		step = i + 1
	}
	return []cell{{strconv.Itoa(step), dim}, {t.Tool, accent}, {t.Summary, plain}, {took, dim}}
}
