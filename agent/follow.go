package agent

import (
	"bytes"
	"io"
	"os"
)

// FollowChunk is how much of a stream file one StreamFile.Read takes at most: a poll of a
// writer with a huge event file costs what a poll of a small one does, and the rest is read
// by the next polls.
const FollowChunk = 4 << 20

// MaxLine is the longest stream line StreamFile keeps whole; a longer one is skipped. The
// agent writes its stream and could make one line as long as it likes, and no line tare reads
// from it comes near this.
const MaxLine = 64 << 20

// StreamFile reads an agent's stream file as it grows, from the offset it has reached, a
// complete line at a time. A file replaced or cut shorter (a resume moved the stopped
// attempt's stream aside and the next attempt started a new one) is read again from its
// start, and Read says so.
type StreamFile struct {
	Path string
	// Reset, when set, is called when the file was replaced or cut, before its new lines.
	Reset func()
	// Longest is the longest line kept whole (MaxLine when 0).
	Longest int
	offset  int64
	partial []byte
	// skipping: the line being read is longer than MaxLine and is dropped up to its end.
	skipping bool
	file     os.FileInfo
}

// Read passes each complete line added since the last Read to fn, reading at most max bytes
// (FollowChunk when max <= 0). reset is true when the file was replaced or cut since the last
// Read: the lines passed are then the new file's, and what was learned from the old one is
// stale. more is true when bytes are left for the next Read. A missing file is no lines.
func (f *StreamFile) Read(max int64, fn func(line []byte)) (reset, more bool, err error) {
	if max <= 0 {
		max = FollowChunk
	}
	file, err := os.Open(f.Path)
	if os.IsNotExist(err) {
		if f.file != nil {
			f.offset, f.partial, f.skipping, f.file = 0, nil, false, nil
			reset = true
			if f.Reset != nil {
				f.Reset()
			}
		}
		return reset, false, nil
	}
	if err != nil {
		return false, false, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return false, false, err
	}
	if f.file != nil && (!os.SameFile(f.file, fi) || fi.Size() < f.offset) {
		f.offset, f.partial, f.skipping = 0, nil, false
		reset = true
		if f.Reset != nil {
			f.Reset()
		}
	}
	f.file = fi
	if fi.Size() <= f.offset {
		return reset, false, nil
	}
	n := fi.Size() - f.offset
	if n > max {
		n, more = max, true
	}
	buf := make([]byte, n)
	got, err := file.ReadAt(buf, f.offset)
	if err != nil && err != io.EOF {
		return reset, more, err
	}
	buf = buf[:got]
	f.offset += int64(got)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			// A line longer than one Read is kept until its end arrives (a result line is one
			// the reader needs whole), up to MaxLine.
			if !f.skipping {
				f.partial = append(f.partial, buf...)
			}
			if longest := f.Longest; len(f.partial) > MaxLine || longest > 0 && len(f.partial) > longest {
				f.partial, f.skipping = nil, true
			}
			break
		}
		if f.skipping {
			f.skipping = false
			buf = buf[i+1:]
			continue
		}
		line := buf[:i]
		if len(f.partial) > 0 {
			line = append(f.partial, line...)
			f.partial = nil
		}
		fn(line)
		buf = buf[i+1:]
	}
	return reset, more, nil
}

// Pending is the last line read so far that has no newline yet: at the end of a run the
// stream's last line may lack one. It stays pending for the next Read.
func (f *StreamFile) Pending() []byte { return f.partial }

// FileEnd is the last n bytes of the file at p (all of it when shorter): what the end of a
// stream or a stderr says, read without reading what came before.
func FileEnd(p string, n int64) []byte {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(fi.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}
