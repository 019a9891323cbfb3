package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The in-room walk looks at every entry of the room (but the kernel's own file systems and
// /usr) for three things: host files by (dev, ino), base names, and well-known secret paths.
// It reads each folder with getdents, whose records carry the inode and the type, so it
// never stats a file: a project of 100,000 files costs a fraction of a second, and nothing
// (node_modules included) has to be left out to keep it fast. A walk that could not finish
// says why (WalkStopped): the probe then reads its detectors as blind, never as clean.

// DefaultMaxFiles caps the entries one walk looks at: far beyond any real project, but a
// room holding a whole host (--project / with --allow-dirty) is not walked forever.
const DefaultMaxFiles = 5_000_000

// walkBudget caps the time one walk takes, for file systems slow to list (a network mount).
const walkBudget = 60 * time.Second

// secretMax caps the secret files one walk reports; the rest are counted.
const secretMax = 200

// unenteredMax caps the folders one walk names as not entered; the rest are counted.
const unenteredMax = 20

// SecretPaths are the well-known places of credentials, as path tails: a folder (ending in
// "/") whose every file is secret, or a file. The walk reports each one it meets anywhere in
// the room, named by the tail that matched.
var SecretPaths = []string{
	".ssh/", ".gnupg/", ".aws/", ".azure/", ".config/gcloud/", ".oci/",
	".netrc", ".git-credentials", ".docker/config.json", ".kube/config", ".config/gh/hosts.yml", ".pgpass",
}

// virtualFS are the file systems whose entries are the kernel's, not files of anyone's:
// a mount of one is not walked (the room's own /proc, or the host's under a /work that is
// the host root).
var virtualFS = map[int64]bool{
	unix.PROC_SUPER_MAGIC: true, unix.SYSFS_MAGIC: true, unix.CGROUP_SUPER_MAGIC: true,
	unix.CGROUP2_SUPER_MAGIC: true, unix.DEBUGFS_MAGIC: true, unix.TRACEFS_MAGIC: true,
	unix.SECURITYFS_MAGIC: true, unix.BPF_FS_MAGIC: true, unix.DEVPTS_SUPER_MAGIC: true,
	unix.PSTOREFS_MAGIC: true, unix.SELINUX_MAGIC: true, unix.EFIVARFS_MAGIC: true,
}

// walkSkip are trees never walked: the kernel's, and /usr, the host's system files bound
// read-only in every room (the runtime at AgentDir is walked: its host folder may be anything).
var walkSkip = map[string]bool{"/proc": true, "/dev": true, "/sys": true, "/usr": true}

// walker is one walk's state.
type walker struct {
	idents   map[[2]uint64]string
	names    map[string]bool
	mounts   map[string]bool // mount points: a file mounted on its own has its own identity
	within   string          // the one folder the walk looks into ("" = all; InspectOptions.Within)
	max      int
	deadline time.Time
	found    []Found
	secrets  int // secret files met, reported or not
	// unentered are the folders the room's user owns that the walk could not open or list.
	unentered []string
	n         int
	stopped   string
	buf       []byte
}

// dirent is one record of a folder listing.
type dirent struct {
	name string
	ino  uint64
	typ  uint8
}

// walk looks at every entry below o.Root and fills in what matched, the entries looked at,
// the secret files met beyond secretMax, and why it stopped early ("" when it saw everything).
func walk(o InspectOptions, v *View) {
	w := &walker{idents: map[[2]uint64]string{}, names: map[string]bool{}, mounts: map[string]bool{},
		max: o.MaxFiles, deadline: time.Now().Add(walkBudget), buf: make([]byte, 64<<10)}
	if w.max <= 0 {
		w.max = DefaultMaxFiles
	}
	if within := path.Clean(o.Within); o.Within != "" && within != "/" {
		w.within = within
	}
	for _, id := range o.Idents {
		w.idents[[2]uint64{id.Dev, id.Ino}] = id.Label
	}
	for _, n := range o.Names {
		w.names[n] = true
	}
	for _, m := range v.Mounts {
		w.mounts[m.Point] = true
	}
	root := path.Clean(o.Root)
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		v.WalkStopped = fmt.Sprintf("the walk could not start at %s: %s", root, errName(err))
		return
	}
	w.match(root, path.Base(root), st.Dev, st.Ino)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		w.dir(root, 0, nil, "")
	}
	v.Found, v.Walked, v.WalkStopped = w.found, w.n, w.stopped
	v.SecretsUnlisted = max(0, w.secrets-secretMax)
	v.Unentered = w.unentered[:min(len(w.unentered), unenteredMax)]
	v.UnenteredMore = len(w.unentered) - len(v.Unentered)
}

