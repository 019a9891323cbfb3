// Package capsule is tare's content-addressed snapshot store: a capsule is the workspace
// as it was after one tool call, kept as git keeps a commit's tree.
//
// A store folder (bound into the room at /tare-run, so the in-room `tare snap` writes it
// directly) holds:
//
//	tare-store                        marker and format version
//	blobs/ab/cdef…                    file contents, named by their sha256, written once
//	trees/ab/cdef…                    one object per folder, named by its sha256
//	capsules/NNNN-<tool-use-id>.json  one small record per snapshot
//	cache/<sha256 of folder path>     stat cache per folder (size, mtime, ctime, inode → hash)
//	lock                              flock'd by every snapshot, so two at once take turns
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
	"path/filepath"
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

// Open opens the store in dir, creating its layout if dir is missing or empty.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	s := &Store{dir: abs}
	marker, err := os.ReadFile(filepath.Join(abs, markerName))
	switch {
	case err == nil:
		if string(marker) != markerContent {
			return nil, fmt.Errorf("store %s: %s says %q, this tare reads %q; use a tare of that version or a new store folder",
				abs, markerName, strings.TrimSpace(string(marker)), strings.TrimSpace(markerContent))
		}
		return s, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create store folder: %w", err)
	}
	names, err := readNames(abs)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	for _, n := range names {
		if !slices.Contains([]string{"blobs", "trees", "capsules", "cache", "lock"}, n) && !strings.HasPrefix(n, ".") {
			return nil, fmt.Errorf("store %s: not a tare store (no %s file) and not empty (has %q); pass an empty or new folder", abs, markerName, n)
		}
	}
	for _, sub := range []string{"blobs", "trees", "capsules", "cache"} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return nil, fmt.Errorf("store %s: %w", abs, err)
		}
	}
	if err := SyncDir(abs); err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(filepath.Join(abs, markerName), []byte(markerContent), 0o644); err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	return s, nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

func (s *Store) blobPath(hash string) string {
	return filepath.Join(s.dir, "blobs", hash[:2], hash[2:])
}

func (s *Store) treePath(hash string) string {
	return filepath.Join(s.dir, "trees", hash[:2], hash[2:])
}

func (s *Store) recordPath(c Capsule) string {
	return filepath.Join(s.dir, "capsules", c.Name()+".json")
}

// lock takes the store's lock file exclusively; the returned func releases it.
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store %s: open lock file: %w", s.dir, err)
	}
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

// readTree reads and checks one tree object: its content must hash to its name.
func (s *Store) readTree(hash string) ([]Entry, error) {
	if !isHash(hash) {
		return nil, fmt.Errorf("tree %q: not a sha256 hash", hash)
	}
	data, err := os.ReadFile(s.treePath(hash))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("tree %s is missing from the store", hash)
		}
		return nil, fmt.Errorf("tree %s: %w", hash, err)
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

// recordNames lists the record files of the store, in step order.
func (s *Store) recordNames() ([]string, error) {
	names, err := readNames(filepath.Join(s.dir, "capsules"))
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.dir, err)
	}
	var out []string
	steps := map[string]int{}
	for _, n := range names {
		if step, _, ok := recordName(n); ok {
			out = append(out, n)
			steps[n] = step
		}
	}
	slices.SortFunc(out, func(a, b string) int { return steps[a] - steps[b] })
	return out, nil
}

// readRecord reads and checks one capsule record.
func (s *Store) readRecord(name string) (Capsule, error) {
	path := filepath.Join(s.dir, "capsules", name)
	step, id, ok := recordName(name)
	if !ok {
		return Capsule{}, fmt.Errorf("capsule record %s: name is not NNNN-<tool-use-id>.json", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Capsule{}, fmt.Errorf("capsule record %s: %w", path, err)
	}
	var r record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
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
