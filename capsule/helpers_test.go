package capsule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain lets the tests run `tare snap` as a real process: the test binary re-executed
// with TARE_TEST_SNAPMAIN=1 is SnapMain.
func TestMain(m *testing.M) {
	if os.Getenv("TARE_TEST_SNAPMAIN") == "1" {
		os.Exit(SnapMain(os.Args[1:]))
	}
	if os.Getenv("TARE_TEST_IDLE") == "1" {
		// A process of many threads that does nothing: TestHookRefusesAThread's target.
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// node is what a test sees at one path, read with os (not with the package's walker).
type node struct {
	Kind   Kind
	Mode   fs.FileMode
	Hash   string // content hash of a file
	Target string // symlink target
}

// scan describes every path below root.
func scan(t testing.TB, root string) map[string]node {
	t.Helper()
	out := map[string]node{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n := node{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
		switch {
		case fi.Mode().IsRegular():
			n.Kind = KindFile
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			n.Hash = hex.EncodeToString(sum[:])
		case fi.IsDir():
			n.Kind = KindDir
		case fi.Mode()&fs.ModeSymlink != 0:
			n.Kind = KindSymlink
			n.Mode = 0o777
			if n.Target, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			n.Kind = "other"
		}
		out[rel] = n
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
	return out
}

// sameTree fails the test with every difference between two scans.
func sameTree(t testing.TB, want, got map[string]node) {
	t.Helper()
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			t.Errorf("%q missing after restore (want %+v)", p, w)
			continue
		}
		if g != w {
			t.Errorf("%q: got %+v, want %+v", p, g, w)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%q restored but not in the workspace (%+v)", p, g)
		}
	}
}

// write creates a file (and its folders) with content and mode.
func write(t testing.TB, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// storeObjects lists the object files of a store: relative path -> size.
func storeObjects(t testing.TB, s *Store, kind string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	root := filepath.Join(s.dir, kind)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(s.dir, p)
			out[rel] = fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newObjects(before, after map[string]int64) []string {
	var out []string
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// waitTick returns once the kernel's coarse clock (which stamps file times) has passed the
// present, so files written before the call are not "racy" for the next snapshot. It waits
// for that condition, a few milliseconds, not for a guessed duration.
func waitTick(t testing.TB) {
	t.Helper()
	target := time.Now().UnixNano()
	deadline := time.Now().Add(5 * time.Second)
	for coarseNow() <= target {
		if time.Now().After(deadline) {
			t.Fatal("the coarse clock did not advance in 5 s")
		}
		runtime.Gosched()
	}
}

func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func snap(t testing.TB, s *Store, ws, id string) Capsule {
	t.Helper()
	c, err := s.Snap(context.Background(), ws, id)
	if err != nil {
		t.Fatalf("Snap %s: %v", id, err)
	}
	return c
}

// cachePath, blobPath, treePath and recordPath are where the store keeps a folder's stat
// cache, an object and a capsule's record, for tests that read or spoil them.
func (s *Store) cachePath(rel string) string {
	return filepath.Join(s.dir, s.cacheRel(rel))
}

func (s *Store) blobPath(hash string) string {
	return filepath.Join(s.dir, "blobs", hash[:2], hash[2:])
}

func (s *Store) treePath(hash string) string {
	return filepath.Join(s.dir, "trees", hash[:2], hash[2:])
}

func (s *Store) recordPath(c Capsule) string {
	return filepath.Join(s.dir, "capsules", c.Name()+".json")
}
