package sandbox

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// setIDBelow lists what below root has set-uid, set-gid or file capabilities, walked
// without following links (filepath.WalkDir lstats).
func setIDBelow(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			out = append(out, fmt.Sprintf("%s %v", p, fi.Mode()))
		}
		if fi.Mode().IsRegular() {
			if _, err := unix.Lgetxattr(p, capabilityXattr, nil); err == nil {
				out = append(out, p+" has file capabilities")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// capData is a struct vfs_cap_data (revision 2, effective) giving cap_net_raw.
func capData() []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b, 0x02000000|1)
	binary.LittleEndian.PutUint32(b[4:], 1<<unix.CAP_NET_RAW)
	return b
}

// TestRoomRefusesSetID (red-team H1): in a real room, with the tools an agent would use
// (coreutils chmod, perl's raw syscalls), making a set-uid file, a set-gid folder or a
// file with capabilities fails with EPERM, and the workspace on the host holds none.
func TestRoomRefusesSetID(t *testing.T) {
	ws := t.TempDir()
	perl := func(nr uintptr, args string) string {
		return fmt.Sprintf(`perl -e 'my @a = (%[2]s); my $r = syscall(%[1]d, @a); print $r == -1 ? ($!+0 == 1 ? "EPERM" : "errno ".($!+0)) : "ok"' 2>&1`, nr, args)
	}
	script := strings.Join([]string{
		`printf '#!/bin/sh\nid\n' >rootsh && chmod 755 rootsh && mkdir shared`,
		`echo "chmod 4755: $(chmod 4755 rootsh 2>&1 && echo ok)"`,
		`echo "chmod u+s: $(chmod u+s rootsh 2>&1 && echo ok)"`,
		`echo "chmod g+s folder: $(chmod g+s shared 2>&1 && echo ok)"`,
		`echo "install -m 4755: $(install -m 4755 rootsh installed 2>&1 && echo ok)"`,
		`echo "fchmodat: $(` + perl(unix.SYS_FCHMODAT, `-100, "rootsh", 04755`) + `)"`,
		`echo "fchmodat2: $(` + perl(unix.SYS_FCHMODAT2, `-100, "rootsh", 06755, 0`) + `)"`,
		`echo "setxattr security.capability: $(` + perl(unix.SYS_SETXATTR, fmt.Sprintf(`"rootsh", "%s", pack("V5", 0x02000001, %d, 0, 0, 0), 20, 0`, capabilityXattr, 1<<unix.CAP_NET_RAW)) + `)"`,
		`echo "perl sysopen O_CREAT 04755: $(perl -MFcntl -e 'print sysopen(my $f, "created", O_CREAT|O_WRONLY, 04755) ? "ok" : ($!+0 == 1 ? "EPERM" : "errno ".($!+0))')"`,
		`echo "modes: $(stat -c '%n %a' rootsh shared | tr '\n' ' ')"`,
	}, "\n")
	var out, stderr strings.Builder
	code := runRoom(t, Room{Workspace: ws, Argv: []string{"/bin/sh", "-c", "cd " + WorkDir + " && " + script}, Stdout: &out, Stderr: &stderr})
	got := out.String()
	t.Logf("in the room:\n%s", got)
	if code != 0 {
		t.Fatalf("room exited %d: %s", code, stderr.String())
	}
	for _, try := range []string{"chmod 4755", "chmod u+s", "chmod g+s folder", "install -m 4755", "fchmodat", "fchmodat2", "setxattr security.capability", "perl sysopen O_CREAT 04755"} {
		line := lineAfter(got, try+": ")
		if !strings.Contains(line, "EPERM") && !strings.Contains(line, "Operation not permitted") {
			t.Errorf("%s in the room: %q, want EPERM", try, line)
		}
	}
	if line := lineAfter(got, "modes: "); line != "rootsh 755 shared 755 " {
		t.Errorf("modes in the room: %q, want rootsh 755 shared 755", line)
	}
	if bad := setIDBelow(t, ws); len(bad) > 0 {
		t.Errorf("on the host after the room: %v", bad)
	}
}

