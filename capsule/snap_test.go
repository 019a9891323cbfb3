package capsule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// richWorkspace makes a workspace with every kind of thing a capsule keeps.
func richWorkspace(t testing.TB) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	write(t, filepath.Join(ws, "README.md"), "# hello\n", 0o644)
	write(t, filepath.Join(ws, "empty.txt"), "", 0o644)
	write(t, filepath.Join(ws, "bin/run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	write(t, filepath.Join(ws, "bin/private"), "secret", 0o600)
	write(t, filepath.Join(ws, "bin/setuid"), "s", 0o4755)
	write(t, filepath.Join(ws, "src/a/b/c/deep.go"), "package c\n", 0o644)
	write(t, filepath.Join(ws, "src/a/b/c/same.go"), "package c\n", 0o644) // same blob twice
	write(t, filepath.Join(ws, "names/with space"), "1", 0o644)
	write(t, filepath.Join(ws, "names/line\nbreak"), "2", 0o644)
	write(t, filepath.Join(ws, "names/ünïcödé"), "3", 0o644)
	write(t, filepath.Join(ws, "names/\xff\xfe raw bytes"), "4", 0o644)
	large := bytes.Repeat([]byte("0123456789abcdef"), (smallFile+12345)/16) // streamed, not read whole
	write(t, filepath.Join(ws, "large.bin"), string(large), 0o644)
	write(t, filepath.Join(ws, "medium.bin"), strings.Repeat("m", 300<<10), 0o644)
	for _, d := range []string{"empty-dir", "nested-empty/inner/innermost"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(ws, "readonly/file"), "ro", 0o444)
	if err := os.Chmod(filepath.Join(ws, "readonly"), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "sticky"), 0o1777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "sticky"), 0o1777)
	outside := filepath.Join(t.TempDir(), "outside")
	write(t, filepath.Join(outside, "not-in-capsule.txt"), "outside", 0o644)
	for name, target := range map[string]string{
		"link-relative":     "README.md",
		"bin/link-up":       "../src/a/b/c/deep.go",
		"link-absolute":     "/etc/hostname",
		"link-dangling":     "does/not/exist",
		"link-to-dir":       "src/a",
		"link-outside":      outside, // a folder outside: never followed
		"link-self":         "link-self",
		"names/link spaces": "with space",
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(ws, "README.md"), filepath.Join(ws, "hardlink.md")); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestSnapRestoreRoundTrip(t *testing.T) {
	ws := richWorkspace(t)
	s := openStore(t)
	c := snap(t, s, ws, "toolu_01")
	if len(c.Unreadable) != 0 {
		t.Fatalf("unreadable: %+v", c.Unreadable)
	}
	if c.Step != 0 || c.Walk != "full" || c.ID != "toolu_01" {
		t.Fatalf("capsule %+v", c)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	if err := s.Restore(context.Background(), c, dest); err != nil {
		t.Fatal(err)
	}
	want := scan(t, ws)
	sameTree(t, want, scan(t, dest))
	if _, ok := want["link-outside/not-in-capsule.txt"]; ok {
		t.Fatal("scan followed a symlink")
	}
	// Restoring into an existing empty folder works too; into a non-empty one it refuses.
	empty := t.TempDir()
	if err := s.Restore(context.Background(), c, empty); err != nil {
		t.Fatal(err)
	}
	sameTree(t, want, scan(t, empty))
	err := s.Restore(context.Background(), c, empty)
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into a non-empty folder: %v", err)
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The record on disk is what List returns.
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Root != c.Root || list[0].Bytes != c.Bytes || !list[0].Time.Equal(c.Time) {
		t.Fatalf("List = %+v, %v; want [%+v]", list, err, c)
	}
}

func TestSnapEmptyWorkspace(t *testing.T) {
	s := openStore(t)
	c := snap(t, s, t.TempDir(), "start")
	if c.Root != hashBytes([]byte(treeHeader)) || c.Bytes != 0 {
		t.Fatalf("capsule %+v", c)
	}
	dest := filepath.Join(t.TempDir(), "r")
	if err := s.Restore(context.Background(), c, dest); err != nil {
		t.Fatal(err)
	}
	if names, _ := readNames(dest); len(names) != 0 {
		t.Fatalf("restored %v", names)
	}
}

func TestUnchangedWorkspaceSharesRoot(t *testing.T) {
	ws := richWorkspace(t)
	s := openStore(t)
	first := snap(t, s, ws, "toolu_1")
	blobs, trees := storeObjects(t, s, "blobs"), storeObjects(t, s, "trees")
	waitTick(t)
	second := snap(t, s, ws, "toolu_2")
	if second.Root != first.Root || second.Step != 1 {
		t.Fatalf("second %+v, first %+v", second, first)
	}
	if n := newObjects(blobs, storeObjects(t, s, "blobs")); len(n) != 0 {
		t.Fatalf("new blobs for an unchanged workspace: %v", n)
	}
	if n := newObjects(trees, storeObjects(t, s, "trees")); len(n) != 0 {
		t.Fatalf("new trees for an unchanged workspace: %v", n)
	}
	// A copy of the workspace elsewhere (other inodes, other times) has the same root.
	other := snap(t, s, copyTree(t, ws), "toolu_3")
	if other.Root != first.Root {
		t.Fatalf("copy of the workspace: root %s, want %s", other.Root, first.Root)
	}
	recs, _ := readNames(filepath.Join(s.dir, "capsules"))
	slices.Sort(recs)
	if strings.Join(recs, " ") != "0000-toolu_1.json 0001-toolu_2.json 0002-toolu_3.json" {
		t.Fatalf("records %v", recs)
	}
}

// copyTree copies a workspace with cp -a (a tool outside this package).
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd("cp", "-a", src+"/.", dst)
	if err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	return dst
}

