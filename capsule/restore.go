package capsule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Restore materialises capsule c into dest, which must be an empty folder or not exist yet
// (its parent must): files with their content and mode, symlinks as symlinks, empty
// folders, folder modes. Every blob and tree is checked against its hash on the way; if one
// is corrupt or missing, Restore stops with an error naming it and the capsule and removes
// what it wrote, leaving dest empty. It never restores silently from a damaged store. Hard
// links come back as separate files; owners and times are not kept (the files belong to the
// caller, dated now).
func (s *Store) Restore(ctx context.Context, c Capsule, dest string) error {
	if err := prepareDest(dest); err != nil {
		return fmt.Errorf("restore capsule %s: %w", c.Name(), err)
	}
	r := restorer{s: s, ctx: ctx, buf: make([]byte, 1<<20)}
	fd, err := unix.Open(dest, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("restore capsule %s: open %s: %w", c.Name(), dest, err)
	}
	err = r.dir(c.Root, fd, dest)
	unix.Close(fd)
	if err != nil {
		clearDir(dest)
		return fmt.Errorf("restore capsule %s into %s: %w", c.Name(), dest, err)
	}
	return nil
}

func prepareDest(dest string) error {
	fi, err := os.Lstat(dest)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dest, 0o755); err != nil {
			return fmt.Errorf("create destination: %w", err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("destination %s is not a folder; pass a new or empty folder", dest)
	}
	names, err := readNames(dest)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("destination %s is not empty (has %q); pass a new or empty folder", dest, names[0])
	}
	return nil
}

// clearDir empties a folder Restore filled, making read-only folders writable first.
func clearDir(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	names, _ := readNames(dir)
	for _, n := range names {
		os.RemoveAll(filepath.Join(dir, n))
	}
}

type restorer struct {
	s   *Store
	ctx context.Context
	buf []byte
}

// dir fills the existing folder dirfd (at dest, for messages) with the tree hash. Every
// name is made and opened relative to its folder's descriptor and never through a
// symlink: the restored tree's own symlinks are never followed while it is filled.
func (r *restorer) dir(hash string, dirfd int, dest string) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	entries, err := r.s.readTree(hash)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dest, e.Name)
		var err error
		switch e.Kind {
		case KindDir:
			err = r.subdir(e, dirfd, p)
		case KindSymlink:
			err = unix.Symlinkat(e.Target, dirfd, e.Name)
		case KindFile:
			err = r.file(e, dirfd, p)
		}
		if err != nil {
			return &fs.PathError{Op: "restore", Path: p, Err: err}
		}
	}
	return nil
}

// subdir makes the folder e in dirfd and fills it.
func (r *restorer) subdir(e Entry, dirfd int, p string) error {
	if err := unix.Mkdirat(dirfd, e.Name, 0o700); err != nil {
		return err
	}
	fd, err := unix.Openat(dirfd, e.Name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := r.dir(e.Hash, fd, p); err != nil {
		return err
	}
	// The mode last: a read-only folder could not have been filled.
	return unix.Fchmod(fd, unixPerm(e.Mode))
}

// file copies the blob of e to its name in dirfd (p, for messages), checking its hash and
// size as it goes.
func (r *restorer) file(e Entry, dirfd int, p string) error {
	blob, _, err := openRegular(r.s.root, objectRel("blobs", e.Hash))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("blob %s (for %s) is missing from the store; run `tare verify`", e.Hash, p)
		}
		return noFollowError(fmt.Sprintf("blob %s (for %s)", e.Hash, p), err)
	}
	defer blob.Close()
	fd, err := unix.Openat(dirfd, e.Name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), p)
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(out, h), blob, r.buf)
	if err != nil {
		out.Close()
		return fmt.Errorf("copy blob %s to %s: %w", e.Hash, p, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.Hash || n != e.Size {
		out.Close()
		return fmt.Errorf("blob %s (for %s) is corrupt: %d bytes hashing to %s, want %d bytes; run `tare verify`", e.Hash, p, n, got, e.Size)
	}
	// The mode after writing (a read-only file could not have been written), never set-uid
	// or set-gid (unixPerm).
	if err := unix.Fchmod(fd, unixPerm(e.Mode)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
