package capsule

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// stageOver makes a staging store over base (as a room's `tare snap --base` does) and
// stages one capsule of ws in it.
func stageOver(t *testing.T, base *Store, ws, id string) (string, *Store, Capsule) {
	t.Helper()
	stage := filepath.Join(t.TempDir(), "stage")
	st, err := OpenStage(stage, base.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return stage, st, snap(t, st, ws, id)
}

// TestImportTakesStagedCapsules: a room's capsules, staged over the run's store, come into
// the store with Import, numbered after its own, restorable to the same tree; objects the
// store already held were neither staged nor copied again, and a dirty snapshot in the
// stage builds on the store's latest capsule.
func TestImportTakesStagedCapsules(t *testing.T) {
	ctx := context.Background()
	ws := richWorkspace(t)
	base := openStore(t)
	start := snap(t, base, ws, "start")
	write(t, filepath.Join(ws, "new.txt"), "added in the room\n", 0o644)
	stage := filepath.Join(t.TempDir(), "stage")
	st, err := OpenStage(stage, base.Dir())
	if err != nil {
		t.Fatal(err)
	}
	c1, err := st.SnapDirty(ctx, ws, "toolu_1", []string{"new.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if c1.Walk != "dirty" || c1.Step != 1 {
		t.Fatalf("staged capsule %+v: want a dirty walk built on the store's step 0", c1)
	}
	if got := storeObjects(t, st, "blobs"); len(got) != 1 {
		t.Fatalf("the stage holds blobs %v: want only the new file's (the store has the rest)", got)
	}
	write(t, filepath.Join(ws, "second.txt"), "second\n", 0o644)
	c2 := snap(t, st, ws, "toolu_2")
	blobsBefore := storeObjects(t, base, "blobs")

	got, err := base.Import(ctx, stage)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "toolu_1" || got[0].Step != 1 || got[1].ID != "toolu_2" || got[1].Step != 2 {
		t.Fatalf("imported %+v", got)
	}
	list, err := base.List()
	if err != nil || len(list) != 3 || list[0].Root != start.Root || list[2].Root != c2.Root {
		t.Fatalf("store lists %+v (%v)", list, err)
	}
	if after := storeObjects(t, base, "blobs"); len(after) != len(blobsBefore)+2 {
		t.Fatalf("%d blobs after the import, want %d + 2", len(after), len(blobsBefore))
	}
	dest := filepath.Join(t.TempDir(), "restored")
	if err := base.Restore(ctx, list[2], dest); err != nil {
		t.Fatal(err)
	}
	sameTree(t, scan(t, ws), scan(t, dest))
	if err := base.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestImportRefusesAnObjectThatIsNotItsName: a staged blob or tree whose content does not
// hash to its name is refused, and the store gets no record and no such object.
func TestImportRefusesAnObjectThatIsNotItsName(t *testing.T) {
	for _, kind := range []string{"blobs", "trees"} {
		t.Run(kind, func(t *testing.T) {
			if problem := importForged(t, kind); problem != "" {
				t.Fatal(problem)
			}
		})
	}
}

// importForged stages a capsule, replaces one of its objects (kind) with other content of
// the same size, still well formed, and imports: it says what went wrong, or "".
func importForged(t *testing.T, kind string) string {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "the agent's file\n", 0o644)
	base := openStore(t)
	stage, _, c := stageOver(t, base, ws, "toolu_1")
	name := objectRel(kind, c.Root)
	if kind == "blobs" {
		name = objectRel(kind, hashBytes([]byte("the agent's file\n")))
	}
	p := filepath.Join(stage, name)
	os.Chmod(p, 0o644)
	// The same size, other content, still well formed: only the hash can tell.
	data, _ := os.ReadFile(p)
	forged := []byte(strings.ToUpper(string(data)))
	if kind == "trees" {
		forged = []byte(strings.Replace(string(data), " 0644 ", " 0755 ", 1))
	}
	if err := os.WriteFile(p, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := base.Import(context.Background(), stage)
	if err == nil || !strings.Contains(err.Error(), "hashes to") {
		return fmt.Sprintf("import of a forged %s: %v, want a refusal naming the hash", kind, err)
	}
	if list, _ := base.List(); len(list) != 0 {
		return fmt.Sprintf("the store took records %+v", list)
	}
	if base.exists(name) {
		return "the store took the forged " + name
	}
	return ""
}

// stagedSymlinks are what TestImportNeverFollowsAStagedSymlink replaces with a symlink.
var stagedSymlinks = []string{"blobs/" + hashBytes([]byte(cronLine))[:2], "blobs", "capsules", "capsules/0001-toolu_1.json", "trees"}

// cronLine is a payload the red team had the host write into /etc/cron.d.
const cronLine = "* * * * * root touch /tmp/PWNED\n"

// TestImportNeverFollowsAStagedSymlink: a room that replaces a staged folder or file with
// a symlink (to a folder holding exactly what the import looks for) gets a refusal naming
// it; the import neither reads through it nor writes where it points.
func TestImportNeverFollowsAStagedSymlink(t *testing.T) {
	for _, planted := range stagedSymlinks {
		t.Run(strings.ReplaceAll(planted, "/", "_"), func(t *testing.T) {
			if problem := importThroughSymlink(t, planted); problem != "" {
				t.Fatal(problem)
			}
		})
	}
}

// importThroughSymlink stages a capsule, moves the staged path planted elsewhere and puts
// a symlink to it in its place, and imports: it says what went wrong, or "".
func importThroughSymlink(t *testing.T, planted string) string {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "cronjob"), cronLine, 0o644)
	base := openStore(t)
	snap(t, base, t.TempDir(), "start")
	stage, _, _ := stageOver(t, base, ws, "toolu_1")
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(filepath.Join(stage, planted), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(stage, planted)); err != nil {
		t.Fatal(err)
	}
	_, err := base.Import(context.Background(), stage)
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		return fmt.Sprintf("import through a symlinked %s: %v, want a refusal naming the symlink", planted, err)
	}
	if list, _ := base.List(); len(list) != 1 {
		return fmt.Sprintf("the store took records through a symlink: %+v", list)
	}
	return ""
}

