package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tare/engine/journal"
)

// maxRead bounds what one poll reads of a journal, so a huge journal is taken in steps and
// the app keeps drawing in between.
const maxRead = 4 << 20

// follower reads a run's journal as another process appends to it: each poll returns the
// complete lines written since the last one. It never holds the file open between polls.
type follower struct {
	dir  string
	path string
	off  int64 // bytes of the journal already turned into events
	seq  int64 // the last Seq returned
	bad  int   // lines that were not events (left out)
	last error
	// tail is the last line read (its last tailLen bytes when longer; a line starts with its
	// seq, so it differs from every other) and file the file read: when either differs at
	// the next poll, the journal was replaced.
	tail []byte
	file os.FileInfo
	// watched is set while inotify watches the run's folder: it is then read when told.
	watched bool
	// skim leaves out the tool calls the store would not keep (see skimLines), so a run of a
	// million events is taken in without decoding them; more is set while a poll stopped at
	// its read limit with more written.
	skim, more bool
	buf        []byte
}

// tailLen is how much of what was read the follower keeps to recognise its journal.
const tailLen = 4096

func newFollower(dir string) *follower {
	return &follower{dir: dir, path: filepath.Join(dir, journal.JournalFile)}
}

// poll returns the events appended since the last poll. A line still being written (no
// newline yet) waits for the next poll. A journal that shrank, is another file, or no longer
// ends where the last read ended was replaced: it is read again from the start, and events
// already returned are skipped by their Seq. (A resume only cuts a torn last line, which was
// never read, so its journal is followed on from where it was.)
func (f *follower) poll() ([]journal.Event, error) {
	info, err := os.Stat(f.path)
	if err != nil {
		return nil, err
	}
	if info.Size() < f.off || (f.file != nil && !os.SameFile(f.file, info)) {
		f.restart()
	}
	f.file = info
	if info.Size() == f.off {
		return nil, nil
	}
	file, err := journal.OpenNoFollow(f.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if len(f.tail) > 0 {
		seen := make([]byte, len(f.tail))
		if _, err := file.ReadAt(seen, f.off-int64(len(seen))); err != nil || !bytes.Equal(seen, f.tail) {
			f.restart()
		}
	}
	limit := int64(maxRead)
	if f.skim {
		limit = maxSkim
	}
	n := min(info.Size()-f.off, limit)
	f.more = n < info.Size()-f.off
	var buf []byte
	if f.skim && int64(cap(f.buf)) >= n {
		buf = f.buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if f.skim {
		// A big journal is read through one buffer; a followed one lets go of it.
		f.buf = nil
		if f.more {
			f.buf = buf
		}
	}
	got, err := file.ReadAt(buf, f.off)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("journal %s: %v", f.path, err)
	}
	buf = buf[:got]
	if bytes.IndexByte(buf, '\n') < 0 && n < info.Size()-f.off {
		// One line longer than a step (a long report): read up to its end.
		buf = make([]byte, info.Size()-f.off)
		got, err = file.ReadAt(buf, f.off)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("journal %s: %v", f.path, err)
		}
		buf = buf[:got]
	}
	if f.skim {
		return f.skimLines(buf), nil
	}
	return f.decodeLines(buf), nil
}

// decodeLines turns the complete lines of buf into events, every one of them.
func (f *follower) decodeLines(buf []byte) []journal.Event {
	var events []journal.Event
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		line := buf[:i+1]
		var e journal.Event
		if err := json.Unmarshal(line, &e); err != nil {
			if len(buf) == len(line) {
				// A torn write that happens to end in a newline: the writer cuts it when it
				// reopens the journal, so wait rather than skip what may be rewritten.
				break
			}
			f.bad++
			f.last = fmt.Errorf("journal %s: a line at byte %d is not an event (%v); it is left out", f.path, f.off, err)
		} else if e.Seq == 0 || e.Seq > f.seq {
			if e.Seq != 0 {
				f.seq = e.Seq
			}
			events = append(events, e)
		}
		f.consume(line)
		buf = buf[i+1:]
	}
	return events
}

// consume marks line as read.
func (f *follower) consume(line []byte) {
	f.off += int64(len(line))
	f.tail = append(f.tail[:0], line[max(len(line)-tailLen, 0):]...)
}

// restart reads the journal again from its start.
func (f *follower) restart() {
	f.off, f.tail = 0, f.tail[:0]
}
