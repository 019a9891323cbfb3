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
