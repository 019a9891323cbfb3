package sandbox

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Suite item 10: each critical defence is removed in turn (through the
// unexported test hooks on Room) and the very check that passes on the real
// room must report a problem. A defence no check can see would be one the
// suite does not prove.

// removeSeq returns an argv mutation deleting the first occurrence of seq
// among bwrap's options (before "--").
func removeSeq(seq ...string) func([]string) []string {
	return func(a []string) []string {
		end := slices.Index(a, "--")
		for i := 0; i+len(seq) <= end; i++ {
			if slices.Equal(a[i:i+len(seq)], seq) {
				return slices.Delete(a, i, i+len(seq))
			}
		}
		panic("mutation: " + seq[0] + " not in argv")
	}
}

// removeFlag returns an argv mutation deleting the option name and its
// one argument.
func removeFlag(name string) func([]string) []string {
	return func(a []string) []string {
		i := flagAt(a, name)
		if i < 0 {
			panic("mutation: " + name + " not in argv")
		}
		return slices.Delete(a, i, i+2)
	}
}

// hostRoot replaces the allowlist root (/usr and its symlinks) with the
// host root, as sandbox-runtime and Codex do, plus the tmpfs mount points
// bwrap then needs to create /home/agent, /opt/tare and /run/tare.
func hostRoot(a []string) []string {
	i := slices.Index(a, "/usr") - 1
	if i < 0 || a[i] != "--ro-bind" || a[i+3] != "--symlink" {
		panic("mutation: allowlist root not found")
	}
	out := slices.Concat(a[:i],
		[]string{"--ro-bind", "/", "/", "--tmpfs", "/home", "--tmpfs", "/opt", "--tmpfs", "/run"},
		a[i+3+4*3:])
	// The /etc allowlist is moot on the host root (and bwrap cannot bind a
	// file over the host's /etc/localtime symlink).
	for _, p := range etcAllow {
		if i := slices.Index(out, p); i >= 3 && out[i-2] == "--file" {
			out = slices.Delete(out, i-4, i+1) // --perms MODE --file FD p
		} else {
			out = removeSeq("--ro-bind-try", p, p)(out)
		}
	}
	// Nor can it write the identity files into the host's read-only /etc: bind them.
	for _, p := range []string{"/etc/passwd", "/etc/group", "/etc/hosts"} {
		i := slices.Index(out, p)
		out = slices.Replace(out, i-4, i+1, "--ro-bind-data", out[i-1], p)
	}
	if i := slices.Index(out, "/etc"); i >= 3 && out[i-1] == "--dir" {
		out = slices.Delete(out, i-3, i+1)
	}
	// Nor can it create /tare-run in the read-only host root: leave the
	// run store out.
	if i := slices.Index(out, RunDir); i > 0 && out[i-2] == "--bind" {
		out = slices.Delete(out, i-2, i+1)
	}
	return out
}

// imageHostRoot replaces an image room's root (the image's files) with the host's, each of
// its top-level entries bound read-only into an empty root in memory, so bwrap can still
// make the image room's mount points (its WORKDIR, /tare-run, /.tare) in it.
func imageHostRoot(a []string) []string {
	i := slices.Index(a, "/") - 2
	if i < 0 || a[i] != "--ro-bind" {
		panic("mutation: image root not found")
	}
	repl := []string{"--tmpfs", "/"}
	ents, err := os.ReadDir("/")
	if err != nil {
		panic(err)
	}
	for _, e := range ents {
		name := "/" + e.Name()
		switch name {
		case "/proc", "/dev", "/tmp", "/home", "/opt", "/run":
			continue
		}
		if e.Type()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(name)
			repl = append(repl, "--symlink", target, name)
			continue
		}
		repl = append(repl, "--ro-bind", name, name)
	}
	repl = append(repl, "--tmpfs", "/home", "--tmpfs", "/opt", "--tmpfs", "/run")
	return slices.Concat(a[:i], repl, a[i+3:])
}

func TestMutations(t *testing.T) {
	runMutations(t, false)
}

// TestImageMutations: the same defences, each removed in turn from a room rooted in an
// environment image, and two of the image room's own: its root and the read-only remount of
// tare's folders in memory.
func TestImageMutations(t *testing.T) {
	runMutations(t, true)
}