// lineAfter returns the rest of the first line of out that starts with prefix.
func lineAfter(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return rest
		}
	}
	return "(missing)"
}

// checkStrip runs a room whose seccomp filter lets set-uid and set-gid through (mutate
// may switch off more) and which makes them everywhere it can write: the workspace, a
// folder it then locks (mode 000), the run store and a writable bind. A file in the
// workspace has file capabilities before the room starts, set on the host (root only), and
// a symlink in the workspace points at a host set-uid file outside every folder the room
// could write. It returns what is wrong on the host once the room has ended.
func checkStrip(t *testing.T, mutate func(r *Room)) []string {
	root := t.TempDir()
	ws, store, cache, outside := filepath.Join(root, "ws"), filepath.Join(root, "store"), filepath.Join(root, "cache"), filepath.Join(root, "outside")
	for _, d := range []string{ws, store, cache, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Not the room's: the strip must leave it, never following the link to it.
	operators := filepath.Join(outside, "operators-setuid")
	if err := os.WriteFile(operators, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(operators, 0o4755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(operators, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	var bad []string
	withCaps := os.Geteuid() == 0
	if withCaps {
		p := filepath.Join(ws, "capable")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(p, capabilityXattr, capData(), 0); err != nil {
			t.Fatal(err)
		}
	}
	script := `set -e
for d in /work /work/locked ` + RunDir + ` /cache; do
  mkdir -p $d/shared
  printf '#!/bin/sh\nid\n' >$d/rootsh
  chmod 4755 $d/rootsh
  chmod g+s $d/shared
  mkdir $d/shared/inherits
  install -m 2755 $d/rootsh $d/shared/inherits/groupsh
done
chmod 000 /work/locked`
	r := Room{Workspace: ws, RunStore: store, Binds: []Bind{{Source: cache, Dest: "/cache", Write: true}},
		Argv: []string{"/bin/sh", "-c", script}, seccompNoModes: true}
	var stderr strings.Builder
	r.Stderr = &stderr
	if mutate != nil {
		mutate(&r)
	}
	if code := runRoom(t, r); code != 0 {
		t.Fatalf("room exited %d: %s", code, stderr.String())
	}
	if fi, err := os.Stat(filepath.Join(ws, "locked")); err != nil || fi.Mode().Perm() != 0 {
		bad = append(bad, fmt.Sprintf("the locked folder's mode is %v (%v), want it given back (0)", fi.Mode(), err))
	}
	os.Chmod(filepath.Join(ws, "locked"), 0o755)
	for _, d := range []string{ws, store, cache} {
		bad = append(bad, setIDBelow(t, d)...)
	}
	if fi, err := os.Stat(operators); err != nil || fi.Mode()&fs.ModeSetuid == 0 {
		bad = append(bad, fmt.Sprintf("the operator's set-uid file outside the room, behind a link, is now %v (%v): the strip followed the link", fi.Mode(), err))
	}
	return bad
}

// TestRoomEndStripsSetID: whatever the room's filter let through, the host folders it
// could write hold no set-uid, set-gid or file capabilities once it has ended.
func TestRoomEndStripsSetID(t *testing.T) {
	if bad := checkStrip(t, nil); len(bad) > 0 {
		t.Fatalf("after the room: %v", bad)
	}
}

// TestMutationStrip: without the strip at the end of the room, the set-uid files a room
// made (with the filter's mode rules off too) stay on the host.
func TestMutationStrip(t *testing.T) {
	got := checkStrip(t, func(r *Room) { r.noStrip = true })
	if len(got) == 0 {
		t.Fatalf("removing the strip left checkStrip green")
	}
	t.Logf("red without the strip: %s", strings.Join(got[:min(3, len(got))], "; "))
}