// dir walks the folder at p, on device dev unless it is a mount point. tail holds the last
// names of p (for SecretPaths); secret is the SecretPaths entry whose folder p is below.
func (w *walker) dir(p string, dev uint64, tail []string, secret string) {
	if w.stopped != "" {
		return
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case err == unix.EACCES || err == unix.EPERM:
		w.refused(p)
		return
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return // gone or replaced since its folder was listed
	case err != nil:
		// A path too long to open from the root, say: what lies below was not seen.
		w.stopped = fmt.Sprintf("opening %s failed: %s", p, errName(err))
		return
	}
	// A mount point was stat'ed by its parent already, so its device tells nothing: check
	// the file system of every folder that is one, or whose device differs.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && (st.Dev != dev || w.mounts[p]) {
		var fs unix.Statfs_t
		if unix.Fstatfs(fd, &fs) == nil && virtualFS[int64(fs.Type)] {
			unix.Close(fd)
			return
		}
		dev = st.Dev
	}
	ents, err := w.list(fd)
	unix.Close(fd)
	if err == unix.EACCES || err == unix.EPERM {
		w.refused(p)
		return
	}
	if err != nil {
		w.stopped = fmt.Sprintf("listing %s failed: %s", p, errName(err))
		return
	}
	for _, e := range ents {
		w.n++
		if w.n > w.max {
			w.stopped = fmt.Sprintf("the walk stopped at %d entries", w.max)
			return
		}
		if w.n%4096 == 0 && time.Now().After(w.deadline) {
			w.stopped = fmt.Sprintf("the walk stopped after %s at %d entries", walkBudget, w.n)
			return
		}
		child := p + "/" + e.name
		if p == "/" {
			child = "/" + e.name
		}
		typ, ino, edev := e.typ, e.ino, dev
		if typ == unix.DT_UNKNOWN || w.mounts[child] {
			// A mount point's listing names what lies under the mount; a file system that
			// gives no types needs the stat.
			var cst unix.Stat_t
			if err := unix.Lstat(child, &cst); err != nil {
				continue
			}
			ino, edev = cst.Ino, cst.Dev
			typ = dtOf(cst.Mode)
		}
		ctail := append(tail[len(tail)-min(len(tail), 3):len(tail):len(tail)], e.name)
		csecret, report := secret, secret != "" && typ != unix.DT_DIR
		if secret == "" {
			switch typ {
			case unix.DT_DIR:
				csecret = secretOf(ctail, true) // its files are reported, not the folder
			case unix.DT_LNK:
				// A link named as a secret folder or file leads to one, wherever it points.
				if csecret = secretOf(ctail, false); csecret == "" {
					csecret = secretOf(ctail, true)
				}
				report = csecret != ""
			default:
				csecret = secretOf(ctail, false)
				report = csecret != ""
			}
		}
		w.match(child, e.name, edev, ino)
		if report {
			w.secret(child, edev, ino, csecret)
		}
		if typ == unix.DT_DIR && !walkSkip[child] && w.enters(child) {
			w.dir(child, edev, ctail, csecret)
		}
	}
}

// enters says whether the walk looks into folder p: every folder, or with within set only
// within, the folders on the way to it and those below it.
func (w *walker) enters(p string) bool {
	return w.within == "" || p == w.within || strings.HasPrefix(p, w.within+"/") || strings.HasPrefix(w.within, p+"/")
}

// match records an entry that is a host file by identity or a looked-for name.
func (w *walker) match(p, name string, dev, ino uint64) {
	if label, ok := w.idents[[2]uint64{dev, ino}]; ok {
		w.found = append(w.found, Found{Path: p, Dev: dev, Ino: ino, Why: "ident " + label})
	}
	if w.names[name] {
		w.found = append(w.found, Found{Path: p, Dev: dev, Ino: ino, Why: "name " + name})
	}
}

// secret records a file at a well-known secret path.
func (w *walker) secret(p string, dev, ino uint64, secret string) {
	w.secrets++
	if w.secrets <= secretMax {
		w.found = append(w.found, Found{Path: p, Dev: dev, Ino: ino, Why: "secret " + secret})
	}
}

// refused handles a folder the room's user may not open or list. One it owns, the agent
// can open up (chmod 700: the agent owns the project's files), so what lies below was not
// seen: the walk names it and the probe reads blind. One of another owner stays shut to the
// agent too; a secret below it that the agent may still pass to (mode --x) is looked up by name.
func (w *walker) refused(p string) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != unix.ENOENT && (err != nil || st.Uid == uint32(unix.Getuid())) {
		w.unentered = append(w.unentered, p)
	}
	w.guess(p)
}

// guess looks up, below a folder the walk cannot list, the secret files known by name.
func (w *walker) guess(p string) {
	for _, s := range SecretPaths {
		if strings.HasSuffix(s, "/") {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(p+"/"+s, &st) == nil {
			w.secret(p+"/"+s, st.Dev, st.Ino, s)
		}
	}
}

// list reads a whole folder with getdents64, keeping each record's inode and type.
func (w *walker) list(fd int) ([]dirent, error) {
	var out []dirent
	for {
		n, err := unix.Getdents(fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := w.buf[:n]; len(b) >= 19; {
			// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, fmt.Errorf("a malformed directory record")
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				out = append(out, dirent{name: s, ino: binary.NativeEndian.Uint64(b[0:8]), typ: b[18]})
			}
			b = b[reclen:]
		}
	}
}

// secretOf names the SecretPaths entry the path ending in tail is: a secret folder (isDir)
// or a secret file; "" for none.
func secretOf(tail []string, isDir bool) string {
	for _, s := range SecretPaths {
		folder := strings.HasSuffix(s, "/")
		if folder != isDir {
			continue
		}
		parts := strings.Split(strings.TrimSuffix(s, "/"), "/")
		if len(parts) > len(tail) {
			continue
		}
		match := true
		for i, part := range parts {
			if tail[len(tail)-len(parts)+i] != part {
				match = false
				break
			}
		}
		if match {
			return s
		}
	}
	return ""
}

// dtOf is the getdents type of a stat mode.
func dtOf(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFLNK:
		return unix.DT_LNK
	}
	return unix.DT_UNKNOWN
}