func runMutations(t *testing.T, image bool) {
	type check func(v View, r Room, w *world) []string
	cases := []struct {
		name  string
		apply func(r *Room)
		check check
	}{
		{"--clearenv (with bwrap's env the caller's)", func(r *Room) {
			r.mutate = removeSeq("--clearenv")
			r.bwrapEnv = os.Environ()
		}, func(v View, r Room, w *world) []string { return checkEnv(v, r, w) }},
		{"minimal bwrap env", func(r *Room) { r.bwrapEnv = os.Environ() },
			func(v View, r Room, w *world) []string { return checkPIDs(v, w) }},
		{"--cap-drop ALL", func(r *Room) { r.mutate = removeSeq("--cap-drop", "ALL") },
			func(v View, r Room, w *world) []string { return checkCaps(v) }},
		{"--unshare-net", func(r *Room) { r.mutate = removeSeq("--unshare-net") },
			func(v View, r Room, w *world) []string { return checkNetwork(v, w) }},
		{"--unshare-pid", func(r *Room) { r.mutate = removeSeq("--unshare-pid") },
			func(v View, r Room, w *world) []string { return checkPIDs(v, w) }},
		{"--remount-ro /", func(r *Room) {
			r.mutate = removeSeq("--remount-ro", "/")
			if r.Image != nil {
				// The image's root is a read-only bind of its own: only both together make it
				// writable.
				root := r.Image.Root
				r.mutate = func(a []string) []string {
					a = removeSeq("--remount-ro", "/")(a)
					i := slices.Index(a, root) - 1
					return slices.Replace(a, i, i+1, "--bind")
				}
			}
		},
			func(v View, r Room, w *world) []string { return checkWritable(v, r) }},
		{"allowlist root (--ro-bind / / instead)", func(r *Room) {
			if r.mutate = hostRoot; r.Image != nil {
				r.mutate = imageHostRoot
			}
		}, func(v View, r Room, w *world) []string { return checkCanaries(v, w, r) }},
		{"--disable-userns", func(r *Room) { r.mutate = removeSeq("--disable-userns") },
			func(v View, r Room, w *world) []string { return checkPrivileges(v) }},
		{"--seccomp", func(r *Room) { r.mutate = removeFlag("--seccomp") },
			func(v View, r Room, w *world) []string { return checkSeccomp(v) }},
		{"the seccomp filter's mode rules (set-uid, set-gid)", func(r *Room) { r.seccompNoModes = true },
			func(v View, r Room, w *world) []string { return checkSetID(v) }},
		// Two layers: tare's sweep before bwrap, and the relay's close in the
		// room (TestRelayClosesInheritedFDs shows the relay's alone).
		{"close-on-exec sweep of inherited fds and the relay's close", func(r *Room) { r.keepFDs, r.noLifeline = true, true },
			func(v View, r Room, w *world) []string { return checkFDs(v) }},
	}
	if image {
		cases = append(cases, struct {
			name  string
			apply func(r *Room)
			check check
		}{"--remount-ro of tare's folders in memory", func(r *Room) {
			r.mutate = func(a []string) []string {
				return removeSeq("--remount-ro", AgentDir)(removeSeq("--remount-ro", "/opt/tare")(a))
			}
		}, func(v View, r Room, w *world) []string { return checkWritable(v, r) }})
	}
	w := newWorld(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "--cap-drop ALL" && os.Geteuid() != 0 {
				t.Skip("bwrap started by a user other than root keeps no capability, --cap-drop or not: the flag is load-bearing for root (CI runs as root)")
			}
			r := cleanRoom(t, w)
			if image {
				r = withImage(t, r)
			}
			if got := c.check(inspectWorld(t, w, r), r, w); len(got) > 0 {
				t.Fatalf("real room already fails: %v", got)
			}
			c.apply(&r)
			got := c.check(inspectWorld(t, w, r), r, w)
			if len(got) == 0 {
				t.Fatalf("removing %s left its check green", c.name)
			}
			t.Logf("red without %s: %s", c.name, strings.Join(got[:min(3, len(got))], "; "))
		})
	}
}

// TestMutationNewSession: without --new-session the room shares the
// session whose controlling terminal is its pty, and TIOCSTI works.
func TestMutationNewSession(t *testing.T) {
	got := checkTTY(runTTYInspect(t, removeSeq("--new-session")))
	if len(got) == 0 {
		t.Fatalf("removing --new-session left checkTTY green")
	}
	t.Logf("red without --new-session: %s", got[0])
}

