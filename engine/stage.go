package engine

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// agentWords are words that name a coding agent or its maker in a file name: a page folder
// from an agent's workspace may hold its instruction files (CLAUDE.md, AGENTS.md) or its
// settings folder, and a judge who saw them would know who built the page.
var agentWords = []string{"claude", "codex", "gemini", "antigravity", "agy", "agents.md", "anthropic", "openai"}

// maxStage bounds what a page folder may hold for the judge: the copy is made on the host, and
// a folder an agent wrote may hold a file as large as the disk (a sparse one costs it nothing).
const maxStage = 1 << 30

// stagePage copies the page folder src into dst, a fresh folder, for the judge: regular
// files and folders only, never a link (it would be followed when copied, and could point
// anywhere on the host), and nothing hidden or named for an agent. It returns what it left
// out, relative to src.
func stagePage(src, dst string) ([]string, error) {
	var left []string
	var total int64
	// Every file is opened beneath this handle on src, so a folder on the way that became a
	// link is refused, not followed out of the page folder.
	root, err := os.OpenFile(src, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the page folder %s: %v", src, err)
	}
	defer root.Close()
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading the page folder %s: %v", src, err)
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return os.MkdirAll(dst, 0o755)
		}
		if why := leaveOut(d); why != "" {
			left = append(left, rel+" ("+why+")")
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.Mkdir(filepath.Join(dst, rel), 0o755)
		}
		if info, err := d.Info(); err == nil {
			if total += info.Size(); total > maxStage {
				return fmt.Errorf("the page folder %s holds more than %d MB (at %s); fix: judge a folder with only the page's files", src, maxStage>>20, rel)
			}
		}
		return copyRegular(root, rel, filepath.Join(dst, rel))
	})
	return left, err
}

// leaveOut says why an entry of a page folder is not given to the judge, or "".
func leaveOut(d fs.DirEntry) string {
	name := strings.ToLower(d.Name())
	switch {
	case strings.HasPrefix(name, "."):
		return "hidden"
	case d.Type()&fs.ModeSymlink != 0:
		return "a link"
	case !d.IsDir() && !d.Type().IsRegular():
		return "not a regular file"
	}
	for _, w := range agentWords {
		if strings.Contains(name, w) {
			return "named for an agent"
		}
	}
	return ""
}

// copyRegular copies one regular file, rel below root, refusing to follow a link anywhere
// on its path (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS: not the file, nor a
// folder on the way, swapped for a link since the walk saw it) or to block on a fifo.
func copyRegular(root *os.File, rel, dst string) error {
	src := filepath.Join(root.Name(), rel)
	fd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("copying %s for the judge: %v (a link is never followed)", src, err)
	}
	in := os.NewFile(uintptr(fd), src)
	defer in.Close()
	if info, err := in.Stat(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("copying %s for the judge: not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("copying %s for the judge: %v", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s for the judge: %v", src, err)
	}
	return out.Close()
}
