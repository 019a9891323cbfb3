package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writeTree creates each file (relative to root) with a line of text.
func writeTree(t testing.TB, root string, files ...string) {
	t.Helper()
	for _, rel := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("canary "+rel+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// manyFiles creates n empty files below root/dir, 1000 to a folder.
func manyFiles(t testing.TB, root string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		d := filepath.Join(root, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Create(filepath.Join(d, fmt.Sprintf("f%04d", i%1000)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestWalkSeesEverySecretAndTheAgentRuntime: the walk of a room whose workspace holds
// 30,000 files (more than the 20,000 the walk used to stop at, silently) still reaches the
// files after them, reports every well-known secret path (and no look-alike), and walks the
// agent runtime at /opt/agent, where a standalone binary's folder may hold anything.
func TestWalkSeesEverySecretAndTheAgentRuntime(t *testing.T) {
	needRooms(t)
	root := t.TempDir()
	ws, runtimeDir, home := filepath.Join(root, "ws"), filepath.Join(root, "runtime"), filepath.Join(root, "home")
	manyFiles(t, filepath.Join(ws, "aaa"), 30000)
	writeTree(t, ws, ".aws/credentials", "zzz/.ssh/id_ed25519", "zzz/.ssh/keys/deploy", "sub/.netrc", "x/.docker/config.json",
		".kube/config", ".config/gh/hosts.yml", ".config/gcloud/application_default_credentials.json", ".git-credentials",
		// look-alikes that are not secrets
		"docker/config.json", "kube/config", "ssh/id_rsa", ".kube/cache/discovery", ".config/gh/config.yml", "netrc")
	writeTree(t, home, ".claude/CLAUDE.md", ".pi/agent/AGENTS.md")
	// The operator's own file, hard-linked deep in the project (after the 30,000 files).
	if err := os.MkdirAll(filepath.Join(ws, "zzz", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(home, ".claude/CLAUDE.md"), filepath.Join(ws, "zzz", "deep", "notes.md")); err != nil {
		t.Fatal(err)
	}
	// A standalone agent binary's folder: here, the whole home.
	writeTree(t, runtimeDir, "agent-bin", ".ssh/id_rsa")
	if err := os.Link(filepath.Join(home, ".pi/agent/AGENTS.md"), filepath.Join(runtimeDir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	var idents []Ident
	for _, rel := range []string{".claude/CLAUDE.md", ".pi/agent/AGENTS.md"} {
		id, err := IdentOf(filepath.Join(home, rel), "~/"+rel)
		if err != nil {
			t.Fatal(err)
		}
		idents = append(idents, id)
	}

	v := runInspect(t, Room{Workspace: ws, WorkspaceReadOnly: true, Agent: runtimeDir}, InspectOptions{Idents: idents}).View
	if v.WalkStopped != "" || v.WalkTruncated || v.Walked < 30000 {
		t.Fatalf("the walk stopped (%q, truncated %v) after %d entries", v.WalkStopped, v.WalkTruncated, v.Walked)
	}
	var secrets, found []string
	for _, f := range v.Found {
		if strings.HasPrefix(f.Why, "secret ") {
			secrets = append(secrets, f.Path)
		} else {
			found = append(found, f.Path+" "+f.Why)
		}
	}
	sort.Strings(secrets)
	want := []string{
		AgentDir + "/runtime/.ssh/id_rsa",
		WorkDir + "/.aws/credentials", WorkDir + "/.config/gcloud/application_default_credentials.json", WorkDir + "/.config/gh/hosts.yml",
		WorkDir + "/.git-credentials", WorkDir + "/.kube/config", WorkDir + "/sub/.netrc", WorkDir + "/x/.docker/config.json",
		WorkDir + "/zzz/.ssh/id_ed25519", WorkDir + "/zzz/.ssh/keys/deploy",
	}
	if !slices.Equal(secrets, want) {
		t.Errorf("secret files seen:\n  %s\nwant:\n  %s", strings.Join(secrets, "\n  "), strings.Join(want, "\n  "))
	}
	for _, w := range []string{WorkDir + "/zzz/deep/notes.md ident ~/.claude/CLAUDE.md", AgentDir + "/runtime/AGENTS.md ident ~/.pi/agent/AGENTS.md"} {
		if !slices.Contains(found, w) {
			t.Errorf("the walk did not find %s; found %v", w, found)
		}
	}
	t.Logf("walked %d entries in the inspection's %.0f ms", v.Walked, v.ElapsedMS)
}

// TestWalkWithinOneFolder: a walk from / with Within set looks into that folder only, reached
// through the room like any walk (here a read-write bind below the room's own /tmp): it finds
// the host file and the secret there, and none of those in the workspace beside it.
func TestWalkWithinOneFolder(t *testing.T) {
	needRooms(t)
	root := t.TempDir()
	ws, planted := filepath.Join(root, "ws"), filepath.Join(root, "planted", "home")
	writeTree(t, ws, ".aws/credentials", "notes.md")
	writeTree(t, planted, ".ssh/id_ed25519", "CLAUDE.md")
	manyFiles(t, filepath.Join(ws, "many"), 2000)
	var idents []Ident
	for _, p := range []string{filepath.Join(ws, "notes.md"), filepath.Join(planted, "CLAUDE.md")} {
		id, err := IdentOf(p, p)
		if err != nil {
			t.Fatal(err)
		}
		idents = append(idents, id)
	}
	r := Room{Workspace: ws, WorkspaceReadOnly: true, Binds: []Bind{{Source: planted, Dest: planted, Write: true}}}
	for _, c := range []struct {
		within string
		want   []string
	}{
		{planted, []string{planted + "/.ssh/id_ed25519 secret .ssh/", planted + "/CLAUDE.md ident " + planted + "/CLAUDE.md"}},
		{"", []string{planted + "/.ssh/id_ed25519 secret .ssh/", planted + "/CLAUDE.md ident " + planted + "/CLAUDE.md",
			WorkDir + "/.aws/credentials secret .aws/", WorkDir + "/notes.md ident " + filepath.Join(ws, "notes.md")}},
	} {
		v := runInspect(t, r, InspectOptions{Idents: idents, Within: c.within}).View
		var found []string
		for _, f := range v.Found {
			found = append(found, f.Path+" "+f.Why)
		}
		sort.Strings(found)
		sort.Strings(c.want)
		if !slices.Equal(found, c.want) || v.WalkStopped != "" {
			t.Errorf("within %q: found\n  %s\nwant\n  %s\n(stopped %q)", c.within, strings.Join(found, "\n  "), strings.Join(c.want, "\n  "), v.WalkStopped)
		}
		if c.within != "" && v.Walked > 200 {
			t.Errorf("within %q: walked %d entries, beyond the way to it and what is below it", c.within, v.Walked)
		}
	}
}

// TestWalkThatStopsSaysSo: a walk cut short by its cap says so, with the reason, so the
// probe reads its detectors as blind rather than clean.
func TestWalkThatStopsSaysSo(t *testing.T) {
	ws := t.TempDir()
	manyFiles(t, ws, 300)
	v := runInspect(t, Room{Workspace: ws, WorkspaceReadOnly: true}, InspectOptions{MaxFiles: 100}).View
	if !v.WalkTruncated || !strings.Contains(v.WalkStopped, "stopped at 100 entries") {
		t.Fatalf("walk of a room with more than 100 entries, capped at 100: truncated %v, stopped %q", v.WalkTruncated, v.WalkStopped)
	}
}

// TestWatchSeesHostPathsInTheRoom: the inspection finds a watched host path where a room
// shows it without holding a file of it: a bind's root in the mount table, and a process's
// environment; and it does not find it in its own command line, which carries its options
// encoded.
func TestWatchSeesHostPathsInTheRoom(t *testing.T) {
	marker := "tare-watch-" + randHex(6)
	ws := filepath.Join(t.TempDir(), marker, "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	r := Room{Workspace: ws, WorkspaceReadOnly: true, Env: map[string]string{"TARE_TEST_WHERE": "/srv/" + marker}}
	v := runInspect(t, r, InspectOptions{Watch: []string{marker}}).View
	var mount, environ bool
	for _, s := range v.Seen {
		if s.String != marker {
			t.Errorf("seen %+v, which is not the watched string", s)
		}
		mount = mount || (s.Where == "/proc/self/mountinfo" && s.Text == real && s.At == WorkDir)
		environ = environ || (strings.HasSuffix(s.Where, "/environ") && s.Text == "TARE_TEST_WHERE=/srv/"+marker)
		if strings.Contains(s.Text, "--watch") || strings.Contains(s.Text, "--spec") {
			t.Errorf("the inspection found the string in its own command line: %+v", s)
		}
	}
	if !mount || !environ {
		t.Errorf("seen %+v: want the workspace's root in /proc/self/mountinfo at %s (%v) and the variable in an environ (%v)", v.Seen, WorkDir, mount, environ)
	}
}

// TestWalkSkipsTheKernelsFileSystems: a proc file system bound elsewhere than /proc (as
// under /work when the project is the host root) is not walked: its entries are the
// kernel's, endless and partly unreadable, not anyone's files.
func TestWalkSkipsTheKernelsFileSystems(t *testing.T) {
	r := Room{Workspace: t.TempDir(), WorkspaceReadOnly: true, Binds: []Bind{{Source: "/proc", Dest: "/srv/proc"}}}
	v := runInspect(t, r, InspectOptions{}).View
	if v.WalkStopped != "" || v.Walked > 5000 {
		t.Fatalf("the walk of a room with the host's /proc at /srv/proc looked at %d entries (stopped: %q)", v.Walked, v.WalkStopped)
	}
}

// TestCgroupFilesOfTheGoRuntimeAreNotInherited: where the room shows a cgroup file system
// (the host's, under /work when the project is the host root), the Go runtime of the
// inspection opens its CPU limit files and keeps them: they are its own, not a descriptor
// the room inherited.
func TestCgroupFilesOfTheGoRuntimeAreNotInherited(t *testing.T) {
	r := Room{Workspace: t.TempDir(), WorkspaceReadOnly: true, Binds: []Bind{{Source: "/sys/fs/cgroup", Dest: "/srv/cgroup"}}}
	v := runInspect(t, r, InspectOptions{}).View
	for _, fd := range v.FDs {
		if fd.FD > 2 && !fd.Runtime {
			t.Errorf("descriptor %d (%s) read as inherited", fd.FD, fd.Target)
		}
	}
	t.Logf("descriptors: %+v", v.FDs)
}

// BenchmarkInspectLargeProject: the whole in-room inspection (walk included) in a room
// whose workspace is empty, then one of 100,000 files; extra-ms is what the files add.
//
//	go test ./sandbox -run '^$' -bench BenchmarkInspectLargeProject -benchtime 5x
func BenchmarkInspectLargeProject(b *testing.B) {
	empty, large := b.TempDir(), b.TempDir()
	manyFiles(b, large, 100000)
	var sumEmpty, sumLarge time.Duration
	for b.Loop() {
		for _, c := range []struct {
			ws  string
			sum *time.Duration
		}{{empty, &sumEmpty}, {large, &sumLarge}} {
			t0 := time.Now()
			v := runInspect(b, Room{Workspace: c.ws, WorkspaceReadOnly: true}, InspectOptions{}).View
			*c.sum += time.Since(t0)
			if v.WalkStopped != "" {
				b.Fatal(v.WalkStopped)
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(sumEmpty.Milliseconds())/n, "empty-ms")
	b.ReportMetric(float64(sumLarge.Milliseconds())/n, "100k-ms")
	b.ReportMetric(float64((sumLarge-sumEmpty).Milliseconds())/n, "extra-ms")
}

// TestWalkCountsTheSecretsItDoesNotList: a room full of secret files lists the first ones
// and counts the rest, so the reading stays readable and still says how many there are.
func TestWalkCountsTheSecretsItDoesNotList(t *testing.T) {
	ws := t.TempDir()
	for i := 0; i < secretMax+50; i++ {
		writeTree(t, ws, fmt.Sprintf(".gnupg/private-keys-v1.d/k%03d.key", i))
	}
	v := runInspect(t, Room{Workspace: ws, WorkspaceReadOnly: true}, InspectOptions{}).View
	n := 0
	for _, f := range v.Found {
		if f.Why == "secret .gnupg/" {
			n++
		}
	}
	if n != secretMax || v.SecretsUnlisted != 50 {
		t.Fatalf("%d secret files listed and %d counted, want %d and 50", n, v.SecretsUnlisted, secretMax)
	}
}

// TestWalkTooDeepToOpenSaysSo: a tree deeper than a path can name (PATH_MAX) is not seen to
// its end by the walk, which opens folders by path: it says so (the probe reads blind), and
// does not pass over it as if it were empty.
func TestWalkTooDeepToOpenSaysSo(t *testing.T) {
	ws := t.TempDir()
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("d", 200)
	for i := 0; i < 25; i++ { // 25 × 201 bytes: past the 4096 of PATH_MAX
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	f, err := unix.Openat(fd, ".netrc", unix.O_CREAT|unix.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(f)
	unix.Close(fd)
	v := runInspect(t, Room{Workspace: ws, WorkspaceReadOnly: true}, InspectOptions{}).View
	if !strings.Contains(v.WalkStopped, "ENAMETOOLONG") {
		t.Fatalf("walk of a tree past PATH_MAX: stopped %q, want the reason", v.WalkStopped)
	}
}

// TestWalkNamesAFolderTheAgentCanOpenUp: a mode-000 folder of the project, which the room's
// user owns, is named as not entered (the probe reads blind), because the agent can open it
// up and read what it holds, as a room with the project writable shows. A shut folder of
// another owner stays shut to the agent too and is not named.
func TestWalkNamesAFolderTheAgentCanOpenUp(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, "locked/notes.md", "locked/.ssh/id_rsa", "theirs/notes.md", "open/readme.md")
	if err := os.Chown(filepath.Join(ws, "theirs"), 12345, 12345); err != nil {
		t.Skipf("cannot give a folder to another owner here: %v", err)
	}
	for _, d := range []string{"locked", "theirs"} {
		if err := os.Chmod(filepath.Join(ws, d), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(ws, d), 0o755) })
	}
	v := runInspect(t, Room{Workspace: ws, WorkspaceReadOnly: true}, InspectOptions{}).View
	if !slices.Equal(v.Unentered, []string{WorkDir + "/locked"}) || v.UnenteredMore != 0 || v.WalkStopped != "" {
		t.Fatalf("walk of a project with a mode-000 folder of its own: unentered %q (+%d), stopped %q; want only %s/locked",
			v.Unentered, v.UnenteredMore, v.WalkStopped, WorkDir)
	}
	// Why it is blind and not harmless: the agent opens it up and reads.
	var out strings.Builder
	code := runRoom(t, Room{Workspace: ws, Stdout: &out,
		Argv: []string{"/bin/sh", "-c", "chmod 700 " + WorkDir + "/locked && cat " + WorkDir + "/locked/notes.md; chmod 700 " + WorkDir + "/theirs 2>/dev/null || echo theirs-stays-shut"}})
	if code != 0 || !strings.Contains(out.String(), "canary locked/notes.md") || !strings.Contains(out.String(), "theirs-stays-shut") {
		t.Fatalf("room with the project writable: exit %d, output %q; want the locked note read and theirs shut", code, out.String())
	}
}