// TestMutationDieWithParent: without --die-with-parent (and without the
// lifeline, the other way a room ends with tare) the room outlives a
// SIGKILLed tare, and background jobs outlive the room's command.
func TestMutationDieWithParent(t *testing.T) {
	t.Run("parent killed", func(t *testing.T) {
		got := checkParentKilled(t, "die-with-parent,lifeline")
		if len(got) == 0 {
			t.Fatalf("removing --die-with-parent and the lifeline left checkParentKilled green")
		}
		t.Logf("red without --die-with-parent and the lifeline: survivors %v", got)
	})
	t.Run("background jobs", func(t *testing.T) {
		got := checkBackgroundJobs(t, removeSeq("--die-with-parent"))
		if len(got) == 0 {
			t.Fatalf("removing --die-with-parent left checkBackgroundJobs green")
		}
		t.Logf("red without --die-with-parent: survivors %v", got)
	})
}

// TestMutationLifeline: a room whose bwrap is killed while the room is still
// being set up (held there by --block-fd) outlives tare without the lifeline:
// its pid 1 arms --die-with-parent against its new parent, which never dies.
func TestMutationLifeline(t *testing.T) {
	got := checkParentKilled(t, "setup-window,lifeline")
	if len(got) == 0 {
		t.Fatalf("removing the lifeline left a room killed during its setup green")
	}
	t.Logf("red without the lifeline: survivors %v", got)
}

// TestRelayClosesInheritedFDs: with tare's close-on-exec sweep off, the
// descriptor that then reaches bwrap stops at `tare relay`, which closes
// every descriptor it inherited before the command starts.
func TestRelayClosesInheritedFDs(t *testing.T) {
	w := newWorld(t)
	r := cleanRoom(t, w)
	r.keepFDs = true
	if got := checkFDs(inspectWorld(t, w, r)); len(got) > 0 {
		t.Fatalf("without tare's sweep the relay let descriptors through: %v", got)
	}
}

// TestRelayIsOutOfReach: the room's command cannot reopen the relay's
// lifeline through /proc/2/fd. Opened there for writing, the pipe would never
// hang up, and the room would outlive tare. The control reopens the shell's
// own stdout pipe for writing the same way, from a subshell.
func TestRelayIsOutOfReach(t *testing.T) {
	var out strings.Builder
	// The results are printed from variables: /proc/2/cmdline holds the script itself.
	script := `tr '\0' ' ' </proc/2/cmdline; echo
n=$(tr '\0' ' ' </proc/2/cmdline | sed -n 's/.*--lifeline \([0-9]*\).*/\1/p')
c=no; ( exec 9>/proc/$$/fd/1 ) && c=yes; echo "control=$c"
r=shut; ( exec 9>/proc/2/fd/$n ) 2>/dev/null && r=writable; echo "lifeline=$r"`
	code := runRoom(t, Room{Workspace: t.TempDir(), Argv: []string{"/bin/sh", "-c", script}, Stdout: &out})
	got := out.String()
	if code != 0 || !strings.Contains(got, "control=yes") {
		t.Fatalf("room exited %d, the control failed:\n%s", code, got)
	}
	if !strings.Contains(got, TareBin+" relay --lifeline") {
		t.Fatalf("pid 2 is not the relay watching the lifeline:\n%s", got)
	}
	if !strings.Contains(got, "lifeline=shut") {
		t.Fatalf("the room's command can open the lifeline for writing:\n%s", got)
	}
}

// TestMutationOwnedStdio: a room handed tare's own output file reopens it through
// /proc/self/fd and reads what tare wrote there before it started, and writes into tare's
// stdin file.
func TestMutationOwnedStdio(t *testing.T) {
	got := checkOwnOutput(t, true)
	if len(got) == 0 {
		t.Fatalf("handing the room tare's own files left checkOwnOutput green")
	}
	t.Logf("red with tare's own files: %s", strings.Join(got, "; "))
}

// TestMutationArgsFile: with bwrap's options on its argv, /proc/1/cmdline in the room
// names every bind source on the host.
func TestMutationArgsFile(t *testing.T) {
	got := checkInitCmdline(t, true)
	if len(got) == 0 {
		t.Fatalf("putting bwrap's options on its argv left checkInitCmdline green")
	}
	t.Logf("red with the options on bwrap's argv: %s", strings.Join(got[:min(3, len(got))], "; "))
}

// TestMutationInitMem: without the masks, any process of the room reads (and could write)
// the memory of bwrap's pid 1.
func TestMutationInitMem(t *testing.T) {
	unmask := func(a []string) []string {
		for _, p := range initMem {
			a = removeSeq("--ro-bind", "/dev/null", p)(a)
		}
		return a
	}
	got := checkProcMem(t, unmask)
	if len(got) == 0 {
		t.Fatalf("removing the masks of /proc/1/mem left checkProcMem green")
	}
	t.Logf("red without the masks: %s", strings.Join(got, "; "))
}
