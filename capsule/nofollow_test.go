package capsule

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStoreFolderSymlinkIsNeverFollowed: a store whose own folder (an object fan-out, the
// capsules, the cache) or lock file a room once replaced with a symlink to a host folder
// makes the host's snapshot fail naming it, and nothing is written where the link points.
// This is the red team's F2: the host's end-of-tail snapshot wrote an agent-chosen file
// into /etc/cron.d through `blobs/5b -> /etc/cron.d`.
func TestStoreFolderSymlinkIsNeverFollowed(t *testing.T) {
	for _, planted := range storeSymlinks(t) {
		t.Run(strings.ReplaceAll(planted, "/", "_"), func(t *testing.T) {
			if problem := snapThroughStoreSymlink(t, planted); problem != "" {
				t.Fatal(problem)
			}
		})
	}
}

// storeSymlinks are the store paths TestStoreFolderSymlinkIsNeverFollowed plants: the
// fan-out folders the snapshot of storeSymlinkWorkspace writes to, and the rest.
func storeSymlinks(t *testing.T) []string {
	root := snap(t, openStore(t), storeSymlinkWorkspace(t), "probe").Root
	return []string{"blobs/" + hashBytes([]byte(cronPayload))[:2], "trees/" + root[:2], "capsules", "cache", "lock"}
}

const cronPayload = "* * * * * root touch /tmp/PWNED\n"

func storeSymlinkWorkspace(t *testing.T) string {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "cronjob"), cronPayload, 0o644)
	return ws
}

// snapThroughStoreSymlink plants a symlink to a host folder at the store path planted and
// snapshots: it says what went wrong, or "".
func snapThroughStoreSymlink(t *testing.T, planted string) string {
	ws := storeSymlinkWorkspace(t)
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "cron.d")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := target
	if planted == "lock" {
		link = filepath.Join(target, "created-through-the-lock")
	}
	os.RemoveAll(filepath.Join(dir, planted))
	if err := os.Symlink(link, filepath.Join(dir, planted)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Snap(context.Background(), ws, "toolu_end")
	if err == nil {
		// A fresh Open must refuse it, if the snapshot did not.
		_, err = Open(dir)
	}
	if names, _ := readNames(target); len(names) > 0 {
		return fmt.Sprintf("%s was written through the symlink %s: it holds %v", target, planted, names)
	}
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		return fmt.Sprintf("snapshot into a store with %s a symlink: %v, want a refusal naming the symlink", planted, err)
	}
	return ""
}

// TestSnapStoresAWorkspaceSymlinkWithoutReadingItsTarget: the host's snapshot of a
// workspace a room wrote keeps a symlink (to a host file, to a fifo) as a symlink, and
// opens nothing through it.
func TestSnapStoresAWorkspaceSymlinkWithoutReadingItsTarget(t *testing.T) {
	ws := t.TempDir()
	secret := filepath.Join(t.TempDir(), "host-secret")
	write(t, secret, "the operator's secret\n", 0o600)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"secret": secret, "fifo": fifo, "dir/up": filepath.Dir(secret)} {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755)
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	s := openStore(t)
	var read []string
	s.beforeRead = func(rel string) { read = append(read, rel) }
	c := snap(t, s, ws, "toolu_end")
	if len(read) != 0 || len(c.Unreadable) != 0 {
		t.Fatalf("the snapshot opened %v (unreadable %v): it followed a symlink", read, c.Unreadable)
	}
	entries, err := s.readTree(c.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == "secret" && (e.Kind != KindSymlink || e.Target != secret) {
			t.Fatalf("secret stored as %+v, want the symlink", e)
		}
	}
	if got := storeObjects(t, s, "blobs"); len(got) != 0 {
		t.Fatalf("blobs %v stored: a target's content was read", got)
	}
}

// TestManyNewObjectsHoldFewDescriptors: a snapshot that stores thousands of new files (the
// first capsule of an npm install) holds a folder descriptor per fan-out folder, not one
// per object, so it stays within a low descriptor limit.
func TestManyNewObjectsHoldFewDescriptors(t *testing.T) {
	ws := t.TempDir()
	for i := range 1500 {
		write(t, filepath.Join(ws, fmt.Sprintf("d%02d/f%04d", i%50, i)), fmt.Sprintf("file %d\n", i), 0o644)
	}
	s := openStore(t)
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// 1500 objects, 256 fan-out folders per kind at most (here ~230 used): 600 must do.
	low := old
	low.Cur = 600
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	_, err := s.Snap(context.Background(), ws, "toolu_install")
	unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	if err != nil {
		t.Fatalf("snapshot of 1500 new files under a limit of %d descriptors: %v", low.Cur, err)
	}
}
