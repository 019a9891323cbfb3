package capsule

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
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
//
// The temporary file is created and renamed relative to a descriptor of its folder, opened
// once: whatever becomes of the folder's path meanwhile (a symlink put in its place), the
// file lands in the folder that was opened.
type AtomicFile struct {
	f      *os.File
	path   string // the final path, for messages
	dir    int    // the folder of the temporary file
	tmp    string // the temporary file's name in dir
	dst    int    // the folder of the final name (dir, unless moveTo changed it)
	name   string // the final name in dst
	ownDir bool   // dir is this file's to close (else a batch's, shared by its objects)
	ownDst bool   // dst (not dir: a spare's) is this file's to close
	synced bool
	done   bool
}

// CreateAtomic starts an AtomicFile for path, with its temporary file in the same folder
// (so the rename stays on one file system). The file gets perm once renamed.
func CreateAtomic(path string, perm fs.FileMode) (*AtomicFile, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	dirfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create a temporary file for %s: %w", path, &fs.PathError{Op: "open", Path: dir, Err: err})
	}
	return createAt(dirfd, true, base, path, perm)
}

// createAt starts an AtomicFile named name in the folder dirfd, which it closes when done
// if own (a batch instead shares one descriptor per folder among its objects, so a
// snapshot of 100,000 new files does not hold 100,000). path is the final path, for
// messages.
func createAt(dirfd int, own bool, name, path string, perm fs.FileMode) (*AtomicFile, error) {
	closeDir := func() {
		if own {
			unix.Close(dirfd)
		}
	}
	var raw [6]byte
	for range 100 {
		if _, err := rand.Read(raw[:]); err != nil {
			closeDir()
			return nil, err
		}
		tmp := "." + name + ".tmp-" + hex.EncodeToString(raw[:])
		fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			closeDir()
			return nil, fmt.Errorf("create a temporary file for %s: %w", path, err)
		}
		a := &AtomicFile{f: os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(path), tmp)), path: path, dir: dirfd, tmp: tmp, dst: dirfd, name: name, ownDir: own}
		// The mode explicitly: the umask must not decide it.
		if err := a.f.Chmod(perm); err != nil {
			a.Abort()
			return nil, fmt.Errorf("chmod temporary file %s: %w", a.f.Name(), err)
		}
		return a, nil
	}
	closeDir()
	return nil, fmt.Errorf("create a temporary file for %s: no free temporary name", path)
}

// moveTo makes the file's final name name in the folder dirfd (the caller's: a batch's
// shared descriptor), path being that final path, for messages. Both folders must be on
// one file system.
func (a *AtomicFile) moveTo(dirfd int, name, path string) {
	a.dst, a.name, a.path = dirfd, name, path
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
	defer a.release()
	if err := unix.Renameat(a.dir, a.tmp, a.dst, a.name); err != nil {
		unix.Unlinkat(a.dir, a.tmp, 0)
		return fmt.Errorf("rename %s into place: %w", a.path, err)
	}
	return nil
}

// release closes the folder descriptor if it is this file's, once.
func (a *AtomicFile) release() {
	if a.done {
		return
	}
	a.done = true
	if a.ownDir {
		unix.Close(a.dir)
	}
	if a.ownDst {
		unix.Close(a.dst)
	}
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
	if !a.done {
		unix.Unlinkat(a.dir, a.tmp, 0)
	}
	a.release()
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
