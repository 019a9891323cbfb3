// Package capsule is tare's content-addressed snapshot store: a capsule is the workspace
// as it was after one tool call, kept as git keeps a commit's tree.
//
// A room never writes a store tare trusts: it gets the run's store read-only and a staging
// store of its own (OpenStage), which the host takes in with Import, checking every object.
// Every path below a store is opened without following a symlink (beneath.go). A store
// folder holds:
//
//	tare-store                        marker and format version
//	blobs/ab/cdef…                    file contents, named by their sha256, written once
//	trees/ab/cdef…                    one object per folder, named by its sha256
//	capsules/NNNN-<tool-use-id>.json  one small record per snapshot
//	cache/<sha256 of folder path>     stat cache per folder (size, mtime, ctime, inode → hash)
//	lock                              flock'd by every snapshot, so two at once take turns
//	.spare/spare-…                    empty files a watcher made ahead for its next capsule
//
// A blob is the file's bytes as they are (`sha256sum` of a blob gives its name). A tree is
// text, one line per entry sorted by name bytes, names and targets Go-quoted; its hash is
// the sha256 of exactly these bytes (only this canonical form is accepted):
//
//	tare-tree 1
//	file 0755 1234 <blob sha256> "run.sh"
//	dir 0755 56789 <tree sha256> "src"
//	symlink 0777 9 "README.md" "link"
//
// (mode in octal with setuid/setgid/sticky; size: a file's length, the total of the files
// below a folder, a target's length). A record is JSON: format "tare-capsule 1", step,
// tool_use_id, root, time, bytes, walk ("full" or "dirty") and unreadable (path and error
// of everything in the workspace the capsule does not hold: pipes, sockets, devices, files
// that could not be read or vanished).
//
// An unchanged folder hashes to the same tree, so it costs nothing in the next capsule and
// identical workspaces share one root. Objects and records are written temp+fsync+rename and
// made durable before the record that names them; the stat cache is only a hint and is
// checksummed instead.
package capsule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const (
	markerName    = "tare-store"
	markerContent = "tare capsule store 1\n"
	recordFormat  = "tare-capsule 1"
)

// Store is an opened store folder. Its methods may be called from several goroutines and
// several processes at once.
type Store struct {
	dir string
	// root is the store folder, open: every path below it is opened from here without
	// following symlinks (beneath.go).
	root int
	// base, in a room's staging store (OpenStage), is the run's store, read-only: objects
	// found there are not written again, and its capsules come before the staged ones.
	base *Store
	// spares, in a watcher's store, are files made ahead for the next capsule (spare.go).
	spares *spares

	// hashed counts the file bytes read to hash them, so tests can see the stat cache work.
	hashed atomic.Int64
	// beforeRead, when set (by tests), runs just before a file is opened to be hashed.
	beforeRead func(rel string)
}

// Capsule is the record of one snapshot.
type Capsule struct {
	// Step numbers the capsules of a store from 0 in the order they were taken.
	Step int `json:"step"`
	// ID is the tool-use id the snapshot was taken for ("start" for the project before a run).
	ID string `json:"tool_use_id"`
	// Root is the hash of the workspace's top folder tree.
	Root string `json:"root"`
	// Time is when the snapshot was taken.
	Time time.Time `json:"time"`
	// Bytes is the total size of the files in the capsule.
	Bytes int64 `json:"bytes"`
	// Walk says how the workspace was examined: "full" or "dirty" (only the given paths).
	Walk string `json:"walk"`
	// Unreadable lists what is in the workspace but not in the capsule, and why.
	Unreadable []Unreadable `json:"unreadable"`
}

// Unreadable is a path the snapshot could not store, with the reason.
type Unreadable struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Name is the record's file name without ".json", e.g. "0003-toolu_01ab".
func (c Capsule) Name() string { return fmt.Sprintf("%04d-%s", c.Step, c.ID) }

// record is the JSON written to capsules/: a Capsule plus its format.
type record struct {
	Format string `json:"format"`
	Capsule
}

