package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// When a room ends, what it could write on the host is stripped of set-uid, set-gid and
// file capabilities: the workspace (an attached run's is the operator's project), the run
// store (a recording's stage), and every writable bind (session folders, the check's
// caches). The room's user is the operator on the host, so a set-uid file left there would
// run the agent's code as the operator, outside any room, for any local user who starts
// it. The seccomp filter already refuses the modes in the room (seccompModeCalls) and the
// kernel refuses it file capabilities; this is the second layer, and the one that holds for
// a hole in the first. It runs once every process of the room is gone (Wait), so nothing
// races it.

// capabilityXattr is the extended attribute that holds a file's capabilities.
const capabilityXattr = "security.capability"

// stripRoots are the host paths room r could write.
func (r Room) stripRoots() []string {
	if r.noStrip {
		return nil
	}
	var roots []string
	if !r.WorkspaceReadOnly {
		roots = append(roots, r.Workspace)
	}
	if r.RunStore != "" {
		roots = append(roots, r.RunStore)
	}
	for _, b := range r.Binds {
		if b.Write && !b.Tmpfs && b.Source != "" {
			roots = append(roots, b.Source)
		}
	}
	return roots
}

// stripSetID strips set-uid and set-gid from root and everything below it, files and
// folders, and removes file capabilities from its regular files. It walks from folder
// descriptors and never follows a symlink: each name is looked at with fstatat
// (AT_SYMLINK_NOFOLLOW), opened with O_NOFOLLOW, and changed through its own descriptor. A
// folder its owner cannot list (mode 000) is opened up for the walk and given its mode
// back. It goes on past a failure and returns the paths it changed and the first failure.
func stripSetID(root string) ([]string, error) {
	var s stripper
	fd, err := unix.Open(root, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("room: strip set-uid/set-gid below %s: %v", root, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("room: strip set-uid/set-gid below %s: %v", root, err)
	}
	s.entry(fd, root, &st)
	if s.failed > 0 {
		return s.changed, fmt.Errorf("room: strip set-uid/set-gid below %s: %v (%d failures); fix the modes by hand before anyone runs a file there", root, s.first, s.failed)
	}
	return s.changed, nil
}

// stripper is one walk of stripSetID.
type stripper struct {
	changed []string
	failed  int
	first   error
}

func (s *stripper) fail(p string, err error) {
	if s.failed == 0 {
		s.first = fmt.Errorf("%s: %w", p, err)
	}
	s.failed++
}

// entry strips the file or folder open at fd (an O_PATH descriptor, not a symlink's
// target: opened with O_NOFOLLOW) at p, whose stat is st, and walks a folder's contents.
func (s *stripper) entry(fd int, p string, st *unix.Stat_t) {
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return
	case unix.S_IFREG:
		if _, err := unix.Getxattr(self, capabilityXattr, nil); err == nil {
			if err := unix.Removexattr(self, capabilityXattr); err != nil {
				s.fail(p, fmt.Errorf("remove its file capabilities: %w", err))
			} else {
				s.changed = append(s.changed, p)
			}
		}
	}
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		// chmod through the descriptor's magic link changes that very inode.
		if err := unix.Chmod(self, st.Mode&0o7777&^(unix.S_ISUID|unix.S_ISGID)); err != nil {
			s.fail(p, fmt.Errorf("clear set-uid/set-gid: %w", err))
		} else {
			s.changed = append(s.changed, p)
		}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		s.dir(fd, p, st.Mode&0o7777&^(unix.S_ISUID|unix.S_ISGID))
	}
}

// dir walks the folder open at fd (O_PATH) at p; mode is its mode once stripped.
func (s *stripper) dir(fd int, p string, mode uint32) {
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	dfd, err := unix.Open(self, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) && mode&0o500 != 0o500 {
		// A folder the room made unreadable to its owner (the operator): open it up
		// for the walk and give it its mode back.
		if unix.Chmod(self, mode|0o500) == nil {
			defer unix.Chmod(self, mode)
			dfd, err = unix.Open(self, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		s.fail(p, fmt.Errorf("open the folder: %w", err))
		return
	}
	f := os.NewFile(uintptr(dfd), p)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		s.fail(p, fmt.Errorf("list the folder: %w", err))
	}
	in := "/proc/self/fd/" + strconv.Itoa(dfd) + "/"
	for _, name := range names {
		q := filepath.Join(p, name)
		// Most entries need nothing: a look without opening them (lstat, and lgetxattr
		// on a regular file) says so.
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) == 0 {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
			case unix.S_IFREG:
				if _, err := unix.Lgetxattr(in+name, capabilityXattr, nil); errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
					continue
				}
			default:
				continue
			}
		}
		cfd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			s.fail(q, err)
			continue
		}
		if err := unix.Fstat(cfd, &st); err != nil {
			s.fail(q, err)
		} else {
			s.entry(cfd, q, &st)
		}
		unix.Close(cfd)
	}
}
