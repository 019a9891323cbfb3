package capsule

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// ChangeKind is how a path differs between two capsules.
type ChangeKind string

// The kinds of changes Diff reports.
const (
	Added       ChangeKind = "added"
	Removed     ChangeKind = "removed"
	Modified    ChangeKind = "modified" // a file's content or a symlink's target (the mode may have changed too)
	ModeChanged ChangeKind = "mode"     // same content, other permission bits
	TypeChanged ChangeKind = "type"     // e.g. a file became a folder or a symlink
)

// Change is one path that differs between two capsules.
type Change struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
	Old  *Entry     `json:"old,omitempty"` // nil when added
	New  *Entry     `json:"new,omitempty"` // nil when removed
}

// Diff lists what changed from capsule a to capsule b, sorted by path. Everything below an
// added or removed folder is listed too. Only subtrees whose hashes differ are read.
func (s *Store) Diff(a, b Capsule) ([]Change, error) {
	var out []Change
	if err := s.diffTrees("", a.Root, b.Root, &out); err != nil {
		return nil, fmt.Errorf("diff capsules %s and %s: %w", a.Name(), b.Name(), err)
	}
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out, nil
}

func (s *Store) diffTrees(prefix, a, b string, out *[]Change) error {
	if a == b {
		return nil
	}
	olds, err := s.readTree(a)
	if err != nil {
		return err
	}
	news, err := s.readTree(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(olds) || j < len(news) {
		switch {
		case j == len(news) || (i < len(olds) && olds[i].Name < news[j].Name):
			if err := s.whole(prefix, olds[i], Removed, out); err != nil {
				return err
			}
			i++
		case i == len(olds) || news[j].Name < olds[i].Name:
			if err := s.whole(prefix, news[j], Added, out); err != nil {
				return err
			}
			j++
		default:
			if err := s.diffEntry(prefix, olds[i], news[j], out); err != nil {
				return err
			}
			i++
			j++
		}
	}
	return nil
}

func (s *Store) diffEntry(prefix string, o, n Entry, out *[]Change) error {
	p := path.Join(prefix, o.Name)
	change := func(k ChangeKind) { *out = append(*out, Change{Path: p, Kind: k, Old: &o, New: &n}) }
	switch {
	case o.Kind != n.Kind:
		change(TypeChanged)
		if o.Kind == KindDir {
			if err := s.below(p, o.Hash, Removed, out); err != nil {
				return err
			}
		}
		if n.Kind == KindDir {
			return s.below(p, n.Hash, Added, out)
		}
	case o.Kind == KindDir:
		if o.Mode != n.Mode {
			change(ModeChanged)
		}
		return s.diffTrees(p, o.Hash, n.Hash, out)
	case o.Hash != n.Hash || o.Target != n.Target:
		change(Modified)
	case o.Mode != n.Mode:
		change(ModeChanged)
	}
	return nil
}

// whole reports e (added or removed) and, for a folder, everything below it.
func (s *Store) whole(prefix string, e Entry, k ChangeKind, out *[]Change) error {
	p := path.Join(prefix, e.Name)
	c := Change{Path: p, Kind: k}
	if k == Added {
		c.New = &e
	} else {
		c.Old = &e
	}
	*out = append(*out, c)
	if e.Kind == KindDir {
		return s.below(p, e.Hash, k, out)
	}
	return nil
}

func (s *Store) below(p, tree string, k ChangeKind, out *[]Change) error {
	entries, err := s.readTree(tree)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := s.whole(p, e, k, out); err != nil {
			return err
		}
	}
	return nil
}