// validID reports whether id is what a tool-use id may be, as it becomes part of a file
// name: 1 to 200 letters, digits, '_', '.' or '-'. (A function, not a regexp: the
// compiled {1,200} cost every tare process, `tare snap` after each tool call
// included, 2 ms at start.)
func validID(id string) bool {
	if len(id) == 0 || len(id) > 200 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Open opens the store in dir, creating its layout if dir is missing or empty. The store's
// own folders are never followed if they are symlinks: a store that has one is refused.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create store folder: %w", err)
	}
	s, err := openRoot(abs)
	if err != nil {
		return nil, err
	}
	marker, err := readRegular(s.root, markerName, 4096)
	switch {
	case err == nil:
		if string(marker) != markerContent {
			return nil, fmt.Errorf("store %s: %s says %q, this tare reads %q; use a tare of that version or a new store folder",
				abs, markerName, strings.TrimSpace(string(marker)), strings.TrimSpace(markerContent))
		}
		return s, s.checkLayout()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, noFollowError("store "+abs+": "+markerName, err)
	}
	names, err := readDirNames(s.root)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	for _, n := range names {
		if !slices.Contains([]string{"blobs", "trees", "capsules", "cache", "lock"}, n) && !strings.HasPrefix(n, ".") {
			return nil, fmt.Errorf("store %s: not a tare store (no %s file) and not empty (has %q); pass an empty or new folder", abs, markerName, n)
		}
	}
	for _, sub := range storeFolders {
		if err := unix.Mkdirat(s.root, sub, 0o755); err != nil && err != unix.EEXIST {
			return nil, fmt.Errorf("store %s: make %s: %w", abs, sub, err)
		}
	}
	if err := s.checkLayout(); err != nil {
		return nil, err
	}
	if err := SyncDir(abs); err != nil {
		return nil, err
	}
	a, err := s.create(markerName, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := a.Write([]byte(markerContent)); err != nil {
		a.Abort()
		return nil, err
	}
	if err := a.Commit(); err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	return s, SyncDir(abs)
}

// OpenStage opens (creating it if empty) the staging store in dir that a room writes, over
// base, the run's store, which it only reads (bound read-only in the room): objects base
// holds are not written again, and base's capsules count first, so a dirty snapshot can
// build on the latest of either. The host takes staged capsules into base with Import.
func OpenStage(dir, base string) (*Store, error) {
	b, err := filepath.Abs(base)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", base, err)
	}
	bs, err := openRoot(b)
	if err != nil {
		return nil, err
	}
	marker, err := readRegular(bs.root, markerName, 4096)
	if err != nil || string(marker) != markerContent {
		return nil, fmt.Errorf("store %s: not a tare store of this version (%s: %v)", b, markerName, err)
	}
	s, err := Open(dir)
	if err != nil {
		return nil, err
	}
	s.base = bs
	return s, nil
}

// storeFolders are the folders of a store's layout.
var storeFolders = []string{"blobs", "trees", "capsules", "cache"}

// openRoot opens the store folder abs; the descriptor is closed when the Store is garbage.
func openRoot(abs string) (*Store, error) {
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	s := &Store{dir: abs, root: fd}
	runtime.AddCleanup(s, func(fd int) { unix.Close(fd) }, fd)
	return s, nil
}

// checkLayout refuses a store whose folders are symlinks (or not folders).
func (s *Store) checkLayout() error {
	for _, sub := range storeFolders {
		fd, err := openBeneath(s.root, sub, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return noFollowError("store "+s.dir+": "+sub, err)
		}
		unix.Close(fd)
	}
	return nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// objectRel is the path of an object below the store: kind is "blobs" or "trees".
func objectRel(kind, hash string) string { return kind + "/" + hash[:2] + "/" + hash[2:] }

// exists reports whether rel is below the store, not through a symlink.
func (s *Store) exists(rel string) bool {
	fd, err := openBeneath(s.root, rel, unix.O_PATH, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// hasObject reports whether the object at rel is in the store or in its base.
func (s *Store) hasObject(rel string) bool {
	return s.exists(rel) || s.base != nil && s.base.exists(rel)
}

// create starts an atomic write of rel below the store; no folder on the way may be a
// symlink, so a planted one cannot send the write elsewhere.
func (s *Store) create(rel string, perm fs.FileMode) (*AtomicFile, error) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	dirfd, err := openBeneath(s.root, dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, noFollowError("store "+s.dir+": open folder of "+rel, err)
	}
	if s.spares != nil {
		if a := s.spares.take(dirfd, true, name, filepath.Join(s.dir, rel), perm); a != nil {
			return a, nil
		}
	}
	return createAt(dirfd, true, name, filepath.Join(s.dir, rel), perm)
}

// syncDir fsyncs the folder rel below the store.
func (s *Store) syncDir(rel string) error {
	fd, err := openBeneath(s.root, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return noFollowError("store "+s.dir+": open folder "+rel+" to fsync it", err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("fsync folder %s: %w", filepath.Join(s.dir, rel), err)
	}
	return nil
}

// lock takes the store's lock file exclusively; the returned func releases it.
func (s *Store) lock() (func(), error) {
	fd, err := openBeneath(s.root, "lock", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		return nil, noFollowError("store "+s.dir+": open lock file", err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(s.dir, "lock"))
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store %s: flock: %w", s.dir, err)
	}
	return func() { f.Close() }, nil
}

// maxTree bounds a tree object read into memory (a folder of a million entries is ~150 MB).
const maxTree = 256 << 20

// readTree reads and checks one tree object (from the store, else its base): its content
// must hash to its name.
func (s *Store) readTree(hash string) ([]Entry, error) {
	if !isHash(hash) {
		return nil, fmt.Errorf("tree %q: not a sha256 hash", hash)
	}
	data, err := readRegular(s.root, objectRel("trees", hash), maxTree)
	if errors.Is(err, fs.ErrNotExist) && s.base != nil {
		data, err = readRegular(s.base.root, objectRel("trees", hash), maxTree)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("tree %s is missing from the store", hash)
		}
		return nil, noFollowError("tree "+hash, err)
	}
	if got := hashBytes(data); got != hash {
		return nil, fmt.Errorf("tree %s is corrupt: its content hashes to %s", hash, got)
	}
	entries, err := decodeTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s is malformed: %w", hash, err)
	}
	return entries, nil
}

// recordName splits "0003-toolu_x.json" into its step and id.
func recordName(name string) (step int, id string, ok bool) {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return 0, "", false
	}
	num, id, ok := strings.Cut(base, "-")
	if !ok || len(num) < 4 || !validID(id) {
		return 0, "", false
	}
	step, err := strconv.Atoi(num)
	if err != nil || step < 0 {
		return 0, "", false
	}
	return step, id, true
}

