package capsule

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookCapsulesMatchFullWalk is the fast path's property: the capsule the agent's hook
// takes (HookCommand through sh -c asking a tare-room snap-watch over its FIFOs, which
// snapshots only what inotify saw change) has the same root hash as a full walk of the
// workspace into a fresh store, step after step of random edits: contents rewritten (to
// the same size too, and twice within a step), files and folders created, deleted and
// renamed, modes changed, symlinks made, retargeted and swapped with files.
func TestHookCapsulesMatchFullWalk(t *testing.T) {
	bin := buildHelper(t)
	ws := richWorkspace(t)
	dir := t.TempDir()
	base, stage, sock := filepath.Join(dir, "store"), filepath.Join(dir, "stage"), filepath.Join(dir, "snap.sock")
	s, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	snap(t, s, ws, "start")
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := startWatch(t, bin, stage, base, ws, sock)
	defer stop()
	st, err := OpenStage(stage, base)
	if err != nil {
		t.Fatal(err)
	}
	hook := HookCommand(bin, stage, base, ws, sock)
	rng := rand.New(rand.NewPCG(12, 34))
	for step := range 40 {
		var did []string
		for range 1 + rng.IntN(4) {
			did = append(did, edit(t, rng, ws))
		}
		id := fmt.Sprintf("toolu_%d", step)
		cmd := exec.Command("/bin/sh", "-c", hook)
		cmd.Stdin = strings.NewReader(`{"hook_event_name":"PostToolUse","tool_use_id":"` + id + `"}`)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Fatalf("step %d: hook: %v: %s", step, err, out)
		}
		list, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		got := list[len(list)-1]
		full := snap(t, openStore(t), ws, "full")
		if got.ID != id || got.Walk != "dirty" || got.Root != full.Root {
			t.Fatalf("step %d (%s): the hook's capsule %s (walk %s) has root %s, a full walk %s",
				step, strings.Join(did, "; "), got.Name(), got.Walk, got.Root, full.Root)
		}
	}
}

// edit makes one random change below ws and says what it did.
func edit(t *testing.T, rng *rand.Rand, ws string) string {
	t.Helper()
	var files, links, dirs []string
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(ws, p)
		switch {
		case err != nil || rel == ".":
		case d.IsDir():
			if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o200 != 0 {
				dirs = append(dirs, rel)
			}
		case d.Type()&os.ModeSymlink != 0:
			links = append(links, rel)
		case d.Type().IsRegular() && filepath.Base(filepath.Dir(p)) != "readonly":
			files = append(files, rel)
		}
		return nil
	})
	dirs = append(dirs, ".")
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	at := func(rel string) string { return filepath.Join(ws, rel) }
	fresh := func() string { return filepath.Join(pick(dirs), fmt.Sprintf("f%d", rng.IntN(1000))) }
	if len(files) < 3 {
		f := fresh()
		write(t, at(f), "seed", 0o644)
		return "seed " + f
	}
	switch op := rng.IntN(11); op {
	case 0: // rewrite, to the same size (only the content tells)
		f := pick(files)
		data, _ := os.ReadFile(at(f))
		write(t, at(f), strings.Repeat(string(rune('a'+rng.IntN(26))), len(data)), 0o644)
		return "rewrite " + f
	case 1: // change twice within the step
		f := pick(files)
		write(t, at(f), "first", 0o644)
		write(t, at(f), fmt.Sprintf("second %d", rng.IntN(1000)), 0o644)
		return "twice " + f
	case 2:
		f := fresh()
		write(t, at(f), fmt.Sprintf("new %d", rng.IntN(1000)), 0o644)
		return "create " + f
	case 3:
		f := pick(files)
		os.Remove(at(f))
		return "delete " + f
	case 4: // rename a file, maybe over another, maybe into another folder
		f, to := pick(files), fresh()
		if rng.IntN(3) == 0 {
			to = pick(files)
		}
		os.Rename(at(f), at(to))
		return "rename " + f + " -> " + to
	case 5: // rename a folder
		d := pick(dirs)
		if d == "." {
			return "none"
		}
		to := filepath.Join(filepath.Dir(d), fmt.Sprintf("moved%d", rng.IntN(1000)))
		os.Rename(at(d), at(to))
		return "rename folder " + d + " -> " + to
	case 6: // mode of a file or a folder
		if rng.IntN(2) == 0 {
			f := pick(files)
			os.Chmod(at(f), []os.FileMode{0o755, 0o644, 0o600, 0o4755}[rng.IntN(4)])
			return "chmod " + f
		}
		d := pick(dirs)
		os.Chmod(at(d), []os.FileMode{0o700, 0o755, 0o1777}[rng.IntN(3)])
		return "chmod folder " + d
	case 7: // a new symlink, or one retargeted
		if len(links) > 0 && rng.IntN(2) == 0 {
			l := pick(links)
			os.Remove(at(l))
			os.Symlink(fmt.Sprintf("target%d", rng.IntN(1000)), at(l))
			return "retarget " + l
		}
		l := fresh()
		os.Symlink(pick(files), at(l))
		return "symlink " + l
	case 8: // a file becomes a symlink, or a symlink a file
		if len(links) > 0 && rng.IntN(2) == 0 {
			l := pick(links)
			os.Remove(at(l))
			write(t, at(l), "was a link", 0o644)
			return "link to file " + l
		}
		f := pick(files)
		os.Remove(at(f))
		os.Symlink("elsewhere", at(f))
		return "file to link " + f
	case 9: // a folder tree, made in one go
		d := filepath.Join(pick(dirs), fmt.Sprintf("tree%d", rng.IntN(1000)))
		write(t, at(filepath.Join(d, "a/b/file")), "deep", 0o644)
		return "tree " + d
	default: // a folder removed
		d := pick(dirs)
		if d == "." {
			return "none"
		}
		os.RemoveAll(at(d))
		return "remove folder " + d
	}
}
