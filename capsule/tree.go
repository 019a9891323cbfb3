package capsule

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Kind is what a tree entry is. Anything else in a workspace (pipes, sockets, devices) is
// not stored; the capsule record lists it as skipped.
type Kind string

// The kinds of tree entries.
const (
	KindFile    Kind = "file"
	KindDir     Kind = "dir"
	KindSymlink Kind = "symlink"
)

// Entry is one name in a folder of a capsule.
type Entry struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Mode holds the permission bits plus sticky; 0777 for symlinks. Never set-uid or
	// set-gid (see keptMode).
	Mode fs.FileMode `json:"mode"`
	// Size is the content length of a file, the total size of the files below a folder,
	// or the length of a symlink's target.
	Size int64 `json:"size"`
	// Hash is the sha256 (hex) of a file's content (its blob) or of a folder's encoded tree.
	Hash string `json:"hash,omitempty"`
	// Target is a symlink's target, stored as read, never followed.
	Target string `json:"target,omitempty"`
}

// treeHeader starts every encoded tree; the number is the format version.
const treeHeader = "tare-tree 1\n"

// encodeTree is the canonical encoding of a folder: the header, then one line per entry
// in byte order of names:
//
//	file 0755 1234 <sha256 hex> "name"
//	dir 0755 99999 <tree hex> "name"
//	symlink 0777 9 "target" "name"
//
// Names and targets are Go-quoted, so any byte except NUL and '/' round-trips and the
// text stays one line per entry. Entries must be sorted and valid (see checkEntry).
func encodeTree(entries []Entry) []byte {
	var b bytes.Buffer
	b.Grow(len(treeHeader) + len(entries)*100)
	b.WriteString(treeHeader)
	for _, e := range entries {
		b.WriteString(string(e.Kind))
		b.WriteByte(' ')
		fmt.Fprintf(&b, "%04o %d ", unixPerm(e.Mode), e.Size)
		if e.Kind == KindSymlink {
			b.WriteString(strconv.Quote(e.Target))
		} else {
			b.WriteString(e.Hash)
		}
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(e.Name))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// decodeTree parses an encoded tree and accepts only its canonical form (re-encoding gives
// the same bytes), so one folder has exactly one hash.
func decodeTree(data []byte) ([]Entry, error) {
	text, ok := strings.CutPrefix(string(data), treeHeader)
	if !ok {
		return nil, fmt.Errorf("does not start with %q", strings.TrimSpace(treeHeader))
	}
	var entries []Entry
	for n := 2; text != ""; n++ {
		line, rest, ok := strings.Cut(text, "\n")
		if !ok {
			return nil, fmt.Errorf("line %d: no newline at the end (truncated?)", n)
		}
		text = rest
		e, err := parseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(entries) > 0 && entries[len(entries)-1].Name >= e.Name {
			return nil, fmt.Errorf("line %d: %q is not after %q (entries must be sorted, once each)", n, e.Name, entries[len(entries)-1].Name)
		}
		entries = append(entries, e)
	}
	if !bytes.Equal(encodeTree(entries), data) {
		return nil, fmt.Errorf("not in canonical form")
	}
	return entries, nil
}

func parseEntry(line string) (Entry, error) {
	var e Entry
	fields := strings.SplitN(line, " ", 4)
	if len(fields) != 4 {
		return e, fmt.Errorf("want kind, mode, size, reference and name: %q", line)
	}
	e.Kind = Kind(fields[0])
	perm, err := strconv.ParseUint(fields[1], 8, 32)
	if err != nil || perm > 0o7777 {
		return e, fmt.Errorf("bad mode %q", fields[1])
	}
	e.Mode = goMode(uint32(perm))
	if e.Size, err = strconv.ParseInt(fields[2], 10, 64); err != nil || e.Size < 0 {
		return e, fmt.Errorf("bad size %q", fields[2])
	}
	rest := fields[3]
	if e.Kind == KindSymlink {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return e, fmt.Errorf("bad symlink target in %q", rest)
		}
		e.Target, _ = strconv.Unquote(q)
		rest = rest[len(q):]
	} else {
		if len(rest) < 64 {
			return e, fmt.Errorf("bad hash in %q", rest)
		}
		e.Hash, rest = rest[:64], rest[64:]
	}
	rest, ok := strings.CutPrefix(rest, " ")
	if !ok {
		return e, fmt.Errorf("want a space before the name in %q", line)
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil || len(q) != len(rest) {
		return e, fmt.Errorf("bad name %q", rest)
	}
	e.Name, _ = strconv.Unquote(q)
	if perm&^keptMode != 0 && !mutations.acceptSetID {
		return e, fmt.Errorf("%s %q: mode %s claims set-uid or set-gid, which tare never stores or restores: the tree was forged, or stored by a tare from before it stripped them (record the run again)", e.Kind, e.Name, fields[1])
	}
	return e, checkEntry(e)
}

// checkEntry rejects entries that could not come from a real folder or that would escape
// the destination on restore ("..", "a/b").
func checkEntry(e Entry) error {
	if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
		return fmt.Errorf("invalid name %q", e.Name)
	}
	switch e.Kind {
	case KindFile, KindDir:
		if !isHash(e.Hash) || e.Target != "" {
			return fmt.Errorf("%s %q: bad hash %q", e.Kind, e.Name, e.Hash)
		}
	case KindSymlink:
		if e.Target == "" || strings.Contains(e.Target, "\x00") || e.Hash != "" {
			return fmt.Errorf("symlink %q: bad target %q", e.Name, e.Target)
		}
		if e.Mode != 0o777 || e.Size != int64(len(e.Target)) {
			return fmt.Errorf("symlink %q: mode must be 0777 and size the target's length", e.Name)
		}
	default:
		return fmt.Errorf("%q: unknown kind %q", e.Name, e.Kind)
	}
	return nil
}

// sortEntries puts entries in the order encodeTree requires.
func sortEntries(entries []Entry) {
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
}

// treeSize is the total size of the files below a folder: what its entry's Size holds.
func treeSize(entries []Entry) int64 {
	var n int64
	for _, e := range entries {
		if e.Kind != KindSymlink {
			n += e.Size
		}
	}
	return n
}

func hashBytes(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// keptMode is what a capsule keeps of a mode: the permissions and the sticky bit. Set-uid
// and set-gid are dropped when a snapshot reads a mode and when a restore writes one, and a
// tree that claims them is refused (parseEntry). What a room wrote belongs to the operator
// on the host: a set-uid file restored from agent bytes (a tail, --keep, a Slurm node, a
// recording's original/) would run the agent's code as the operator for any local user.
const keptMode = 0o1777

// unixPerm turns a Go mode into the Unix permission number (as in chmod), within keptMode.
func unixPerm(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		p |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		p |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	if !mutations.keepSetID {
		p &= keptMode
	}
	return p
}

// goMode is the inverse of unixPerm, within keptMode.
func goMode(p uint32) fs.FileMode {
	if !mutations.keepSetID {
		p &= keptMode
	}
	m := fs.FileMode(p & 0o777)
	if p&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if p&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if p&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}
