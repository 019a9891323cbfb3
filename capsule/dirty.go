package capsule

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// A dirty snapshot starts from the latest capsule's trees and re-examines only the dirty
// paths: the folders on the way to them are stat'ed (for their mode) but not listed, and
// every tree on the way is re-encoded. So a step that changed one file costs a few stats,
// one hash, one blob and the trees on its path.

// errFull says the dirty paths cover the whole workspace.
var errFull = errors.New("whole workspace dirty")

// dirtyNode is one name on the way to a dirty path.
type dirtyNode struct {
	dirty    bool // re-examine this path and all below it
	children map[string]*dirtyNode
}

// dirtyTree turns paths (relative to workspace, or absolute below it) into a tree of names.
func dirtyTree(workspace string, paths []string) (*dirtyNode, error) {
	root := &dirtyNode{}
	for _, p := range paths {
		rel := p
		if filepath.IsAbs(p) {
			r, err := filepath.Rel(workspace, p)
			if err != nil {
				return nil, fmt.Errorf("dirty path %q: %w", p, err)
			}
			rel = r
		}
		rel = filepath.ToSlash(filepath.Clean(rel))
		if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
			return nil, fmt.Errorf("dirty path %q is outside the workspace %s", p, workspace)
		}
		if rel == "." {
			return nil, errFull
		}
		n := root
		for _, name := range strings.Split(rel, "/") {
			if n.dirty {
				break
			}
			if n.children == nil {
				n.children = map[string]*dirtyNode{}
			}
			child := n.children[name]
			if child == nil {
				child = &dirtyNode{}
				n.children[name] = child
			}
			n = child
		}
		n.dirty, n.children = true, nil
	}
	return root, nil
}

// dirty builds the workspace's root from the capsule in record base and the dirty paths.
func (sn *snapshot) dirty(rootfd int, workspace, base string, paths []string) (Entry, error) {
	tree, err := dirtyTree(workspace, paths)
	if err != nil {
		return Entry{}, err
	}
	prev, err := sn.s.readRecord(base)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %v", errBase, err)
	}
	entries, err := sn.s.readTree(prev.Root)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %v", errBase, err)
	}
	root := Entry{Kind: KindDir}
	if root.Hash, root.Size, err = sn.patchDir(rootfd, ".", entries, tree); err != nil {
		return Entry{}, err
	}
	// What the base could not read stays listed unless its path was examined again.
	for _, u := range prev.Unreadable {
		if !slices.ContainsFunc(sn.examined, func(e string) bool { return u.Path == e || strings.HasPrefix(u.Path, e+"/") }) {
			sn.unreadable = append(sn.unreadable, u)
		}
	}
	return root, nil
}

// patchDir rebuilds the tree of the folder open at dirfd from its previous entries,
// re-examining the names in node.
func (sn *snapshot) patchDir(dirfd int, rel string, prev []Entry, node *dirtyNode) (string, int64, error) {
	if err := sn.ctx.Err(); err != nil {
		return "", 0, err
	}
	byName := make(map[string]Entry, len(prev))
	for _, e := range prev {
		byName[e.Name] = e
	}
	cache := sn.s.loadCache(rel)
	fresh := &dirCache{rel: rel, entries: maps.Clone(cache.entries)}
	for _, name := range slices.Sorted(maps.Keys(node.children)) {
		child := node.children[name]
		p := path.Join(rel, name)
		old, had := byName[name]
		if !child.dirty && had && old.Kind == KindDir {
			e, ok, err := sn.patchSubdir(dirfd, p, old, child)
			if err != nil {
				return "", 0, err
			}
			if ok {
				byName[name] = e
				continue
			}
		}
		// Dirty, or no longer (or not yet) a folder on both sides: look at it afresh.
		sn.examined = append(sn.examined, p)
		delete(byName, name)
		delete(fresh.entries, name)
		e, ok, err := sn.examine(dirfd, rel, name, false, cache, fresh)
		if err != nil {
			return "", 0, err
		}
		if ok {
			byName[name] = e
		}
	}
	return sn.storeTree(slices.Collect(maps.Values(byName)), cache, fresh)
}

// patchSubdir descends into a folder that was a folder in the base capsule and still is.
// ok is false when it is not (then the caller examines it afresh).
func (sn *snapshot) patchSubdir(dirfd int, p string, old Entry, node *dirtyNode) (Entry, bool, error) {
	name := path.Base(p)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Entry{}, false, nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Entry{}, false, nil
	}
	defer unix.Close(fd)
	entries, err := sn.s.readTree(old.Hash)
	if err != nil {
		return Entry{}, false, fmt.Errorf("%w: %v", errBase, err)
	}
	e := Entry{Name: name, Kind: KindDir, Mode: goMode(st.Mode & 0o7777)}
	e.Hash, e.Size, err = sn.patchDir(fd, p, entries, node)
	return e, err == nil, err
}
