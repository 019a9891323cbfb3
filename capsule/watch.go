package capsule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrOverflow says a Watcher lost events (the kernel's queue overflowed, or a new folder
// could not be watched): the next capsule must be taken with a full walk (Snap).
var ErrOverflow = errors.New("inotify lost events; take the next capsule with a full walk")

// Watcher collects the paths below a workspace that changed, with inotify, so that
// SnapDirty can look at those alone. It has no goroutine: the kernel queues the events (an
// event is queued by the system call that caused it, before that call returns), and Dirty
// drains the queue. So when a tool has finished, every change it made is in the queue.
//
// Start the Watcher before the capsule the next SnapDirty builds on is taken. Not seen:
// writes through a shared mmap (until the file is closed) and changes made through another
// mount of the same files outside the workspace.
type Watcher struct {
	mu       sync.Mutex
	fd       int
	root     string
	folders  map[int32]string // watch descriptor -> folder relative to root
	dirty    map[string]bool
	overflow bool
	buf      []byte
}

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_CLOSE_WRITE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_EXCL_UNLINK |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// NewWatcher starts watching every folder below root (symlinks are not followed).
func NewWatcher(root string) (*Watcher, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watch %s: inotify_init1: %w (raise fs.inotify.max_user_instances, or take full snapshots)", abs, err)
	}
	w := &Watcher{fd: fd, root: abs, folders: map[int32]string{}, dirty: map[string]bool{}, buf: make([]byte, 64<<10)}
	if err := w.watchTree("."); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return w, nil
}

// Root is the watched workspace.
func (w *Watcher) Root() string { return w.root }

// watchTree adds a watch for rel and every folder below it. A folder already watched
// keeps its descriptor and gets its current path (it may have been moved).
func (w *Watcher) watchTree(rel string) error {
	return filepath.WalkDir(filepath.Join(w.root, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone again: its parent's events say so
			}
			return fmt.Errorf("watch %s: %w", p, err)
		}
		if !d.IsDir() {
			return nil
		}
		wd, err := unix.InotifyAddWatch(w.fd, p, watchMask)
		switch {
		case err == unix.ENOENT || err == unix.ENOTDIR:
			return fs.SkipDir
		case err == unix.ENOSPC:
			return fmt.Errorf("watch %s: too many inotify watches; raise fs.inotify.max_user_watches or take full snapshots", p)
		case err != nil:
			return fmt.Errorf("watch %s: %w", p, err)
		}
		r, _ := filepath.Rel(w.root, p)
		w.folders[int32(wd)] = filepath.ToSlash(r)
		return nil
	})
}

// Dirty returns the paths (relative to the root, sorted, none below another) that changed
// since the previous call, and forgets them. After ErrOverflow the watches are complete
// again and the caller must take a full snapshot.
func (w *Watcher) Dirty() ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil, fmt.Errorf("watch %s: the watcher is closed", w.root)
	}
	if err := w.drain(); err != nil {
		return nil, err
	}
	if w.overflow {
		w.overflow = false
		clear(w.dirty)
		if err := w.watchTree("."); err != nil {
			return nil, err
		}
		return nil, ErrOverflow
	}
	out := make([]string, 0, len(w.dirty))
	for p := range w.dirty {
		if !coveredByAncestor(p, w.dirty) {
			out = append(out, p)
		}
	}
	clear(w.dirty)
	slices.Sort(out)
	return out, nil
}

func coveredByAncestor(p string, set map[string]bool) bool {
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		if set[p[:i]] {
			return true
		}
	}
	return false
}

// drain reads every queued event.
func (w *Watcher) drain() error {
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return nil
		case err != nil:
			return fmt.Errorf("watch %s: read inotify events: %w", w.root, err)
		case n <= 0:
			return nil
		}
		w.parse(w.buf[:n])
	}
}

func (w *Watcher) parse(buf []byte) {
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			w.overflow = true
			return
		}
		name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:end]), "\x00")
		buf = buf[end:]
		w.event(ev.Wd, ev.Mask, name)
	}
}

func (w *Watcher) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.overflow = true
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.folders, wd)
		return
	}
	dir, ok := w.folders[wd]
	if !ok {
		return
	}
	if name == "" {
		// An event on a watched folder itself; its parent's watch reports it by name. Only
		// the root has no parent here: if it goes, nothing below can be trusted.
		if dir == "." && mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			w.overflow = true
		}
		return
	}
	p := path.Join(dir, name)
	w.dirty[p] = true
	if mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		// Whatever was made in it before this watch exists is covered: p is dirty whole.
		if err := w.watchTree(p); err != nil {
			w.overflow = true
		}
	}
}

// Close stops watching.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil
	}
	err := unix.Close(w.fd)
	w.fd = -1
	return err
}

// SnapWatched takes a capsule of w's workspace from the paths w collected since its last
// call (SnapDirty), or with a full walk (Snap) when w lost events.
func (s *Store) SnapWatched(ctx context.Context, w *Watcher, id string) (Capsule, error) {
	dirty, err := w.Dirty()
	if errors.Is(err, ErrOverflow) {
		return s.Snap(ctx, w.Root(), id)
	}
	if err != nil {
		return Capsule{}, err
	}
	return s.SnapDirty(ctx, w.Root(), id, dirty)
}