func TestOneChangedFile(t *testing.T) {
	ws := richWorkspace(t)
	s := openStore(t)
	waitTick(t) // else files written in the snapshot's clock tick are hashed again next time
	first := snap(t, s, ws, "toolu_1")
	blobs, trees := storeObjects(t, s, "blobs"), storeObjects(t, s, "trees")
	waitTick(t)
	write(t, filepath.Join(ws, "src/a/b/c/deep.go"), "package c // changed\n", 0o644)
	s.hashed.Store(0)
	second := snap(t, s, ws, "toolu_2")
	if second.Root == first.Root {
		t.Fatal("root unchanged")
	}
	if got := s.hashed.Load(); got != int64(len("package c // changed\n")) {
		t.Fatalf("hashed %d bytes, want only the changed file's", got)
	}
	newBlobs := newObjects(blobs, storeObjects(t, s, "blobs"))
	if len(newBlobs) != 1 || !strings.HasSuffix(strings.ReplaceAll(newBlobs[0], "/", ""), hashBytes([]byte("package c // changed\n"))[2:]) {
		t.Fatalf("new blobs %v, want the changed content only", newBlobs)
	}
	// src/a/b/c, src/a/b, src/a, src and the root: five folders on the path.
	if n := newObjects(trees, storeObjects(t, s, "trees")); len(n) != 5 {
		t.Fatalf("new trees %v, want the 5 on the changed file's path", n)
	}
	changes, err := s.Diff(first, second)
	if err != nil || len(changes) != 1 || changes[0].Path != "src/a/b/c/deep.go" || changes[0].Kind != Modified {
		t.Fatalf("diff %+v %v", changes, err)
	}
}

func TestStatCacheAvoidsHashing(t *testing.T) {
	ws := richWorkspace(t)
	s := openStore(t)
	snap(t, s, ws, "toolu_1")
	total := s.hashed.Load()
	if total == 0 {
		t.Fatal("first snapshot hashed nothing")
	}
	waitTick(t)
	// Files written just before the first snapshot may have been racy (same clock tick):
	// they are hashed once more, then the cache holds them.
	snap(t, s, ws, "toolu_2")
	s.hashed.Store(0)
	snap(t, s, ws, "toolu_3")
	if got := s.hashed.Load(); got != 0 {
		t.Fatalf("unchanged workspace: hashed %d bytes, want 0", got)
	}

	t.Run("same size, mtime set back", func(t *testing.T) {
		p := filepath.Join(ws, "README.md")
		fi, _ := os.Stat(p)
		write(t, p, "# HELLO\n", 0o644) // same length
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
		s.hashed.Store(0)
		c := snap(t, s, ws, "toolu_4")
		// 16: README.md and its hard link hardlink.md, one inode, both re-hashed.
		if got := s.hashed.Load(); got != 16 {
			t.Fatalf("hashed %d bytes, want 16 (ctime changed)", got)
		}
		assertContent(t, s, c, "README.md", "# HELLO\n")
	})
	t.Run("chmod only", func(t *testing.T) {
		waitTick(t)
		snap(t, s, ws, "toolu_5")
		os.Chmod(filepath.Join(ws, "bin/run.sh"), 0o700)
		s.hashed.Store(0)
		c := snap(t, s, ws, "toolu_6")
		if got := s.hashed.Load(); got != int64(len("#!/bin/sh\necho hi\n")) {
			t.Fatalf("hashed %d bytes", got)
		}
		prev, _ := s.List()
		changes, _ := s.Diff(prev[len(prev)-2], c)
		if len(changes) != 1 || changes[0].Kind != ModeChanged || changes[0].New.Mode != 0o700 {
			t.Fatalf("changes %+v", changes)
		}
	})
	t.Run("cache file damaged", func(t *testing.T) {
		waitTick(t)
		snap(t, s, ws, "toolu_7")
		p := s.cachePath("src/a/b/c")
		data, _ := os.ReadFile(p)
		os.WriteFile(p, data[:len(data)/2], 0o644)
		s.hashed.Store(0)
		snap(t, s, ws, "toolu_8")
		if got := s.hashed.Load(); got != 2*int64(len("package c\n")) {
			t.Fatalf("hashed %d bytes, want the 2 files of the folder whose cache was torn", got)
		}
	})
}