// recordNames lists the record files of the store (and of its base), in step order.
func (s *Store) recordNames() ([]string, error) {
	names, err := readDirBeneath(s.root, "capsules")
	if err != nil {
		return nil, noFollowError("store "+s.dir+": capsules", err)
	}
	if s.base != nil {
		more, err := s.base.recordNames()
		if err != nil {
			return nil, err
		}
		names = append(names, more...)
	}
	var out []string
	steps := map[string]int{}
	for _, n := range names {
		if step, _, ok := recordName(n); ok && steps[n] == 0 {
			out = append(out, n)
			steps[n] = step + 1
		}
	}
	slices.SortFunc(out, func(a, b string) int { return steps[a] - steps[b] })
	return out, nil
}

// maxRecord bounds a capsule record (its unreadable list can be long).
const maxRecord = 64 << 20

// readRecord reads and checks one capsule record (from the store, else its base).
func (s *Store) readRecord(name string) (Capsule, error) {
	path := filepath.Join(s.dir, "capsules", name)
	if _, _, ok := recordName(name); !ok {
		return Capsule{}, fmt.Errorf("capsule record %s: name is not NNNN-<tool-use-id>.json", path)
	}
	data, err := readRegular(s.root, "capsules/"+name, maxRecord)
	if errors.Is(err, fs.ErrNotExist) && s.base != nil {
		return s.base.readRecord(name)
	}
	if err != nil {
		return Capsule{}, noFollowError("capsule record "+path, err)
	}
	return parseRecord(path, name, data)
}

// parseRecord decodes and checks the record data of the file name (path, for messages).
func parseRecord(path, name string, data []byte) (Capsule, error) {
	step, id, ok := recordName(name)
	if !ok {
		return Capsule{}, fmt.Errorf("capsule record %s: name is not NNNN-<tool-use-id>.json", path)
	}
	var r record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&r)
	if err != nil {
		return Capsule{}, fmt.Errorf("capsule record %s is damaged: %v", path, err)
	}
	switch {
	case r.Format != recordFormat:
		err = fmt.Errorf("format %q, want %q", r.Format, recordFormat)
	case r.Step != step || r.ID != id:
		err = fmt.Errorf("says step %d id %q, its name says step %d id %q", r.Step, r.ID, step, id)
	case !isHash(r.Root):
		err = fmt.Errorf("root %q is not a sha256 hash", r.Root)
	case r.Walk != "full" && r.Walk != "dirty":
		err = fmt.Errorf("walk %q is neither full nor dirty", r.Walk)
	}
	if err != nil {
		return Capsule{}, fmt.Errorf("capsule record %s is damaged: %v", path, err)
	}
	return r.Capsule, nil
}

// List returns every capsule of the store in step order. A damaged record is an error
// naming it (run Verify for the whole picture).
func (s *Store) List() ([]Capsule, error) {
	names, err := s.recordNames()
	if err != nil {
		return nil, err
	}
	out := make([]Capsule, 0, len(names))
	for _, n := range names {
		c, err := s.readRecord(n)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// readNames lists a folder's names without stat'ing them.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
