package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"tare/engine/journal"
)

// maxSkim bounds what one skimming poll reads: more than maxRead, since skimming a line
// costs a fraction of decoding it.
const maxSkim = 16 << 20

// skimKeep is how many tool calls of a live tail a skim keeps: the engine's RunState keeps
// the same number (its maxTools) for a tail's view, so the store holds what a full read
// gives it.
const skimKeep = 200

// skimmed is one complete line of a journal as a skim left it: a tool call found by its
// prefix (tail set, not decoded yet), or any other event, decoded.
type skimmed struct {
	start, end int32 // the line is buf[start:end]
	seq        int64
	tail       string
	ev         *journal.Event
	keep       bool
}

// skimLines turns the complete lines of buf into the events the store needs, and only
// those. Most of a big run's lines are tool calls, and the store keeps of a tool call only
// its tail's count and usage (from its tail's last call) and the last skimKeep calls of a
// tail still running; it lets go of them all when the tail finishes. So a tool call is
// decoded only when it is among the last skimKeep of its tail before the journal's end, or
// the last before its tail starts again or finishes, or the last of a read that stopped
// short of the end (a big journal is read in steps: Tools may then hold fewer than
// skimKeep, and the tail view reads its calls itself); every other line is decoded and kept, and
// so is the last line (the run's newest Seq and time). The events returned are a
// subsequence of the journal's, in order, so RunState.Apply folds them as it folds all.
// The tail view reads its own tail's calls from the journal (loadHistory).
func (f *follower) skimLines(buf []byte) []journal.Event {
	if len(buf) > math.MaxInt32 {
		return f.decodeLines(buf) // one line of gigabytes: its records would not fit int32
	}
	// One record per line (a million lines are many records: the slice is made once).
	lines := make([]skimmed, 0, bytes.Count(buf, []byte{'\n'}))
	all := buf
	names := map[string]string{} // one string per tail id, not one per line
	at := f.off
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		line := buf[:i+1]
		buf = buf[i+1:]
		at += int64(len(line))
		start, end := int32(len(all)-len(line)-len(buf)), int32(len(all)-len(buf))
		if seq, tail, ok := skimToolCall(line); ok {
			name, seen := names[string(tail)]
			if !seen {
				name = string(tail)
				names[name] = name
			}
			lines = append(lines, skimmed{start: start, end: end, seq: seq, tail: name})
			continue
		}
		var e journal.Event
		if err := json.Unmarshal(line, &e); err != nil {
			if len(buf) == 0 {
				break // a torn write ending in a newline: wait for the writer to cut it
			}
			f.bad++
			f.last = fmt.Errorf("journal %s: a line at byte %d is not an event (%v); it is left out", f.path, at-int64(len(line)), err)
			lines = append(lines, skimmed{start: start, end: end})
			continue
		}
		lines = append(lines, skimmed{start: start, end: end, seq: e.Seq, ev: &e, keep: true})
	}
	// From the end: which tool calls the store needs. When more of the journal follows this
	// read, the next read's calls are the later ones: a tail's last call here is enough.
	end := skimKeep
	if f.more {
		end = 1
	}
	room := map[string]int{}
	kept := 0
	for i := len(lines) - 1; i >= 0; i-- {
		l := &lines[i]
		switch {
		case l.ev != nil:
			if s := l.ev.TailStarted; s != nil {
				room[s.ID] = 1
			} else if fin := l.ev.TailFinished; fin != nil {
				room[fin.ID] = 1
			}
		case l.tail != "":
			n, ok := room[l.tail]
			if !ok {
				n = end
			}
			if n > 0 || l.tail == "original" || i == len(lines)-1 {
				l.keep = true
				room[l.tail] = n - 1
			}
		}
		if l.keep {
			kept++
		}
	}
	events := make([]journal.Event, 0, kept)
	for _, l := range lines {
		line := all[l.start:l.end]
		f.consume(line)
		if !l.keep || (l.seq != 0 && l.seq <= f.seq) {
			continue
		}
		e := l.ev
		if e == nil {
			e = new(journal.Event)
			if err := json.Unmarshal(line, e); err != nil {
				f.bad++
				f.last = fmt.Errorf("journal %s: a line at byte %d is not an event (%v); it is left out", f.path, f.off-int64(len(line)), err)
				continue
			}
		}
		if e.Seq != 0 {
			f.seq = e.Seq
		}
		events = append(events, *e)
	}
	// The Seq of a tool call left out still counts: a journal read again from its start
	// skips it.
	for _, l := range lines {
		f.seq = max(f.seq, l.seq)
	}
	return events
}

// skimToolCall reads the Seq and the tail of a tool call line as engine.Journal writes it
// (an Event marshalled: seq, time, run, then the kind), without decoding the line. ok is
// false for any other line, and for a tool call whose run or tail holds an escape: those
// are decoded in full.
func skimToolCall(line []byte) (seq int64, tail []byte, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return 0, nil, false
	}
	i := 0
	for ; i < len(rest) && i < 18 && rest[i] >= '0' && rest[i] <= '9'; i++ {
		seq = seq*10 + int64(rest[i]-'0')
	}
	if i == 0 {
		return 0, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"time":"`)); !ok {
		return 0, nil, false
	}
	if rest, ok = skipString(rest); !ok {
		return 0, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"run":"`)); !ok {
		return 0, nil, false
	}
	if rest, ok = skipString(rest); !ok {
		return 0, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"tool_call":{"tail":"`)); !ok {
		return 0, nil, false
	}
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return 0, nil, false
	}
	return seq, rest[:j], true
}

// skipString skips a JSON string's body and its closing quote; false when it holds an
// escape (a quote inside it would be one).
func skipString(b []byte) ([]byte, bool) {
	j := bytes.IndexByte(b, '"')
	if j < 0 || bytes.IndexByte(b[:j], '\\') >= 0 {
		return nil, false
	}
	return b[j+1:], true
}
