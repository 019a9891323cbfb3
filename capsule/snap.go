package capsule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Snap takes a capsule of workspace for the tool call id: a full walk that hashes only the
// files whose size, mtime, ctime or inode changed since the stat cache saw them. Files it
// cannot store (pipes, sockets, devices, unreadable or vanished files) are listed in the
// capsule's Unreadable, never dropped silently; that is not an error. Symlinks are stored,
// never followed.
func (s *Store) Snap(ctx context.Context, workspace, id string) (Capsule, error) {
	return s.take(ctx, workspace, id, nil, false)
}

// SnapDirty takes a capsule like Snap but re-examines only the paths in dirty (relative to
// workspace, or absolute below it) and rebuilds the trees above them; everything else is
// taken from the latest capsule of the store. A dirty folder is walked whole (with the stat
// cache). dirty must name every path changed since the latest capsule was taken (a Watcher
// collects them); "." or a store without capsules means a full walk.
func (s *Store) SnapDirty(ctx context.Context, workspace, id string, dirty []string) (Capsule, error) {
	return s.take(ctx, workspace, id, dirty, true)
}

// snapshot is one Snap or SnapDirty in progress.
type snapshot struct {
	s                  *Store
	ctx                context.Context
	batch              *batch
	coarseStart        int64
	storeDev, storeIno uint64
	examined           []string      // paths walked afresh in a dirty snapshot
	walkers            chan struct{} // slots for folders walked in goroutines of their own

	mu         sync.Mutex // guards the two below: folders are walked in parallel
	unreadable []Unreadable
	caches     [][2]*dirCache // as loaded, as found: saved after the record
}

// buffers for reading files and folders, shared by the walking goroutines.
var (
	fileBufs = sync.Pool{New: func() any { return new([]byte) }}
	dentBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
)

// smallFile is the size up to which a file is read into memory once; larger files are
// streamed (hashed, then copied only if their blob is new).
const smallFile = 4 << 20

// errBase says the capsule a dirty snapshot builds on is damaged: the snapshot walks fully.
var errBase = errors.New("base capsule damaged")

func (s *Store) take(ctx context.Context, workspace, id string, dirty []string, partial bool) (Capsule, error) {
	if !validID(id) {
		return Capsule{}, fmt.Errorf("snapshot id %q: use letters, digits, '_', '.', '-' (up to 200), as tool-use ids are", id)
	}
	unlock, err := s.lock()
	if err != nil {
		return Capsule{}, err
	}
	defer unlock()
	names, err := s.recordNames()
	if err != nil {
		return Capsule{}, err
	}
	step := 0
	if len(names) > 0 {
		last, _, _ := recordName(names[len(names)-1])
		step = last + 1
	}
	rootfd, err := unix.Open(workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Capsule{}, fmt.Errorf("snapshot of %s: open workspace: %w", workspace, err)
	}
	defer unix.Close(rootfd)

	sn, err := s.newSnapshot(ctx)
	if err != nil {
		return Capsule{}, err
	}
	c := Capsule{Step: step, ID: id, Walk: "full"}
	var root Entry
	if partial && len(names) > 0 {
		root, err = sn.dirty(rootfd, workspace, names[len(names)-1], dirty)
		switch {
		case err == nil:
			c.Walk = "dirty"
		case errors.Is(err, errBase) || errors.Is(err, errFull):
			sn.batch.abort()
			if sn, err = s.newSnapshot(ctx); err != nil {
				return Capsule{}, err
			}
		default:
			sn.batch.abort()
			return Capsule{}, fmt.Errorf("snapshot of %s: %w", workspace, err)
		}
	}
	if c.Walk == "full" {
		if root.Hash, root.Size, err = sn.walkDir(rootfd, "."); err != nil {
			sn.batch.abort()
			return Capsule{}, fmt.Errorf("snapshot of %s: %w", workspace, err)
		}
	}
	c.Root, c.Bytes, c.Time = root.Hash, root.Size, time.Now().UTC()
	slices.SortFunc(sn.unreadable, func(a, b Unreadable) int { return strings.Compare(a.Path, b.Path) })
	c.Unreadable = sn.unreadable
	if c.Unreadable == nil {
		c.Unreadable = []Unreadable{}
	}
	if err := sn.commit(c); err != nil {
		return Capsule{}, fmt.Errorf("snapshot of %s: %w", workspace, err)
	}
	return c, nil
}