// A file changed after the snapshot started (same clock tick as the next write could be)
// is not trusted from the cache: the next snapshot hashes it again.
func TestRacyFileIsHashedAgain(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "aaaa", 0o644)
	write(t, filepath.Join(ws, "b.txt"), "bbbb", 0o644)
	s := openStore(t)
	snap(t, s, ws, "toolu_1")
	waitTick(t)
	snap(t, s, ws, "toolu_2")
	s.beforeRead = func(rel string) {
		if rel == "a.txt" {
			write(t, filepath.Join(ws, "a.txt"), "AAAA", 0o644)
		}
	}
	write(t, filepath.Join(ws, "a.txt"), "aaab", 0o644) // a cache miss, so it is read
	c := snap(t, s, ws, "toolu_3")
	s.beforeRead = nil
	assertContent(t, s, c, "a.txt", "AAAA")
	s.hashed.Store(0)
	snap(t, s, ws, "toolu_4")
	if got := s.hashed.Load(); got != 4 {
		t.Fatalf("hashed %d bytes, want 4 (a.txt again, it was racy)", got)
	}
}

func assertContent(t testing.TB, s *Store, c Capsule, rel, want string) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "r")
	if err := s.Restore(context.Background(), c, dest); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dest, rel))
	if err != nil || string(got) != want {
		t.Fatalf("%s in capsule %s: %q, %v; want %q", rel, c.Name(), got, err, want)
	}
}

