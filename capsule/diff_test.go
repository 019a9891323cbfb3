package capsule

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Specs for trees built directly in a store (no workspace): dir{...}, file{...}, link("t").
type (
	dir  map[string]any
	file struct {
		content string
		mode    fs.FileMode
	}
	link  string
	modeD struct {
		mode fs.FileMode
		dir  dir
	}
)

// putTree writes the trees of spec into s and returns the root's hash.
func putTree(t testing.TB, s *Store, spec dir) string {
	t.Helper()
	h, _ := putTreeSized(t, s, spec)
	return h
}

func putTreeSized(t testing.TB, s *Store, spec dir) (string, int64) {
	var entries []Entry
	for name, v := range spec {
		e := Entry{Name: name}
		switch v := v.(type) {
		case file:
			e.Kind, e.Mode, e.Size, e.Hash = KindFile, v.mode, int64(len(v.content)), hashBytes([]byte(v.content))
			if e.Mode == 0 {
				e.Mode = 0o644
			}
		case link:
			e.Kind, e.Mode, e.Size, e.Target = KindSymlink, 0o777, int64(len(v)), string(v)
		case dir:
			e.Kind, e.Mode = KindDir, 0o755
			e.Hash, e.Size = putTreeSized(t, s, v)
		case modeD:
			e.Kind, e.Mode = KindDir, v.mode
			e.Hash, e.Size = putTreeSized(t, s, v.dir)
		default:
			t.Fatalf("bad spec %T", v)
		}
		entries = append(entries, e)
	}
	sortEntries(entries)
	data := encodeTree(entries)
	h := hashBytes(data)
	os.MkdirAll(filepath.Dir(s.treePath(h)), 0o755)
	if err := WriteFileAtomic(s.treePath(h), data, 0o444); err != nil {
		t.Fatal(err)
	}
	return h, treeSize(entries)
}

func TestDiff(t *testing.T) {
	base := dir{
		"a.txt": file{content: "a"},
		"a":     dir{"x": file{content: "x"}, "deep": dir{"y": file{content: "y"}}},
		"run":   file{content: "#!/bin/sh", mode: 0o755},
		"l":     link("a.txt"),
		"keep":  dir{"k": file{content: "k"}},
	}
	with := func(edit func(d dir)) dir {
		var clone func(d dir) dir
		clone = func(d dir) dir {
			out := dir{}
			for k, v := range d {
				if sub, ok := v.(dir); ok {
					v = clone(sub)
				}
				out[k] = v
			}
			return out
		}
		c := clone(base)
		edit(c)
		return c
	}
	tests := []struct {
		name string
		b    dir
		want []string // "kind path"
	}{
		{"identical", with(func(d dir) {}), nil},
		{"file added", with(func(d dir) { d["new"] = file{content: "n"} }), []string{"added new"}},
		{"file removed", with(func(d dir) { delete(d, "a.txt") }), []string{"removed a.txt"}},
		{"content changed", with(func(d dir) { d["a.txt"] = file{content: "A"} }), []string{"modified a.txt"}},
		{"content and mode changed", with(func(d dir) { d["run"] = file{content: "#!/bin/bash", mode: 0o700} }), []string{"modified run"}},
		{"executable bit dropped", with(func(d dir) { d["run"] = file{content: "#!/bin/sh", mode: 0o644} }), []string{"mode run"}},
		{"symlink retargeted", with(func(d dir) { d["l"] = link("a") }), []string{"modified l"}},
		{"deep change", with(func(d dir) { d["a"].(dir)["deep"].(dir)["y"] = file{content: "Y"} }), []string{"modified a/deep/y"}},
		{"file became folder", with(func(d dir) { d["a.txt"] = dir{"in": file{content: "i"}} }), []string{"type a.txt", "added a.txt/in"}},
		{"folder became symlink", with(func(d dir) { d["a"] = link("keep") }), []string{
			"type a", "removed a/deep", "removed a/deep/y", "removed a/x"}},
		{"folder removed whole", with(func(d dir) { delete(d, "a") }), []string{
			"removed a", "removed a/deep", "removed a/deep/y", "removed a/x"}},
		{"empty folder added", with(func(d dir) { d["empty"] = dir{} }), []string{"added empty"}},
		{"folder mode", with(func(d dir) { d["keep"] = modeD{0o700, dir{"k": file{content: "k"}}} }), []string{"mode keep"}},
		{"sorted by path", with(func(d dir) {
			d["a"].(dir)["x"] = file{content: "X"}
			d["a.txt"] = file{content: "A"}
			d["0"] = file{content: "0"}
		}), []string{"added 0", "modified a.txt", "modified a/x"}},
	}
	s := openStore(t)
	root := putTree(t, s, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, err := s.Diff(Capsule{Root: root}, Capsule{Root: putTree(t, s, tt.b)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range changes {
				got = append(got, string(c.Kind)+" "+c.Path)
				if (c.Kind == Added) != (c.Old == nil) || (c.Kind == Removed) != (c.New == nil) {
					t.Errorf("%s %s: old %v new %v", c.Kind, c.Path, c.Old, c.New)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Diff reads only the subtrees whose hashes differ: with the unchanged folder's tree
// deleted from the store, the diff still works.
func TestDiffSkipsEqualSubtrees(t *testing.T) {
	s := openStore(t)
	shared := dir{"big": dir{"f": file{content: "same"}}}
	a := putTree(t, s, dir{"shared": shared, "x": file{content: "1"}})
	b := putTree(t, s, dir{"shared": shared, "x": file{content: "2"}})
	sharedHash := putTree(t, s, shared)
	if err := os.Remove(s.treePath(sharedHash)); err != nil {
		t.Fatal(err)
	}
	changes, err := s.Diff(Capsule{Root: a}, Capsule{Root: b})
	if err != nil {
		t.Fatalf("Diff read an unchanged subtree: %v", err)
	}
	if len(changes) != 1 || changes[0].Path != "x" || changes[0].Kind != Modified {
		t.Fatalf("changes %+v", changes)
	}
}