func (s *Store) newSnapshot(ctx context.Context) (*snapshot, error) {
	var st unix.Stat_t
	if err := unix.Fstat(s.root, &st); err != nil {
		return nil, fmt.Errorf("store %s: %w", s.dir, err)
	}
	return &snapshot{
		s: s, ctx: ctx, batch: newBatch(s), coarseStart: coarseNow(),
		storeDev: st.Dev, storeIno: st.Ino,
		walkers: make(chan struct{}, runtime.GOMAXPROCS(0)),
	}, nil
}

// commit makes the objects durable, then saves the stat caches (which may now name their
// blobs), then renames the record into place: an error leaves no record.
func (sn *snapshot) commit(c Capsule) error {
	data, err := json.MarshalIndent(record{Format: recordFormat, Capsule: c}, "", "  ")
	if err != nil {
		sn.batch.abort()
		return err
	}
	rec, err := sn.s.create("capsules/"+c.Name()+".json", 0o644)
	if err != nil {
		sn.batch.abort()
		return err
	}
	if _, err := rec.Write(append(data, '\n')); err != nil {
		rec.Abort()
		sn.batch.abort()
		return err
	}
	if err := sn.batch.flush(rec); err != nil {
		rec.Abort()
		return err
	}
	for _, dc := range sn.caches {
		if err := sn.s.saveCache(dc[0], dc[1]); err != nil {
			rec.Abort()
			return err
		}
	}
	if err := rec.Commit(); err != nil {
		return err
	}
	return sn.s.syncDir("capsules")
}

// skip records a path that is in the workspace but not in the capsule.
func (sn *snapshot) skip(p, why string) {
	sn.mu.Lock()
	sn.unreadable = append(sn.unreadable, Unreadable{Path: p, Error: why})
	sn.mu.Unlock()
}

// readError is a failure to read the workspace (recorded), as opposed to a failure to write
// the store (fatal).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// walkDir stores the folder open at dirfd (rel to the workspace) and everything below it.
// Its subfolders are walked in goroutines of their own while there are free slots (the
// cost of a walk is stat and file creation in the kernel, which runs on every core).
func (sn *snapshot) walkDir(dirfd int, rel string) (hash string, size int64, err error) {
	if err := sn.ctx.Err(); err != nil {
		return "", 0, err
	}
	names, err := readDirNames(dirfd)
	if err != nil {
		return "", 0, &readError{fmt.Errorf("read folder: %w", err)}
	}
	cache := sn.s.loadCache(rel)
	fresh := &dirCache{rel: rel, entries: make(map[string]cacheEntry, len(names))}
	entries := make([]Entry, len(names))
	found := make([]bool, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		st, ok := sn.lstat(dirfd, path.Join(rel, name), name, true)
		if !ok {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			select {
			case sn.walkers <- struct{}{}:
				wg.Add(1)
				go func() {
					defer func() { <-sn.walkers; wg.Done() }()
					entries[i], found[i], errs[i] = sn.entry(dirfd, rel, name, &st, nil, nil)
				}()
				continue
			default:
			}
		}
		entries[i], found[i], errs[i] = sn.entry(dirfd, rel, name, &st, cache, fresh)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", 0, err
	}
	kept := entries[:0]
	for i, e := range entries {
		if found[i] {
			kept = append(kept, e)
		}
	}
	return sn.storeTree(kept, cache, fresh)
}

// storeTree writes a folder's tree object unless the cache says it is the one stored last
// time, and keeps the folder's cache (old as loaded, fresh as found) to save.
func (sn *snapshot) storeTree(entries []Entry, old, fresh *dirCache) (string, int64, error) {
	sortEntries(entries)
	data := encodeTree(entries)
	hash := hashBytes(data)
	if hash != old.tree {
		if err := sn.batch.put(objectRel("trees", hash), data); err != nil {
			return "", 0, err
		}
	}
	fresh.tree = hash
	sn.mu.Lock()
	sn.caches = append(sn.caches, [2]*dirCache{old, fresh})
	sn.mu.Unlock()
	return hash, treeSize(entries), nil
}

