package capsule

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
}

// syncGroup is how many objects a batch keeps open to fsync one by one.
const syncGroup = 32

func newBatch(s *Store) *batch {
	return &batch{s: s, queued: map[string]bool{}, dirs: map[string]bool{}}
}

// has reports whether the object at path is stored or already in this batch.
func (b *batch) has(path string) bool {
	b.mu.Lock()
	queued := b.queued[path]
	b.mu.Unlock()
	if queued {
		return true
	}
	_, err := os.Lstat(path)
	return err == nil
}

// put stores data at path unless it is there already.
func (b *batch) put(path string, data []byte) error {
	if b.has(path) {
		return nil
	}
	a, err := b.create(path)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	return b.add(a)
}

// create starts an object file, making its fan-out folder (blobs/ab) on first use.
func (b *batch) create(path string) (*AtomicFile, error) {
	a, err := CreateAtomic(path, 0o444)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return a, err
	}
	if err := makeFanOut(path); err != nil {
		return nil, err
	}
	return CreateAtomic(path, 0o444)
}

// makeFanOut makes the folder of an object path if it is missing.
func makeFanOut(path string) error {
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make object folder: %w", err)
	}
	return nil
}

// add takes a fully written object into the batch.
func (b *batch) add(a *AtomicFile) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued[a.Path()] {
		a.Abort()
		return nil
	}
	b.queued[a.Path()] = true
	// The fan-out folder and the one above: whoever made the fan-out folder may not have
	// lived to sync its entry. Synced together, they cost one flush.
	fan := filepath.Dir(a.Path())
	b.dirs[fan] = true
	b.dirs[filepath.Dir(fan)] = true
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
}

// flush makes every object durable at its final path. record, a capsule record written
// but not yet renamed, is synced alongside, so the caller only renames it and syncs its
// folder.
func (b *batch) flush(record *AtomicFile) error {
	if b.bulk {
		return b.flushBulk(record)
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
	syncs := []func() error{record.Sync}
	for d := range b.dirs {
		syncs = append(syncs, func() error { return SyncDir(d) })
	}
	return parallel(syncs, func(f func() error) error { return f() })
}

func (b *batch) flushBulk(record *AtomicFile) error {
	store, err := os.Open(b.s.dir)
	if err != nil {
		b.abort()
		return fmt.Errorf("store %s: %w", b.s.dir, err)
	}
	defer store.Close()
	syncfs := func() error {
		if err := unix.Syncfs(int(store.Fd())); err != nil {
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
