package capsule

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path so that a crash leaves either the old file or the
// complete new one, never a torn one: a temporary file in the same folder, fsync, rename,
// fsync of the folder (so the rename itself survives).
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	a, err := CreateAtomic(path, perm)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	if err := a.Commit(); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// AtomicFile is a file being written under a temporary name beside its final path. It
// becomes visible at the final path only by Rename, so a reader never sees it half written.
// Callers that write many files at once sync them together and sync each folder once
// (see batch.go); WriteFileAtomic is the one-file form.
type AtomicFile struct {
	f      *os.File
	path   string
	synced bool
}

// CreateAtomic starts an AtomicFile for path, with its temporary file in the same folder
// (so the rename stays on one file system). The file gets perm once renamed.
func CreateAtomic(path string, perm fs.FileMode) (*AtomicFile, error) {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create a temporary file for %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("chmod temporary file %s: %w", f.Name(), err)
	}
	return &AtomicFile{f: f, path: path}, nil
}

// Write appends p to the temporary file.
func (a *AtomicFile) Write(p []byte) (int, error) {
	n, err := a.f.Write(p)
	if err != nil {
		err = fmt.Errorf("write %s: %w", a.f.Name(), err)
	}
	return n, err
}

// Sync flushes the temporary file's content to disk.
func (a *AtomicFile) Sync() error {
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", a.f.Name(), err)
	}
	a.synced = true
	return nil
}

// Close closes the temporary file without renaming it. A caller that closes before syncing
// must make the content durable another way (syncfs) before Rename.
func (a *AtomicFile) Close() error {
	if err := a.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close %s: %w", a.f.Name(), err)
	}
	return nil
}

// Rename moves the closed temporary file to its final path. The folder is not synced.
func (a *AtomicFile) Rename() error {
	if err := os.Rename(a.f.Name(), a.path); err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("rename %s into place: %w", a.path, err)
	}
	return nil
}

// Commit syncs (unless Sync already ran), closes and renames the file into place. The
// folder is not synced: call SyncDir once for all files committed in it.
func (a *AtomicFile) Commit() error {
	if !a.synced {
		if err := a.Sync(); err != nil {
			a.Abort()
			return err
		}
	}
	if err := a.Close(); err != nil {
		a.Abort()
		return err
	}
	return a.Rename()
}

// Abort closes and removes the temporary file; the final path is left as it was.
func (a *AtomicFile) Abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// Path is the final path the file is renamed to.
func (a *AtomicFile) Path() string { return a.path }

// SyncDir fsyncs a folder, making renames and creations in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %s to fsync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return nil
}