// examine stores one name of the folder at dirfd. ok is false when there is nothing to
// put in the tree (gone, or recorded as unreadable). listed says the name came from
// reading the folder, so its absence means it vanished during the snapshot.
func (sn *snapshot) examine(dirfd int, rel, name string, listed bool, cache, fresh *dirCache) (e Entry, ok bool, err error) {
	st, ok := sn.lstat(dirfd, path.Join(rel, name), name, listed)
	if !ok {
		return e, false, nil
	}
	return sn.entry(dirfd, rel, name, &st, cache, fresh)
}

// lstat stats one name without following it; a failure is recorded (see examine).
func (sn *snapshot) lstat(dirfd int, p, name string, listed bool) (unix.Stat_t, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err != unix.ENOENT || listed {
			sn.skip(p, describeReadError("stat", err))
		}
		return st, false
	}
	return st, true
}

// entry stores the name whose stat is st. cache and fresh, the folder's stat caches, are
// used for files only (a goroutine walking a subfolder gets none).
func (sn *snapshot) entry(dirfd int, rel, name string, st *unix.Stat_t, cache, fresh *dirCache) (e Entry, ok bool, err error) {
	p := path.Join(rel, name)
	e = Entry{Name: name, Mode: goMode(st.Mode & 0o7777)}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return sn.file(dirfd, p, name, st, cache, fresh)
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, name, st.Size)
		if err != nil {
			sn.skip(p, describeReadError("readlink", err))
			return e, false, nil
		}
		e.Kind, e.Mode, e.Size, e.Target = KindSymlink, 0o777, int64(len(target)), target
		return e, true, nil
	case unix.S_IFDIR:
		if st.Dev == sn.storeDev && st.Ino == sn.storeIno {
			sn.skip(p, "skipped: the capsule store itself")
			return e, false, nil
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			sn.skip(p, describeReadError("open folder", err))
			return e, false, nil
		}
		defer unix.Close(fd)
		e.Kind = KindDir
		e.Hash, e.Size, err = sn.walkDir(fd, p)
		var re *readError
		if errors.As(err, &re) {
			sn.skip(p, describeReadError("", re.err))
			return e, false, nil
		}
		return e, err == nil, err
	default:
		sn.skip(p, "skipped: not a regular file ("+fileType(st.Mode)+")")
		return e, false, nil
	}
}

// file stores one regular file, hashing it only when the stat cache cannot vouch for it.
func (sn *snapshot) file(dirfd int, p, name string, st *unix.Stat_t, cache, fresh *dirCache) (Entry, bool, error) {
	e := Entry{Name: name, Kind: KindFile, Mode: goMode(st.Mode & 0o7777), Size: st.Size}
	if hash, ok := cache.lookup(name, st); ok {
		e.Hash = hash
		fresh.entries[name] = cache.entries[name]
		return e, true, nil
	}
	if sn.s.beforeRead != nil {
		sn.s.beforeRead(p)
	}
	// O_NONBLOCK: if a pipe took the file's place since the stat, opening must not hang.
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		sn.skip(p, describeReadError("open", err))
		return e, false, nil
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		sn.skip(p, describeReadError("stat", err))
		return e, false, nil
	}
	if now.Mode&unix.S_IFMT != unix.S_IFREG {
		sn.skip(p, "skipped: not a regular file ("+fileType(now.Mode)+")")
		return e, false, nil
	}
	hash, size, err := sn.storeBlob(f, now.Size)
	var re *readError
	if errors.As(err, &re) {
		sn.skip(p, describeReadError("read", re.err))
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	e.Hash, e.Size, e.Mode = hash, size, goMode(now.Mode&0o7777)
	if size == now.Size && !racy(&now, sn.coarseStart) {
		fresh.entries[name] = cacheEntry{key: keyOf(&now), hash: hash}
	}
	return e, true, nil
}

