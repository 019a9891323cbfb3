package capsule

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Every path below a store (or a room's staging folder) is opened from the store's folder
// descriptor so that no symlink is followed, not even in a folder on the way, and nothing
// outside it is reached. A store a room once wrote may hold a planted `blobs/ab ->
// /etc/cron.d`; followed, it would make the host write an object where the room chose.

// mutations switch a defence off. Only this package's tests set them (mutation_test.go),
// to show that the check which passes on the real code sees each defence go.
var mutations struct {
	follow  bool // openBeneath opens as openat(2) does: symlinks followed anywhere
	noHash  bool // Import takes staged objects whatever they hash to
	anyType bool // openRegular and openStaged open a file of any type
	// keepSetID: unixPerm and goMode keep set-uid and set-gid (snapshots store them,
	// restores apply them).
	keepSetID bool
	// acceptSetID: parseEntry takes a tree whose modes claim set-uid or set-gid.
	acceptSetID bool
}

// resolveBeneath: the path stays below the descriptor and no component may be a symlink.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens rel (slash-separated, relative) below the folder dirfd without following
// any symlink. A symlink anywhere on the way fails with ELOOP (or EXDEV for "..").
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	// No O_NOFOLLOW: RESOLVE_NO_SYMLINKS covers the last component too, and fails it with
	// ELOOP, where O_NOFOLLOW|O_DIRECTORY would say "not a directory".
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolveBeneath}
	if mutations.follow {
		how.Resolve = 0
	}
	for {
		if noOpenat2 {
			return openEachNoFollow(dirfd, rel, flags, mode)
		}
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch err {
		case unix.EINTR, unix.EAGAIN: // EAGAIN: a rename raced the lookup; look again
			continue
		case unix.ENOSYS: // a kernel before 5.6, or a room's seccomp filter
			return openEachNoFollow(dirfd, rel, flags, mode)
		}
		return fd, err
	}
}

// noOpenat2 makes openBeneath take openEachNoFollow, as it does where openat2 is missing;
// only this package's tests set it. In a room openat2 is always missing: its filter
// answers ENOSYS, the mode openat2 takes being out of the filter's sight (sandbox's
// seccompModeCalls).
var noOpenat2 bool

// openEachNoFollow is openBeneath without openat2: each component opened O_NOFOLLOW from
// the one before. "." components stay where they are, as openat2 has them; "" and ".."
// are refused (EXDEV, as RESOLVE_BENEATH refuses leaving the folder).
func openEachNoFollow(dirfd int, rel string, flags int, mode uint32) (int, error) {
	var parts []string
	for _, p := range strings.Split(rel, "/") {
		if p != "." {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = []string{"."}
	}
	cur := dirfd
	closeCur := func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}
	defer closeCur()
	for i, p := range parts {
		if p == "" || p == ".." {
			return -1, unix.EXDEV
		}
		if i == len(parts)-1 {
			fd, err := unix.Openat(cur, p, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
			return fd, symlinkLoop(cur, p, err)
		}
		next, err := unix.Openat(cur, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, symlinkLoop(cur, p, err)
		}
		closeCur()
		cur = next
	}
	return -1, unix.ENOENT
}

// symlinkLoop is err, or ELOOP when err is O_NOFOLLOW|O_DIRECTORY's ENOTDIR for name in
// dirfd being a symlink: what openat2 says for a symlink on the way.
func symlinkLoop(dirfd int, name string, err error) error {
	var st unix.Stat_t
	if err == unix.ENOTDIR && unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.ELOOP
	}
	return err
}

// noFollowError says what a failed no-follow open means, naming the path.
func noFollowError(what string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return fmt.Errorf("%s: it is, or lies below, a symlink (%v); tare never follows a symlink in a store", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// openRegular opens rel below dirfd for reading, without following symlinks, and only if
// it is a regular file. It opens first and checks after (one open: it runs for every folder
// of a snapshot, for its stat cache), with O_NONBLOCK so a fifo cannot hang it: for the
// store's own files, where no device can be (no room has CAP_MKNOD). What a room wrote is
// opened with openStaged instead.
func openRegular(dirfd int, rel string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openBeneath(dirfd, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, st, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG && !mutations.anyType {
		unix.Close(fd)
		return nil, st, fmt.Errorf("a %s, not a regular file", fileType(st.Mode))
	}
	return os.NewFile(uintptr(fd), rel), st, nil
}

// openStaged is openRegular for what a room wrote: the type is checked on an O_PATH
// descriptor first, so a fifo, socket or device is never opened (opening a device can act).
func openStaged(dirfd int, rel string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	pfd, err := openBeneath(dirfd, rel, unix.O_PATH, 0)
	if err != nil {
		return nil, st, err
	}
	err = unix.Fstat(pfd, &st)
	unix.Close(pfd)
	if err != nil {
		return nil, st, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG && !mutations.anyType {
		return nil, st, fmt.Errorf("a %s, not a regular file", fileType(st.Mode))
	}
	f, now, err := openRegular(dirfd, rel)
	if err == nil && (now.Dev != st.Dev || now.Ino != st.Ino) {
		f.Close()
		return nil, st, errors.New("replaced while being opened")
	}
	return f, now, err
}

// readRegular reads a whole regular file below dirfd, refusing one larger than limit.
func readRegular(dirfd int, rel string, limit int64) ([]byte, error) {
	return readWith(openRegular, dirfd, rel, limit)
}

// readWith is readRegular opening with open (openRegular or openStaged).
func readWith(open func(int, string) (*os.File, unix.Stat_t, error), dirfd int, rel string, limit int64) ([]byte, error) {
	f, st, err := open(dirfd, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size > limit {
		return nil, fmt.Errorf("%d bytes, more than the %d allowed", st.Size, limit)
	}
	// Sized from the stat, as os.ReadFile does: one read for a file that does not grow.
	data, err := readAll(f, make([]byte, 0, st.Size+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("more than the %d bytes allowed", limit)
	}
	return data, err
}

// readDirBeneath lists the names in the folder rel below dirfd, not following symlinks.
func readDirBeneath(dirfd int, rel string) ([]string, error) {
	fd, err := openBeneath(dirfd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readDirNames(fd)
}

// ReadFileBeneath reads the regular file rel below root, following no symlink on the way,
// not even in its last component: for files a room wrote into a folder the host reads later
// (an agent's session files), where a planted symlink would make the host read what the room
// chose. root itself must not be a symlink either (a room can replace a folder it writes
// with one): it is opened with O_NOFOLLOW, so a planted root fails instead of moving the
// whole read to where the link points. A file larger than max is refused.
func ReadFileBeneath(root, rel string, max int64) ([]byte, error) {
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	defer unix.Close(dirfd)
	fd, err := openBeneath(dirfd, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, noFollowError(root+"/"+rel, err)
	}
	f := os.NewFile(uintptr(fd), root+"/"+rel)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s/%s: not a regular file (%s); tare reads only regular files a room wrote", root, rel, st.Mode().Type())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s/%s: %d bytes, more than the %d tare reads", root, rel, st.Size(), max)
	}
	buf := make([]byte, st.Size())
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return buf[:n], nil
}
