package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// RuntimeDir is where an image room has tare's own runtime for the agent (node, its shared
// libraries and their loader), read-only: never the host's /usr, nor the image's, whose libc
// may be older or another one altogether.
const RuntimeDir = "/.tare/runtime"

// Image roots a room in an environment image's root filesystem (see package environ) instead
// of the host's /usr: the image's files are the room's /, read-only, and the workspace is
// bound read-write at the image's WORKDIR, so a task saying /app means the workspace. tare's
// own parts are as in every room: the fresh HOME and its files, the synthetic identity, the
// relays' sockets, the run store, the tare binaries and the agent runtime, each mounted over
// a mount point PrepareRoot made.
//
// What runs in the room before the command comes from tare, not the image: the relay and the
// lifeline from Room.Helper, tare-room, which is static; without a Helper they run from
// Room.Tare, which needs a libc like the host's in the image. An agent's node comes from
// Runtime when the image has none on its PATH.
type Image struct {
	Root    string            // host folder of the image's root filesystem, prepared by PrepareRoot
	WorkDir string            // the image's WORKDIR, where the workspace is bound ("" = WorkDir, as in every room)
	Env     map[string]string // the image's ENV; its PATH becomes the room's base PATH
	Runtime string            // host folder bound read-only at RuntimeDir ("" = none); its bin/ ends PATH
	Digest  string            // the environment's digest, named in Declared
	User    string            // the image's USER, named in Declared (the room's user is always User)
	// AtWork binds the workspace at /work too, with the same guards, and starts the command
	// there: the agent CLIs' settings (trusted folders) and sessions (Claude's -work project,
	// pi's --work-- folder) are at /work, so an agent room keeps them there while the
	// WORKDIR holds the same files, for an instruction that names it and for the check.
	AtWork bool
}

// mountPoints are the folders and files tare mounts over in an image room; PrepareRoot makes
// them in the image's root, which the room sees read-only.
var (
	rootDirs  = []string{"/proc", "/dev", "/tmp", WorkDir, HomeDir, "/opt/tare", AgentDir, SockDir, RunDir, StoreDir, RuntimeDir, "/etc"}
	rootFiles = []string{"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf"}
)

// PrepareRoot makes, in the image root filesystem at root, the mount points an image room
// needs (and the image's WORKDIR), without following any symlink of the image: a bind made
// through /home -> /somewhere would land on the host. The root is tare's cache, made once per
// image; a path the image has as a symlink is refused with the fix.
func PrepareRoot(root, workdir string) error {
	if workdir == "" {
		workdir = WorkDir
	}
	if !path.IsAbs(workdir) || path.Clean(workdir) != workdir {
		return fmt.Errorf("image WORKDIR %q is not a clean absolute path: fix the Dockerfile's WORKDIR", workdir)
	}
	for _, d := range append([]string{workdir}, rootDirs...) {
		if err := mkdirNoFollow(root, d); err != nil {
			return err
		}
	}
	for _, f := range rootFiles {
		if err := mkdirNoFollow(root, path.Dir(f)); err != nil {
			return err
		}
		p := filepath.Join(root, f)
		st, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
		case err != nil:
			return err
		case st.Mode()&fs.ModeSymlink != 0:
			// Debian images link /etc/resolv.conf nowhere useful; the room binds its own.
			if err := os.Remove(p); err != nil {
				return err
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
		case !st.Mode().IsRegular():
			return fmt.Errorf("image root: %s is not a file: the room mounts its own there", f)
		}
	}
	return nil
}

// mkdirNoFollow makes dir (absolute inside root) and its parents below root, refusing a
// symlink on the way.
func mkdirNoFollow(root, dir string) error {
	cur := root
	for _, part := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("image root: %s is a symlink, and a room mounts at %s: fix: make it a folder in the Dockerfile", strings.TrimPrefix(cur, root), dir)
		case !st.IsDir():
			return fmt.Errorf("image root: %s is not a folder, and a room mounts at %s: fix: make it a folder in the Dockerfile", strings.TrimPrefix(cur, root), dir)
		}
	}
	return nil
}

// workDirs are where the room's workspace is bound: workDir, and /work too for an image
// room that asks for it (Image.AtWork).
func (r Room) workDirs() []string {
	if wd := r.workDir(); r.Image != nil && r.Image.AtWork && wd != WorkDir {
		return []string{wd, WorkDir}
	}
	return []string{r.workDir()}
}

// cwd is where the room's command starts: its last workspace folder.
func (r Room) cwd() string {
	wds := r.workDirs()
	return wds[len(wds)-1]
}