// specialFiles make a fifo, a socket and a device at a path.
func specialFiles(t *testing.T) map[string]func(p string) error {
	return map[string]func(p string) error{
		"fifo": func(p string) error { return unix.Mkfifo(p, 0o644) },
		"socket": func(p string) error {
			// Made where its path is short enough for a socket address, then moved.
			short, err := os.MkdirTemp("", "s")
			if err != nil {
				return err
			}
			t.Cleanup(func() { os.RemoveAll(short) })
			l, err := net.Listen("unix", filepath.Join(short, "s"))
			if err != nil {
				return err
			}
			t.Cleanup(func() { l.Close() })
			return os.Rename(filepath.Join(short, "s"), p)
		},
		// /dev/null's numbers: reading it gives 0 bytes and does not block; only the type
		// check refuses it. Making one needs CAP_MKNOD (the tests run as root; a room never
		// has it, so it cannot plant one either).
		"device": func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))) },
	}
}

// TestImportRefusesSpecialFiles: a fifo, socket or device where a staged object should be
// is refused without being opened (opening a fifo would hang the import, a device can act).
func TestImportRefusesSpecialFiles(t *testing.T) {
	for name, mk := range specialFiles(t) {
		t.Run(name, func(t *testing.T) {
			if problem := importSpecial(t, name, mk); problem != "" {
				t.Fatal(problem)
			}
		})
	}
}

// importSpecial stages a capsule of an empty file, puts a special file (made by mk) in
// place of its blob, and imports: it says what went wrong, or "". Empty, because a fifo or
// /dev/null read without the type check gives exactly those bytes.
func importSpecial(t *testing.T, name string, mk func(string) error) string {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "a.txt"), "", 0o644)
	base := openStore(t)
	stage, _, _ := stageOver(t, base, ws, "toolu_1")
	p := filepath.Join(stage, objectRel("blobs", hashBytes(nil)))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := mk(p); err != nil {
		t.Fatalf("make a %s: %v", name, err)
	}
	_, err := base.Import(context.Background(), stage)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		return fmt.Sprintf("import of a staged %s: %v, want a refusal", name, err)
	}
	if list, _ := base.List(); len(list) != 0 {
		return fmt.Sprintf("the store took records %+v", list)
	}
	return ""
}
