package journal

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenNoFollow is how tare opens a file of a run folder (the lock, the journal, the logs;
// atomic writes go through capsule.WriteFileAtomic, whose rename replaces a link rather than
// following it), to write it or to read it: never through a link. A symlink in the file's
// place is refused (O_NOFOLLOW), and so is anything but a regular file: a fifo is opened
// without blocking and refused, so a reader never hangs on one. Opened for writing, the file
// must also have one name: a hard link would have tare write another file's bytes. flag is
// os.OpenFile's.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	// O_TRUNC only once the file is known to be tare's: opened with it, a hard link's other
	// file would be emptied before the check.
	trunc := flag&os.O_TRUNC != 0
	fd, err := unix.Open(path, flag&^os.O_TRUNC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink; tare never follows a link in a run folder; fix: remove it", path)
	}
	if errors.Is(err, unix.ENXIO) { // a fifo nobody reads
		return nil, fmt.Errorf("%s is a fifo, not a regular file; fix: remove it", path)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a regular file (mode %o); a run folder holds only tare's own files; fix: remove it", path, st.Mode&unix.S_IFMT)
	case st.Nlink > 1 && flag&(os.O_WRONLY|os.O_RDWR) != 0:
		unix.Close(fd)
		return nil, fmt.Errorf("%s has %d hard links, so writing it would write another file; fix: remove it", path, st.Nlink)
	}
	if trunc {
		if err := unix.Ftruncate(fd, 0); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
