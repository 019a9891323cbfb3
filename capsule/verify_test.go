package capsule

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// damaged makes a store with two capsules and returns it with the second one.
func damaged(t *testing.T) (*Store, Capsule, string) {
	t.Helper()
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a/b/victim.txt"), "the victim's content", 0o644)
	write(t, filepath.Join(ws, "ok.txt"), "fine", 0o644)
	s := openStore(t)
	snap(t, s, ws, "toolu_1")
	write(t, filepath.Join(ws, "ok.txt"), "fine too", 0o644)
	c := snap(t, s, ws, "toolu_2")
	if err := s.Verify(context.Background()); err != nil {
		t.Fatalf("intact store: %v", err)
	}
	return s, c, ws
}

// overwrite replaces an object's content (objects are read-only on disk).
func overwrite(t *testing.T, path string, data []byte) {
	t.Helper()
	os.Chmod(path, 0o644)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptBlob(t *testing.T) {
	s, c, _ := damaged(t)
	victim := hashBytes([]byte("the victim's content"))
	overwrite(t, s.blobPath(victim), []byte("the victim's CONTENT"))

	dest := filepath.Join(t.TempDir(), "r")
	err := s.Restore(context.Background(), c, dest)
	if err == nil {
		t.Fatal("Restore succeeded from a corrupt blob")
	}
	for _, want := range []string{victim, "0001-toolu_2", "corrupt", "victim.txt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Restore error %q does not name %q", err, want)
		}
	}
	if names, _ := readNames(dest); len(names) != 0 {
		t.Errorf("a refused restore left %v in the destination", names)
	}
	err = s.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "blob "+victim+" is corrupt") || !strings.Contains(err.Error(), "capsule 0000-toolu_1: blob "+victim+" (for a/b/victim.txt) is corrupt") {
		t.Fatalf("Verify: %v", err)
	}
}

func TestMissingBlob(t *testing.T) {
	s, c, _ := damaged(t)
	victim := hashBytes([]byte("the victim's content"))
	os.Remove(s.blobPath(victim))
	err := s.Restore(context.Background(), c, filepath.Join(t.TempDir(), "r"))
	if err == nil || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Restore: %v", err)
	}
	err = s.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "blob "+victim+" (for a/b/victim.txt) is missing") {
		t.Fatalf("Verify: %v", err)
	}
}

func TestCorruptTree(t *testing.T) {
	s, c, _ := damaged(t)
	// The tree of folder a/b: find it through the root.
	root, _ := s.readTree(c.Root)
	var a Entry
	for _, e := range root {
		if e.Name == "a" {
			a = e
		}
	}
	aEntries, _ := s.readTree(a.Hash)
	b := aEntries[0].Hash
	data, _ := os.ReadFile(s.treePath(b))
	overwrite(t, s.treePath(b), []byte(strings.Replace(string(data), "0644", "0755", 1)))

	err := s.Restore(context.Background(), c, filepath.Join(t.TempDir(), "r"))
	if err == nil || !strings.Contains(err.Error(), "tree "+b+" is corrupt") || !strings.Contains(err.Error(), "0001-toolu_2") {
		t.Fatalf("Restore: %v", err)
	}
	err = s.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "tree "+b+" is corrupt") || !strings.Contains(err.Error(), "capsule 0000-toolu_1: tree "+b+" (a/b) is damaged") {
		t.Fatalf("Verify: %v", err)
	}
	// A tree whose content hashes right but is not a tree at all.
	junk := []byte("not a tree\n")
	overwrite(t, s.treePath(hashBytes(junk)), junk)
	err = s.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "tree "+hashBytes(junk)+" is malformed") {
		t.Fatalf("Verify: %v", err)
	}
}

func TestTruncatedRecord(t *testing.T) {
	s, c, _ := damaged(t)
	p := s.recordPath(c)
	data, _ := os.ReadFile(p)
	os.WriteFile(p, data[:len(data)/2], 0o644)
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "0001-toolu_2.json is damaged") {
		t.Fatalf("List: %v", err)
	}
	err := s.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "0001-toolu_2.json is damaged") {
		t.Fatalf("Verify: %v", err)
	}
	// A record that parses but names a root that is not there.
	os.WriteFile(p, []byte(strings.Replace(string(data), c.Root, strings.Repeat("0", 64), 1)), 0o644)
	err = s.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "capsule 0001-toolu_2: tree "+strings.Repeat("0", 64)+" (its root) is missing") {
		t.Fatalf("Verify: %v", err)
	}
	// A record renamed to another step.
	os.WriteFile(p, data, 0o644)
	os.Rename(p, filepath.Join(s.dir, "capsules", "0007-toolu_2.json"))
	err = s.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), "says step 1") {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerifyIgnoresTemporaryFiles(t *testing.T) {
	s, _, _ := damaged(t)
	os.MkdirAll(filepath.Join(s.dir, "blobs", "ab"), 0o755)
	if err := os.WriteFile(filepath.Join(s.dir, "blobs", "ab", ".cdef.tmp-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}