// storeBlob hashes f and stores its content unless a blob with that hash exists. It returns
// the hash and length of the bytes it read, which are the bytes stored.
func (sn *snapshot) storeBlob(f *os.File, size int64) (string, int64, error) {
	if size <= smallFile {
		bp := fileBufs.Get().(*[]byte)
		defer fileBufs.Put(bp)
		if int64(cap(*bp)) < size+1 {
			*bp = make([]byte, 0, size+512)
		}
		data, err := readAll(f, (*bp)[:0])
		*bp = data[:0]
		sn.s.hashed.Add(int64(len(data)))
		if err != nil {
			return "", 0, &readError{err}
		}
		if int64(len(data)) <= smallFile {
			hash := hashBytes(data)
			return hash, int64(len(data)), sn.batch.put(objectRel("blobs", hash), data)
		}
		// It grew past the limit while being read: stream it like a large file.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", 0, &readError{err}
		}
	}
	first, n, err := sn.hashReader(f, nil)
	if err != nil {
		return "", 0, err
	}
	if sn.batch.has(objectRel("blobs", first)) {
		return first, n, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", 0, &readError{err}
	}
	a, err := sn.batch.create(objectRel("blobs", first))
	if err != nil {
		return "", 0, err
	}
	hash, n, err := sn.hashReader(f, a)
	if err != nil {
		a.Abort()
		return "", 0, err
	}
	rel := objectRel("blobs", hash)
	if hash != first {
		// Changed between the two reads: store what the copy read, under its own hash.
		if sn.batch.has(rel) {
			a.Abort()
			return hash, n, nil
		}
		dirfd, err := sn.batch.fanOut(rel)
		if err != nil {
			a.Abort()
			return "", 0, err
		}
		a.moveTo(dirfd, path.Base(rel), filepath.Join(sn.s.dir, rel))
	}
	return hash, n, sn.batch.add(rel, a)
}

// hashReader hashes all of r, copying it to w when w is not nil. Errors reading r are
// readErrors; errors writing w are not.
func (sn *snapshot) hashReader(r io.Reader, w io.Writer) (string, int64, error) {
	h := sha256.New()
	bp := fileBufs.Get().(*[]byte)
	defer fileBufs.Put(bp)
	if cap(*bp) < 1<<20 {
		*bp = make([]byte, 0, 1<<20)
	}
	buf := (*bp)[:cap(*bp)]
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			total += int64(n)
			sn.s.hashed.Add(int64(n))
			h.Write(buf[:n])
			if w != nil {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return "", 0, werr
				}
			}
		}
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil)), total, nil
		}
		if err != nil {
			return "", 0, &readError{err}
		}
	}
}

// readAll reads f to its end into buf (grown as needed).
func readAll(f *os.File, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func readDirNames(fd int) ([]string, error) {
	bp := dentBufs.Get().(*[]byte)
	defer dentBufs.Put(bp)
	dents := *bp
	var names []string
	for {
		n, err := unix.Getdents(fd, dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(dents[:n], -1, names)
	}
}

func readlinkat(dirfd int, name string, size int64) (string, error) {
	n := max(int(size)+1, 256)
	for {
		buf := make([]byte, n)
		got, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if got < n {
			return string(buf[:got]), nil
		}
		n *= 2
	}
}

func describeReadError(op string, err error) string {
	var msg string
	switch {
	case errors.Is(err, unix.ENOENT):
		msg = "vanished before it was read (no such file or directory)"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		msg = "permission denied"
	case errors.Is(err, unix.ELOOP):
		msg = "replaced by a symlink while being read"
	default:
		msg = err.Error()
	}
	if op != "" && !errors.Is(err, unix.ENOENT) {
		msg += " (" + op + ")"
	}
	return msg
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "named pipe"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFDIR:
		return "folder"
	case unix.S_IFLNK:
		return "symlink"
	}
	return fmt.Sprintf("type %#o", mode&unix.S_IFMT)
}
