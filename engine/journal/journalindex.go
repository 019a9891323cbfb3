package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// JournalIndex is a journal opened lazily: one scan finds where each complete line starts
// (without decoding any), and events are decoded only for the window a reader shows. A run
// of a million events opens in the time it takes to find its newlines, not to decode them.
type JournalIndex struct {
	path string
	f    *os.File
	// offs[i] is where line i starts; offs[len-1] is where the complete lines end.
	offs []int64
}

// indexChunk is how much one read of the scan takes.
const indexChunk = 1 << 20

// OpenJournalIndex indexes the journal in dir. A torn last line (no newline yet) is left out,
// as ReadJournal leaves it out; Refresh takes in what was appended since.
func OpenJournalIndex(dir string) (*JournalIndex, error) {
	path := filepath.Join(dir, JournalFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %v", path, err)
	}
	x := &JournalIndex{path: path, f: f, offs: []int64{0}}
	if err := x.Refresh(); err != nil {
		f.Close()
		return nil, err
	}
	return x, nil
}

// Refresh indexes the complete lines appended since the last scan.
func (x *JournalIndex) Refresh() error {
	buf := make([]byte, indexChunk)
	off := x.offs[len(x.offs)-1]
	for {
		n, err := x.f.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			return fmt.Errorf("journal %s: %v", x.path, err)
		}
		used := 0
		for {
			i := bytes.IndexByte(buf[used:n], '\n')
			if i < 0 {
				break
			}
			used += i + 1
			x.offs = append(x.offs, off+int64(used))
		}
		off += int64(used)
		if n < len(buf) {
			return nil // the end: what is left is a line still being written
		}
		if used == 0 {
			buf = make([]byte, 2*len(buf)) // one line longer than a chunk
		}
	}
}

// Len is how many complete lines the journal holds.
func (x *JournalIndex) Len() int { return len(x.offs) - 1 }

// Window decodes events from..from+n-1 (clipped to the journal). A line that is not an
// event is an error naming its line number, as ReadJournal's.
func (x *JournalIndex) Window(from, n int) ([]Event, error) {
	from = max(min(from, x.Len()), 0)
	to := min(from+max(n, 0), x.Len())
	if from == to {
		return nil, nil
	}
	buf := make([]byte, x.offs[to]-x.offs[from])
	if _, err := x.f.ReadAt(buf, x.offs[from]); err != nil && err != io.EOF {
		return nil, fmt.Errorf("journal %s: %v", x.path, err)
	}
	events := make([]Event, 0, to-from)
	for i := from; i < to; i++ {
		line := buf[x.offs[i]-x.offs[from] : x.offs[i+1]-x.offs[from]]
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("journal %s:%d: not an event (%v); the file was edited or is not tare's", x.path, i+1, err)
		}
		events = append(events, e)
	}
	return events, nil
}

// Close closes the journal's file.
func (x *JournalIndex) Close() error { return x.f.Close() }
