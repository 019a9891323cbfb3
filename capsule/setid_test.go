package capsule

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// setIDWorkspace makes a workspace holding a set-uid file, a set-gid file and a set-gid
// folder, as a room without the seccomp rules would have left it.
func setIDWorkspace(t testing.TB) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	write(t, filepath.Join(ws, "rootsh"), "#!/bin/sh\nid\n", 0o755)
	write(t, filepath.Join(ws, "shared/groupsh"), "#!/bin/sh\nid\n", 0o755)
	for p, mode := range map[string]uint32{"rootsh": 0o4755, "shared/groupsh": 0o2755, "shared": 0o2755} {
		if err := unix.Chmod(filepath.Join(ws, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// setIDFiles lists what below root has set-uid or set-gid, walked without following links.
func setIDFiles(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	for p, n := range scan(t, root) {
		if n.Mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			out = append(out, fmt.Sprintf("%s %v", p, n.Mode))
		}
	}
	return out
}

// restoreSetID snapshots a workspace with set-uid and set-gid modes and restores it: ""
// when the restore holds none of them and the tree claims none.
func restoreSetID(t *testing.T) string {
	ws := setIDWorkspace(t)
	if got := setIDFiles(t, ws); len(got) != 3 {
		return fmt.Sprintf("the workspace was not staged: %v", got)
	}
	s := openStore(t)
	c := snap(t, s, ws, "toolu_1")
	dest := filepath.Join(t.TempDir(), "restored")
	if err := s.Restore(context.Background(), c, dest); err != nil {
		return "restore failed: " + err.Error()
	}
	if got := setIDFiles(t, dest); len(got) > 0 {
		return fmt.Sprintf("restored with set-uid/set-gid: %v", got)
	}
	fi, err := os.Stat(filepath.Join(dest, "rootsh"))
	if err != nil || fi.Mode() != 0o755 {
		return fmt.Sprintf("rootsh restored as %v (%v), want -rwxr-xr-x", fi.Mode(), err)
	}
	return ""
}

// restoreForgedSetID restores a capsule whose tree claims mode 4755 for a file: "" when
// the restore is refused with an error naming set-uid and leaves nothing.
func restoreForgedSetID(t *testing.T) string {
	s := openStore(t)
	content := "#!/bin/sh\nid\n"
	blob := hashBytes([]byte(content))
	os.MkdirAll(filepath.Dir(s.blobPath(blob)), 0o755)
	if err := WriteFileAtomic(s.blobPath(blob), []byte(content), 0o444); err != nil {
		t.Fatal(err)
	}
	tree := fmt.Sprintf("%sfile 4755 %d %s \"rootsh\"\n", treeHeader, len(content), blob)
	root := hashBytes([]byte(tree))
	os.MkdirAll(filepath.Dir(s.treePath(root)), 0o755)
	if err := WriteFileAtomic(s.treePath(root), []byte(tree), 0o444); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	err := s.Restore(context.Background(), Capsule{ID: "toolu_1", Root: root}, dest)
	if err == nil || !strings.Contains(err.Error(), "set-uid") {
		return fmt.Sprintf("restore of a tree claiming 4755: %v, want a refusal naming set-uid (restored: %v)", err, setIDFiles(t, dest))
	}
	if names, _ := readNames(dest); len(names) > 0 {
		return fmt.Sprintf("the refused restore left %v", names)
	}
	return ""
}

// TestCapsuleNeverRestoresSetID: a snapshot of a workspace with set-uid and set-gid modes
// restores without them.
func TestCapsuleNeverRestoresSetID(t *testing.T) {
	if problem := restoreSetID(t); problem != "" {
		t.Fatal(problem)
	}
}

// TestCapsuleRefusesSetIDTree: a tree (forged, or from an older store) that claims
// set-uid is refused on read, with an error that names it.
func TestCapsuleRefusesSetIDTree(t *testing.T) {
	if problem := restoreForgedSetID(t); problem != "" {
		t.Fatal(problem)
	}
	for _, mode := range []string{"4755", "2755", "6755", "7777"} {
		for _, kind := range []string{"file", "dir"} {
			tree := fmt.Sprintf("%s%s %s 0 %s \"x\"\n", treeHeader, kind, mode, h1)
			_, err := decodeTree([]byte(tree))
			if err == nil || !strings.Contains(err.Error(), "set-uid or set-gid") || !strings.Contains(err.Error(), `"x"`) {
				t.Errorf("%s %s: %v, want a refusal naming the entry and set-uid", kind, mode, err)
			}
		}
	}
	// Encoding drops the bits: no tree tare writes claims them.
	got := string(encodeTree([]Entry{{Name: "x", Kind: KindFile, Mode: 0o755 | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky, Hash: h1}}))
	if want := treeHeader + "file 1755 0 " + h1 + " \"x\"\n"; got != want {
		t.Errorf("encoded %q, want %q", got, want)
	}
}
