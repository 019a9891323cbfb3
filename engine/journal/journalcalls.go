package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// toolCallKey starts a tool call event's body. Marshalled JSON escapes every quote inside a
// string, so these bytes appear in a journal line only as the key of a tool call.
var toolCallKey = []byte(`"tool_call":`)

// ReadJournalOutline reads every complete event of the journal in dir but its tool calls,
// which it skips without decoding: what a run's tails are, their sides and how they ended,
// for a reader that needs no step (a tail's detail, a search). Most of a big run's lines
// are tool calls, so a run of a million events is read in the time it takes to find its
// newlines, and only its few other events are held. A torn last line is left out, and a
// bad line elsewhere is an error naming its line number, as for ReadJournal.
func ReadJournalOutline(dir string) ([]Event, error) {
	path := filepath.Join(dir, JournalFile)
	f, err := OpenNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var events []Event
	var long []byte
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long, n = append(long, line...), n-1 // a line longer than the buffer: read on
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if err == io.EOF {
			return events, nil // a line without its newline is a torn write: not an event
		}
		if err != nil {
			return nil, fmt.Errorf("journal %s: %v", path, err)
		}
		if bytes.Contains(line, toolCallKey) {
			continue
		}
		var e Event
		if jerr := json.Unmarshal(line, &e); jerr != nil {
			if _, perr := r.Peek(1); perr == io.EOF {
				return events, nil // a torn last line that happens to end in a newline byte
			}
			return nil, fmt.Errorf("journal %s:%d: not an event (%v); the file was edited or is not tare's", path, n, jerr)
		}
		events = append(events, e)
	}
}