// workDir is where the room's workspace is: WorkDir, or the image's WORKDIR.
func (r Room) workDir() string {
	if r.Image != nil && r.Image.WorkDir != "" {
		return r.Image.WorkDir
	}
	return WorkDir
}

// basePathValue ends the room's PATH: the image's PATH (Debian's default when it sets none)
// then tare's runtime, so the image's own tools win for the task and an agent's
// `#!/usr/bin/env node` finds tare's node where the image has none.
func (r Room) basePathValue() string {
	if r.Image == nil {
		return basePath
	}
	p := basePath
	if v, ok := r.Image.Env["PATH"]; ok && v != "" {
		p = v
	}
	if r.Image.Runtime != "" {
		p += ":" + RuntimeDir + "/bin"
	}
	return p
}

// checkImage validates the Image part of the spec without touching the disk.
func (r Room) checkImage() error {
	im := r.Image
	if err := hostPath("Image.Root", im.Root); err != nil {
		return err
	}
	if im.Runtime != "" {
		if err := hostPath("Image.Runtime", im.Runtime); err != nil {
			return err
		}
	}
	if w := im.WorkDir; w != "" && (!path.IsAbs(w) || path.Clean(w) != w || w == "/") {
		return fmt.Errorf("room: Image.WorkDir %q must be a clean absolute folder other than /: it is where the workspace is bound", w)
	}
	for _, p := range reservedImage {
		if w := r.workDir(); w == p || strings.HasPrefix(w, p+"/") || strings.HasPrefix(p, w+"/") {
			return fmt.Errorf("room: Image.WorkDir %q collides with the room's %s: the image's WORKDIR must be a folder of its own, such as /app", w, p)
		}
	}
	if w := r.workDir(); im.AtWork && w != WorkDir && (strings.HasPrefix(w, WorkDir+"/") || strings.HasPrefix(WorkDir, w+"/")) {
		return fmt.Errorf("room: Image.WorkDir %q is above or below %s, where an agent's room binds the workspace too: the image's WORKDIR must be a folder of its own, such as /app", w, WorkDir)
	}
	for k, v := range im.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("room: Image.Env has %q, no variable a room can carry: drop it", k)
		}
	}
	return nil
}

// reservedImage are the room's own paths an image's WORKDIR may not be at, above or below.
var reservedImage = []string{"/proc", "/dev", "/tmp", "/etc", "/usr", HomeDir, "/opt/tare", AgentDir, SockDir, RunDir, StoreDir, RuntimeDir}

// validateImage checks on the host that the image root holds every mount point the room
// needs (PrepareRoot makes them), none of them through a symlink.
func (r Room) validateImage() error {
	im := r.Image
	st, err := os.Stat(im.Root)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("room: Image.Root %q is not a folder: build the environment again (tare env build DIR)", im.Root)
	}
	if im.Runtime != "" {
		if _, err := os.Stat(im.Runtime); err != nil {
			return fmt.Errorf("room: Image.Runtime %q: %v: let tare make the runtime again", im.Runtime, errors.Unwrap(err))
		}
	}
	need := append([]string{r.workDir()}, rootDirs...)
	need = append(need, rootFiles...)
	for i, b := range r.Binds {
		if b.Try && !b.Tmpfs {
			if _, err := os.Stat(b.Source); err != nil {
				continue
			}
		}
		if r.inMemory(b.Dest, i) {
			continue // bwrap makes its mount point in a fresh folder of the room's, not in the image
		}
		if err := noSymlinkIn(im.Root, b.Dest); err != nil {
			return fmt.Errorf("room: Binds[%d].Dest %q: %v: an image room mounts only over paths its image has", i, b.Dest, err)
		}
	}
	for _, p := range need {
		if err := noSymlinkIn(im.Root, p); err != nil {
			return fmt.Errorf("room: Image.Root %q: %v: build the environment again (tare env build DIR), which prepares its mount points", im.Root, err)
		}
	}
	return nil
}

// inMemory says whether p is below one of the room's fresh in-memory folders made before
// Binds[i] is mounted: /tmp, HOME, /dev/shm or an earlier Tmpfs bind.
func (r Room) inMemory(p string, i int) bool {
	dirs := []string{"/tmp", HomeDir, ShmDir}
	for _, b := range r.Binds[:i] {
		if b.Tmpfs {
			dirs = append(dirs, b.Dest)
		}
	}
	for _, d := range dirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// noSymlinkIn checks that p (absolute inside root) exists in root and no part of it is a symlink.
func noSymlinkIn(root, p string) error {
	cur := root
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if err != nil {
			return fmt.Errorf("%s is missing in the image", p)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink in the image", strings.TrimPrefix(cur, root))
		}
	}
	return nil
}