func TestUnreadableAreRecorded(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "ok.txt"), "ok", 0o644)
	write(t, filepath.Join(ws, "sub/vanishing.txt"), "soon gone", 0o644)
	if err := unix.Mkfifo(filepath.Join(ws, "sub/pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := map[string]string{
		"sock":              "skipped: not a regular file (socket)",
		"sub/pipe":          "skipped: not a regular file (named pipe)",
		"sub/vanishing.txt": "vanished before it was read (no such file or directory)",
	}
	if os.Geteuid() == 0 { // mknod needs root; the tests run as root here
		if err := unix.Mknod(filepath.Join(ws, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		want["null"] = "skipped: not a regular file (character device)"
	} else {
		write(t, filepath.Join(ws, "locked"), "no", 0o000)
		want["locked"] = "permission denied (open)"
	}
	s := openStore(t)
	s.beforeRead = func(rel string) {
		if rel == "sub/vanishing.txt" {
			os.Remove(filepath.Join(ws, rel))
		}
	}
	c := snap(t, s, ws, "toolu_x")
	got := map[string]string{}
	for _, u := range c.Unreadable {
		got[u.Path] = u.Error
	}
	if len(got) != len(want) {
		t.Fatalf("unreadable %+v, want %v", c.Unreadable, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
	// In the record on disk too.
	data, err := os.ReadFile(s.recordPath(c))
	if err != nil || !bytes.Contains(data, []byte(`"skipped: not a regular file (named pipe)"`)) {
		t.Fatalf("record: %s %v", data, err)
	}
	dest := filepath.Join(t.TempDir(), "r")
	if err := s.Restore(context.Background(), c, dest); err != nil {
		t.Fatal(err)
	}
	restored := scan(t, dest)
	if len(restored) != 2 || restored["ok.txt"].Kind != KindFile || restored["sub"].Kind != KindDir {
		t.Fatalf("restored %v", restored)
	}
}

func TestStoreInsideWorkspaceIsSkipped(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a"), "a", 0o644)
	s, err := Open(filepath.Join(ws, ".tare"))
	if err != nil {
		t.Fatal(err)
	}
	c := snap(t, s, ws, "t1")
	if len(c.Unreadable) != 1 || c.Unreadable[0].Path != ".tare" {
		t.Fatalf("unreadable %+v", c.Unreadable)
	}
}

func TestSnapRejectsBadIDs(t *testing.T) {
	s := openStore(t)
	for _, id := range []string{"", "../x", "a/b", "a b", strings.Repeat("x", 201)} {
		if _, err := s.Snap(context.Background(), t.TempDir(), id); err == nil {
			t.Errorf("id %q accepted", id)
		}
	}
}

func TestOpenRefusesAForeignFolder(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "notes.txt"), "mine", 0o644)
	if _, err := Open(d); err == nil || !strings.Contains(err.Error(), "not a tare store") {
		t.Fatalf("Open of a foreign folder: %v", err)
	}
	write(t, filepath.Join(d, "x", markerName), "tare capsule store 9\n", 0o644)
	if _, err := Open(filepath.Join(d, "x")); err == nil || !strings.Contains(err.Error(), "store 9") {
		t.Fatalf("Open of a newer store: %v", err)
	}
}

// Snapshots into one store at once, from goroutines and from processes, take turns: every
// one gets its own step and the store verifies.
func TestConcurrentSnapshots(t *testing.T) {
	ws := richWorkspace(t)
	storeDir := filepath.Join(t.TempDir(), "store")
	s, err := Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			// A separate Store value, as another process would have.
			other, err := Open(storeDir)
			if err == nil {
				_, err = other.Snap(context.Background(), ws, "goroutine"+string(rune('a'+i)))
			}
			errs <- err
		}()
		go func() {
			defer wg.Done()
			out, err := runSnapMain(t, nil, "--store", storeDir, "--work", ws, "--id", "process"+string(rune('a'+i)))
			if err != nil {
				err = &cmdError{err, out}
			}
			errs <- err
		}()
	}
	// Meanwhile the workspace changes.
	for i := range 20 {
		write(t, filepath.Join(ws, "churn", string(rune('a'+i))), strings.Repeat("c", i), 0o644)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 8 {
		t.Fatalf("%d capsules, want 8", len(list))
	}
	for i, c := range list {
		if c.Step != i {
			t.Fatalf("capsule %d has step %d", i, c.Step)
		}
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// SnapDirty with the right dirty paths gives the same root as a full walk, over random
// edits of every kind; the full walk is the verifier.
func TestSnapDirtyMatchesFullWalk(t *testing.T) {
	ws := richWorkspace(t)
	s := openStore(t)
	verifier := openStore(t)
	snap(t, s, ws, "start")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 60 {
		dirty := mutate(t, rng, ws)
		c, err := s.SnapDirty(context.Background(), ws, "round", dirty)
		if err != nil {
			t.Fatal(err)
		}
		full := snap(t, verifier, ws, "full")
		if c.Root != full.Root || c.Bytes != full.Bytes {
			t.Fatalf("round %d, dirty %q: dirty root %s (%d bytes), full walk %s (%d bytes)", round, dirty, c.Root, c.Bytes, full.Root, full.Bytes)
		}
		if c.Walk != "dirty" {
			t.Fatalf("round %d: walk %s", round, c.Walk)
		}
	}
	if err := s.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// mutate makes one random edit and returns the paths it touched (as a watcher would).
func mutate(t testing.TB, rng *rand.Rand, ws string) []string {
	t.Helper()
	var files, dirs []string
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(ws, p)
		if err != nil || rel == "." {
			return nil
		}
		if d.IsDir() {
			if fi, _ := d.Info(); fi.Mode().Perm()&0o200 != 0 {
				dirs = append(dirs, rel)
			}
		} else if d.Type().IsRegular() {
			if filepath.Base(filepath.Dir(p)) != "readonly" {
				files = append(files, rel)
			}
		}
		return nil
	})
	if len(files) == 0 || len(dirs) == 0 {
		f := fmt.Sprintf("seed%d", rng.IntN(1e6))
		os.RemoveAll(filepath.Join(ws, f))
		write(t, filepath.Join(ws, f, "file"), "seed", 0o644)
		return []string{f}
	}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	name := func() string { return []string{"n1", "n2", "sub/n3", "sub/deeper/n4"}[rng.IntN(4)] }
	switch rng.IntN(8) {
	case 0: // modify a file
		f := pick(files)
		write(t, filepath.Join(ws, f), strings.Repeat("x", rng.IntN(100)), 0o644)
		return []string{f}
	case 1: // create a file, maybe in new folders
		f := filepath.Join(pick(dirs), name())
		write(t, filepath.Join(ws, f), "new", 0o644)
		return []string{f} // its new folders are found on the way
	case 2: // remove a file
		f := pick(files)
		os.Remove(filepath.Join(ws, f))
		return []string{f}
	case 3: // chmod
		f := pick(files)
		os.Chmod(filepath.Join(ws, f), 0o700)
		return []string{f}
	case 4: // remove a folder
		d := pick(dirs)
		os.RemoveAll(filepath.Join(ws, d))
		return []string{d}
	case 5: // a file becomes a symlink
		f := pick(files)
		os.Remove(filepath.Join(ws, f))
		os.Symlink("elsewhere", filepath.Join(ws, f))
		return []string{f}
	case 6: // rename a folder
		d := pick(dirs)
		to := d + "-moved"
		if err := os.Rename(filepath.Join(ws, d), filepath.Join(ws, to)); err != nil {
			return nil
		}
		return []string{d, to}
	default: // an empty folder
		d := filepath.Join(pick(dirs), "emptied")
		os.MkdirAll(filepath.Join(ws, d), 0o755)
		return []string{d}
	}
}

func TestSnapDirtyPaths(t *testing.T) {
	ws := richWorkspace(t)
	s := openStore(t)
	base := snap(t, s, ws, "start")
	ctx := context.Background()

	t.Run("nothing dirty", func(t *testing.T) {
		c, err := s.SnapDirty(ctx, ws, "none", nil)
		if err != nil || c.Root != base.Root || c.Walk != "dirty" {
			t.Fatalf("%+v %v", c, err)
		}
	})
	t.Run("absolute path", func(t *testing.T) {
		write(t, filepath.Join(ws, "src/a/x.go"), "x", 0o644)
		c, err := s.SnapDirty(ctx, ws, "abs", []string{filepath.Join(ws, "src/a/x.go")})
		if err != nil {
			t.Fatal(err)
		}
		assertContent(t, s, c, "src/a/x.go", "x")
	})
	t.Run("outside the workspace", func(t *testing.T) {
		for _, p := range []string{"../x", "/somewhere/else"} {
			if _, err := s.SnapDirty(ctx, ws, "bad", []string{p}); err == nil || !strings.Contains(err.Error(), "outside") {
				t.Fatalf("%s: %v", p, err)
			}
		}
	})
	t.Run("whole workspace", func(t *testing.T) {
		c, err := s.SnapDirty(ctx, ws, "all", []string{"."})
		if err != nil || c.Walk != "full" {
			t.Fatalf("%+v %v", c, err)
		}
	})
	t.Run("unreadable carried forward", func(t *testing.T) {
		unix.Mkfifo(filepath.Join(ws, "fifo"), 0o644)
		c, err := s.SnapDirty(ctx, ws, "fifo", []string{"fifo"})
		if err != nil || len(c.Unreadable) != 1 {
			t.Fatalf("%+v %v", c, err)
		}
		write(t, filepath.Join(ws, "other"), "o", 0o644)
		c, err = s.SnapDirty(ctx, ws, "other", []string{"other"})
		if err != nil || len(c.Unreadable) != 1 || c.Unreadable[0].Path != "fifo" {
			t.Fatalf("%+v %v", c, err)
		}
		os.Remove(filepath.Join(ws, "fifo"))
		c, err = s.SnapDirty(ctx, ws, "gone", []string{"fifo"})
		if err != nil || len(c.Unreadable) != 0 {
			t.Fatalf("%+v %v", c, err)
		}
	})
	t.Run("damaged base falls back to a full walk", func(t *testing.T) {
		list, _ := s.List()
		last := list[len(list)-1]
		os.Chmod(s.treePath(last.Root), 0o644)
		os.WriteFile(s.treePath(last.Root), []byte("garbage"), 0o644)
		c, err := s.SnapDirty(ctx, ws, "after-damage", nil)
		if err != nil || c.Walk != "full" || c.Root != last.Root {
			t.Fatalf("%+v %v", c, err)
		}
	})
}

func TestRecordFormat(t *testing.T) {
	s := openStore(t)
	c := snap(t, s, t.TempDir(), "toolu_abc")
	data, err := os.ReadFile(filepath.Join(s.dir, "capsules", "0000-toolu_abc.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "step", "tool_use_id", "root", "time", "bytes", "walk", "unreadable"} {
		if _, ok := m[k]; !ok {
			t.Errorf("record has no %q: %s", k, data)
		}
	}
	if m["root"] != c.Root || m["format"] != recordFormat {
		t.Fatalf("record %s", data)
	}
}
