package capsule

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"slices"

	"golang.org/x/sys/unix"
)

// The stat cache lets a snapshot skip hashing files that did not change: for each file it
// keeps the stat fields every write changes (size, mtime, ctime, inode, device) and the
// content hash they went with. There is one cache file per folder of the workspace, so a
// snapshot that touches one folder rewrites one small file.
//
// It is a hint, not a record: it is written with a rename but without fsync, ends with a
// checksum, and a cache file that is missing, torn or from another folder is ignored (the
// files are hashed again).

// cacheMagic starts every cache file; the number is the format version. The format is
// binary (it is read for every folder on a full walk): the magic, the folder path, the
// folder's tree hash (zeros: unknown), the entries (name, device, inode, size, mtime,
// ctime as uvarints, then the 32-byte content hash), and the sha256 of all that.
const cacheMagic = "tare-statcache 2\n"

// statKey is what must be equal for a cached hash to be trusted.
type statKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
}

func keyOf(st *unix.Stat_t) statKey {
	return statKey{
		dev: st.Dev, ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}
}

type cacheEntry struct {
	key  statKey
	hash string
}

// dirCache is the cache of one workspace folder.
type dirCache struct {
	rel     string // folder path relative to the workspace, "." for the top
	tree    string // the folder's tree hash when the cache was written ("" unknown)
	entries map[string]cacheEntry
}

func (c *dirCache) equal(o *dirCache) bool {
	return c.rel == o.rel && c.tree == o.tree && maps.Equal(c.entries, o.entries)
}

// cacheRel is the cache file of workspace folder rel, below the store.
func (s *Store) cacheRel(rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return "cache/" + hex.EncodeToString(sum[:])
}

// maxCache bounds a cache file read (one entry is ~100 bytes).
const maxCache = 128 << 20

// loadCache reads the cache of one folder; any problem gives an empty cache.
func (s *Store) loadCache(rel string) *dirCache {
	// Only the store's own cache: a staging store's base holds the host's, for other files.
	if data, err := readRegular(s.root, s.cacheRel(rel), maxCache); err == nil {
		if c, err := decodeCache(data, rel); err == nil {
			return c
		}
	}
	return &dirCache{rel: rel, entries: map[string]cacheEntry{}}
}

var errCache = errors.New("damaged stat cache")

func decodeCache(data []byte, rel string) (*dirCache, error) {
	if len(data) < len(cacheMagic)+sha256.Size {
		return nil, errCache
	}
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return nil, errCache
	}
	r := cacheReader{b: body}
	if string(r.bytes(len(cacheMagic))) != cacheMagic || r.str() != rel {
		return nil, errCache
	}
	c := &dirCache{rel: rel, tree: r.hash()}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(body)) {
		return nil, errCache
	}
	c.entries = make(map[string]cacheEntry, n)
	for range n {
		name := r.str()
		var e cacheEntry
		e.key.dev, e.key.ino = r.uvarint(), r.uvarint()
		e.key.size, e.key.mtime, e.key.ctime = int64(r.uvarint()), int64(r.uvarint()), int64(r.uvarint())
		e.hash = r.hash()
		if r.err != nil || e.hash == "" {
			return nil, errCache
		}
		c.entries[name] = e
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errCache
	}
	return c, nil
}

// cacheReader reads the fields of a cache file; the first error sticks.
type cacheReader struct {
	b   []byte
	err error
}

func (r *cacheReader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errCache
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *cacheReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errCache
		return ""
	}
	return string(r.bytes(int(n)))
}

// hash reads 32 bytes as a hex hash; all zeros is "".
func (r *cacheReader) hash() string {
	b := r.bytes(sha256.Size)
	if b == nil || bytes.Equal(b, make([]byte, sha256.Size)) {
		return ""
	}
	return hex.EncodeToString(b)
}

func (c *dirCache) encode() []byte {
	b := make([]byte, 0, 64+len(c.entries)*80)
	b = append(b, cacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(c.rel)))
	b = append(b, c.rel...)
	b = appendHash(b, c.tree)
	b = binary.AppendUvarint(b, uint64(len(c.entries)))
	for _, n := range slices.Sorted(maps.Keys(c.entries)) {
		e := c.entries[n]
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		for _, v := range []uint64{e.key.dev, e.key.ino, uint64(e.key.size), uint64(e.key.mtime), uint64(e.key.ctime)} {
			b = binary.AppendUvarint(b, v)
		}
		b = appendHash(b, e.hash)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

func appendHash(b []byte, h string) []byte {
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != sha256.Size {
		raw = make([]byte, sha256.Size)
	}
	return append(b, raw...)
}

// lookup returns the cached hash for a file whose stat is st.
func (c *dirCache) lookup(name string, st *unix.Stat_t) (string, bool) {
	e, ok := c.entries[name]
	if !ok || e.key != keyOf(st) {
		return "", false
	}
	return e.hash, true
}

// saveCache writes fresh unless it equals old (what was loaded). Without fsync: a lost or
// torn cache only costs hashing again. An existing cache file is rewritten in place (its
// checksum catches a torn rewrite), so a step makes and deletes no file for it: both cost
// an inode each, which on some file systems is most of a step (spare.go).
func (s *Store) saveCache(old, fresh *dirCache) error {
	if fresh.equal(old) {
		return nil
	}
	data := fresh.encode()
	if rewriteInPlace(s.root, s.cacheRel(fresh.rel), data) {
		return nil
	}
	a, err := s.create(s.cacheRel(fresh.rel), 0o644)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	if err := a.Close(); err != nil {
		a.Abort()
		return err
	}
	return a.Rename()
}

// racy reports whether a file's stat cannot vouch for its content: its ctime is not older
// than the clock tick the snapshot started in, so a later write in that tick could leave
// size, mtime and ctime as they are (the "racy git" problem). ctime is the field no one can
// set back (utimes can set mtime to anything). File times come from the kernel's coarse
// clock, so the snapshot compares them with that clock, read when it started. A racy file
// is not cached, so the next snapshot hashes it again.
func racy(st *unix.Stat_t, coarseStart int64) bool {
	return st.Ctim.Nano() >= coarseStart
}

func coarseNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts); err != nil {
		return 0 // every file is racy: correct, only slower
	}
	return ts.Nano()
}

// rewriteInPlace overwrites the file rel below dirfd with data if it is a regular file of
// one link (not a symlink: openBeneath refuses one), and reports whether it did.
func rewriteInPlace(dirfd int, rel string, data []byte) bool {
	fd, err := openBeneath(dirfd, rel, unix.O_WRONLY, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return false
	}
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return false
		}
		off += n
	}
	return unix.Ftruncate(fd, int64(len(data))) == nil
}
