package journal

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenNoFollowRefusesWhatIsNotTaresFile: a symlink, a fifo (without blocking) and a
// hard link in a run file's place are refused, each in one line naming it, and the file a
// link names keeps its bytes (O_TRUNC included); a regular file and a new one open.
func TestOpenNoFollowRefusesWhatIsNotTaresFile(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(t.TempDir(), "host")
	if err := os.WriteFile(host, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(dir, "sym")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(host, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	for name, want := range map[string]string{"sym": "is a symlink", "dangling": "is a symlink", "fifo": "is a fifo", "hard": "has 2 hard links"} {
		p := filepath.Join(dir, name)
		f, err := OpenNoFollow(p, flags, 0o644)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", name)
			continue
		}
		if !strings.Contains(err.Error(), p+" "+want) || !strings.Contains(err.Error(), "fix:") {
			t.Errorf("%s: %v, want %q and the fix", name, err, want)
		}
	}
	if b, _ := os.ReadFile(host); string(b) != "keep\n" {
		t.Errorf("the host file now holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("the dangling link's target was created")
	}
	// A fifo opened for reading and writing does not block at open: it is refused by type.
	if f, err := OpenNoFollow(filepath.Join(dir, "fifo"), os.O_RDWR, 0); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		if f != nil {
			f.Close()
		}
		t.Errorf("a fifo opened O_RDWR: %v", err)
	}
	for _, name := range []string{"new", "new"} { // created, then opened again and truncated
		f, err := OpenNoFollow(filepath.Join(dir, name), flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("x"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new")); string(b) != "x" {
		t.Errorf("the regular file holds %q, want %q", b, "x")
	}
}

// TestReadersNeverFollowOrBlock: a run folder whose journal is a symlink to another run's
// journal, or a fifo nobody writes, is refused by every reader of the journal (resume reads
// it first), in one line naming the file, without blocking; a hard-linked copy of a run
// (cp -al) still reads, since reading another name of the same bytes writes nothing.
func TestReadersNeverFollowOrBlock(t *testing.T) {
	real := t.TempDir()
	j, err := OpenJournal(real)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(&Event{RunStarted: &RunStarted{}}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	readers := map[string]func(string) ([]Event, error){"ReadJournal": ReadJournal, "ReadJournalOutline": ReadJournalOutline}
	for kind, want := range map[string]string{"symlink": "is a symlink", "fifo": "not a regular file"} {
		dir := t.TempDir()
		p := filepath.Join(dir, JournalFile)
		if kind == "symlink" {
			err = os.Symlink(filepath.Join(real, JournalFile), p)
		} else {
			err = syscall.Mkfifo(p, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		for name, read := range readers {
			done := make(chan error, 1)
			go func() { _, err := read(dir); done <- err }()
			err := <-done // a reader that blocked on the fifo hangs here: the test's own timeout names it
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s of a %s journal: %v, want %q naming %s", name, kind, err, want, p)
			}
		}
	}
	copyDir := t.TempDir()
	if err := os.Link(filepath.Join(real, JournalFile), filepath.Join(copyDir, JournalFile)); err != nil {
		t.Fatal(err)
	}
	for name, read := range readers {
		if events, err := read(copyDir); err != nil || len(events) != 1 {
			t.Errorf("%s of a hard-linked copy: %d events, %v", name, len(events), err)
		}
	}
}
