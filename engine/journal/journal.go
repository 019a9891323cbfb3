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
	"sync"
	"time"
)

// JournalFile is the name of a run's journal inside its directory.
const JournalFile = "journal.jsonl"

// Journal is a run's append-only record of events, the source of truth a watcher replays.
// Each event is one JSON line; final events are fsynced before Append returns, so a crash
// loses at most intermediate events that were still in the page cache.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	run  string
	seq  int64
	now  func() time.Time
	path string
}

// OpenJournal opens (or creates) the journal in dir for appending; Seq continues from the
// events already there. A torn last line, left by a crash mid-write, is cut off first.
func OpenJournal(dir string) (*Journal, error) {
	path := filepath.Join(dir, JournalFile)
	events, good, err := readJournal(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := OpenNoFollow(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: %v", err)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: cutting a torn last line: %v", path, err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	j := &Journal{f: f, run: filepath.Base(dir), now: time.Now, path: path}
	if n := len(events); n > 0 {
		j.seq = events[n-1].Seq
	}
	return j, nil
}

// Append stamps e with the run, the next Seq and the time, and writes it. Final events are
// synced to disk before Append returns.
func (j *Journal) Append(e *Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.Seq, e.Run = j.seq, j.run
	if e.Time.IsZero() {
		e.Time = j.now().UTC()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal %s: %v", j.path, err)
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("journal %s: %v", j.path, err)
	}
	if e.Final() {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("journal %s: sync: %v", j.path, err)
		}
	}
	return nil
}

// Close syncs and closes the journal.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.f.Sync(); err != nil {
		j.f.Close()
		return err
	}
	return j.f.Close()
}

// ReadJournal reads every complete event of the journal in dir. A torn last line (a crash
// mid-write) is left out; a bad line elsewhere is an error naming its line number.
func ReadJournal(dir string) ([]Event, error) {
	events, _, err := readJournal(filepath.Join(dir, JournalFile))
	return events, err
}

// readJournal returns the events and the byte length of the well-formed prefix.
func readJournal(path string) ([]Event, int64, error) {
	f, err := OpenNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, 0, err
	}
	var events []Event
	var good int64
	r := bufio.NewReader(bytes.NewReader(data))
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return events, good, nil // a line without its newline is a torn write: not an event
		}
		var e Event
		if jerr := json.Unmarshal(line, &e); jerr != nil {
			if int(good)+len(line) == len(data) {
				return events, good, nil // a torn last line that happens to end in a newline byte
			}
			return nil, 0, fmt.Errorf("journal %s:%d: not an event (%v); the file was edited or is not tare's", path, n, jerr)
		}
		events = append(events, e)
		good += int64(len(line))
	}
}
