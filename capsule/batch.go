package capsule

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// batch collects the objects (blobs and trees) one snapshot writes and makes them durable
// together before the capsule record that names them: a crash leaves either no record or a
// record whose objects are all on disk.
//
// A step usually adds a handful of objects: they are fsynced concurrently (the file system
// commits them in one journal transaction), renamed, and each folder is fsynced once, so a
// step costs about three disk flushes however many objects it wrote. A snapshot that adds
// many objects (the first one, an `npm install`) stops syncing file by file and flushes the
// whole file system with syncfs instead.
type batch struct {
	s      *Store
	mu     sync.Mutex
	queued map[string]bool
	files  []*AtomicFile
	bulk   bool // more than syncGroup objects: closed unsynced, syncfs at flush
	dirs   map[string]bool
	fans   map[string]int // open fan-out folders (blobs/ab), shared by the objects in them
}

// syncGroup is how many objects a batch keeps open to fsync one by one.
const syncGroup = 32

func newBatch(s *Store) *batch {
	return &batch{s: s, queued: map[string]bool{}, dirs: map[string]bool{}, fans: map[string]int{}}
}

// has reports whether the object at rel (below the store) is stored or already in this batch.
func (b *batch) has(rel string) bool {
	b.mu.Lock()
	queued := b.queued[rel]
	b.mu.Unlock()
	return queued || b.s.hasObject(rel)
}

// put stores data at rel unless it is there already.
func (b *batch) put(rel string, data []byte) error {
	if b.has(rel) {
		return nil
	}
	a, err := b.create(rel)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	return b.add(rel, a)
}

// create starts an object file, making its fan-out folder (blobs/ab) on first use.
func (b *batch) create(rel string) (*AtomicFile, error) {
	dirfd, err := b.fanOut(rel)
	if err != nil {
		return nil, err
	}
	if b.s.spares != nil {
		if a := b.s.spares.take(dirfd, false, path.Base(rel), filepath.Join(b.s.dir, rel), 0o444); a != nil {
			return a, nil
		}
	}
	return createAt(dirfd, false, path.Base(rel), filepath.Join(b.s.dir, rel), 0o444)
}

// fanOut is the open fan-out folder of the object at rel, opened once per batch.
func (b *batch) fanOut(rel string) (int, error) {
	dir := path.Dir(rel)
	b.mu.Lock()
	defer b.mu.Unlock()
	if fd, ok := b.fans[dir]; ok {
		return fd, nil
	}
	fd, err := b.s.fanOut(rel)
	if err != nil {
		return -1, err
	}
	b.fans[dir] = fd
	return fd, nil
}

// release closes the batch's folders, once its files are renamed or removed.
func (b *batch) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for dir, fd := range b.fans {
		unix.Close(fd)
		delete(b.fans, dir)
	}
}

// fanOut opens the folder of the object at rel (blobs/ab), making it if missing, without
// following a symlink on the way.
func (s *Store) fanOut(rel string) (int, error) {
	dir := path.Dir(rel)
	fd, err := openBeneath(s.root, dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return -1, noFollowError("store "+s.dir+": object folder "+dir, err)
		}
		return fd, nil
	}
	top, err := openBeneath(s.root, path.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, noFollowError("store "+s.dir+": "+path.Dir(dir), err)
	}
	err = unix.Mkdirat(top, path.Base(dir), 0o755)
	unix.Close(top)
	if err != nil && err != unix.EEXIST {
		return -1, fmt.Errorf("store %s: make object folder %s: %w", s.dir, dir, err)
	}
	fd, err = openBeneath(s.root, dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, noFollowError("store "+s.dir+": object folder "+dir, err)
	}
	return fd, nil
}

// add takes a fully written object (to be renamed to rel) into the batch.
func (b *batch) add(rel string, a *AtomicFile) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued[rel] {
		a.Abort()
		return nil
	}
	b.queued[rel] = true
	// The fan-out folder and the one above: whoever made the fan-out folder may not have
	// lived to sync its entry. Synced together, they cost one flush.
	fan := path.Dir(rel)
	b.dirs[fan] = true
	if !b.s.spares.entryDurable(fan) {
		b.dirs[path.Dir(fan)] = true
	}
	b.files = append(b.files, a)
	if !b.bulk && len(b.files) > syncGroup {
		b.bulk = true
		for _, f := range b.files {
			if err := f.Close(); err != nil {
				return err
			}
		}
	} else if b.bulk {
		return a.Close()
	}
	return nil
}

// abort removes every temporary file of the batch.
func (b *batch) abort() {
	for _, f := range b.files {
		f.Abort()
	}
	b.files = nil
	b.release()
}

// flush makes every object durable at its final path. records, capsule records written
// but not yet renamed, are synced alongside, so the caller only renames them and syncs
// their folder.
func (b *batch) flush(records ...*AtomicFile) error {
	defer b.release()
	if b.bulk {
		return b.flushBulk()
	}
	if err := parallel(b.files, (*AtomicFile).Sync); err != nil {
		b.abort()
		return err
	}
	for i, f := range b.files {
		if err := f.Commit(); err != nil {
			for _, rest := range b.files[i+1:] {
				rest.Abort()
			}
			return err
		}
	}
	b.files = nil
	var syncs []func() error
	for _, r := range records {
		syncs = append(syncs, r.Sync)
	}
	for d := range b.dirs {
		syncs = append(syncs, func() error { return b.s.syncDir(d) })
	}
	if err := parallel(syncs, func(f func() error) error { return f() }); err != nil {
		return err
	}
	for d := range b.dirs {
		if b.dirs[path.Dir(d)] {
			b.s.spares.entrySynced(d)
		}
	}
	return nil
}

func (b *batch) flushBulk() error {
	syncfs := func() error {
		if err := unix.Syncfs(b.s.root); err != nil {
			return fmt.Errorf("syncfs %s: %w", b.s.dir, err)
		}
		return nil
	}
	if err := syncfs(); err != nil { // the objects' content, and the record's
		b.abort()
		return err
	}
	for i, f := range b.files {
		if err := f.Rename(); err != nil {
			for _, rest := range b.files[i+1:] {
				rest.Abort()
			}
			return err
		}
	}
	b.files = nil
	return syncfs() // the renames
}

// parallel runs fn on every item at once (bounded) and returns the errors joined.
func parallel[T any](items []T, fn func(T) error) error {
	errs := make([]error, len(items))
	sem := make(chan struct{}, syncGroup)
	var wg sync.WaitGroup
	for i, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(it)
			<-sem
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
