package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// baseImage is the image scripts/setup makes from Debian's packages; the image-room tests
// root their rooms in its exported filesystem.
const baseImage = "docker.io/library/debian:bookworm-slim"

var (
	baseRootOnce sync.Once
	baseRootDir  string
	baseRootErr  string
)

// imageRoot exports baseImage once per test binary into a temp folder, prepared as
// environ does (PrepareRoot with WORKDIR /app and a marker file in it), and returns it. A
// machine without podman or the base fails the test with the fix: the image room is
// tested for real or not at all. Under -short it skips the test first (needRooms): only
// rooms use the image.
func imageRoot(t testing.TB) string {
	t.Helper()
	needRooms(t)
	baseRootOnce.Do(func() {
		if _, err := exec.LookPath("podman"); err != nil {
			baseRootErr = "podman is missing: run scripts/setup (apt-get install podman)"
			return
		}
		if err := exec.Command("podman", "image", "exists", baseImage).Run(); err != nil {
			baseRootErr = baseImage + " is not in podman's store: run scripts/setup, which makes it from Debian's packages"
			return
		}
		dir, err := os.MkdirTemp("/var/tmp", "tare-sandbox-image-")
		if err != nil {
			baseRootErr = err.Error()
			return
		}
		cid, err := exec.Command("podman", "create", baseImage, "true").Output()
		if err != nil {
			baseRootErr = "podman create: " + err.Error()
			return
		}
		id := strings.TrimSpace(string(cid))
		defer exec.Command("podman", "rm", id).Run()
		sh := "podman export " + id + " | tar -x -p --no-same-owner --exclude='dev/*' -C " + dir
		if out, err := exec.Command("sh", "-c", sh).CombinedOutput(); err != nil {
			baseRootErr = "export: " + err.Error() + ": " + string(out)
			return
		}
		if err := PrepareRoot(dir, "/app"); err != nil {
			baseRootErr = err.Error()
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "app", "image-marker"), []byte("from the image\n"), 0o644); err != nil {
			baseRootErr = err.Error()
			return
		}
		baseRootDir = dir
	})
	if baseRootErr != "" {
		t.Fatal(baseRootErr)
	}
	return baseRootDir
}

// removeImageRoot removes the exported root once the tests are done (TestMain).
func removeImageRoot() {
	if baseRootDir != "" {
		os.RemoveAll(baseRootDir)
	}
}

// withImage roots r in the base image, with the image's PATH and one variable of its own.
func withImage(t testing.TB, r Room) Room {
	r.Image = &Image{Root: imageRoot(t), WorkDir: "/app", Digest: "test-base",
		Env: map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "IMAGE_VAR": "from-image"}}
	return r
}

// runScript runs sh -c script in r and returns its exit code and output.
func runScript(t *testing.T, r Room, script string) (int, string) {
	t.Helper()
	requireBwrap(t)
	if r.Tare == "" {
		r.Tare = testBinary(t)
	}
	var out bytes.Buffer
	r.Argv = []string{"/bin/sh", "-c", script}
	r.Stdout, r.Stderr = &out, &out
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, r)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	code, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v (%s)", err, out.String())
	}
	return code, out.String()
}

// TestImageRoom: a room rooted in the image sees the image's files, not the host's (the
// image's os-release, a tool only the host has missing), its workspace at the image's
// WORKDIR, the image's ENV, and a root it cannot write.
func TestImageRoom(t *testing.T) {
	needRooms(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "task.txt"), []byte("the task\n"), 0o644)
	r := withImage(t, Room{Workspace: ws})
	script := `pwd; cat task.txt; echo "var=$IMAGE_VAR"; echo "home=$HOME"
test -e /app/image-marker && echo marker-visible
command -v bwrap >/dev/null && echo host-tool-visible
touch /usr/probe 2>/dev/null && echo usr-writable || echo usr-read-only
touch /app/written && echo app-writable
id -un`
	code, out := runScript(t, r, script)
	if code != 0 {
		t.Fatalf("room exited %d:\n%s", code, out)
	}
	for _, want := range []string{"/app\n", "the task\n", "var=from-image\n", "home=" + HomeDir + "\n", "usr-read-only\n", "app-writable\n", User + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// The workspace is bound over the image's WORKDIR: the image's own copy is hidden.
	for _, bad := range []string{"marker-visible", "host-tool-visible", "usr-writable"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s:\n%s", bad, out)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "written")); err != nil {
		t.Errorf("the write to /app did not reach the workspace: %v", err)
	}
}

// testImage, when set, roots the rooms of the lifecycle, terminal and host-view checks in an
// image (rooted), so TestImageRoomDefences runs them, and their mutations, in an image room.
var testImage *Image

// rooted roots r in testImage when a test set one.
func rooted(r Room) Room {
	if testImage != nil {
		r.Image = testImage
	}
	return r
}

// TestImageRoomDefences runs the lifecycle, terminal and host-view tests and their mutations
// in rooms rooted in the base image: each defence holds there, and each is still
// load-bearing.
func TestImageRoomDefences(t *testing.T) {
	testImage = withImage(t, Room{}).Image
	defer func() { testImage = nil }()
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"parent killed", TestLifecycleParentKilled},
		{"killed during setup", TestLifecycleKilledDuringSetup},
		{"background jobs", TestLifecycleBackgroundJobs},
		{"tty", TestRoomTTY},
		{"own output", TestRoomCannotReadTaresOutput},
		{"init cmdline", TestInitCmdlineHoldsNoHostPath},
		{"init memory", TestRoomMemoryOutOfReach},
		{"mutation new-session", TestMutationNewSession},
		{"mutation die-with-parent", TestMutationDieWithParent},
		{"mutation lifeline", TestMutationLifeline},
		{"mutation owned stdio", TestMutationOwnedStdio},
		{"mutation args file", TestMutationArgsFile},
		{"mutation init memory", TestMutationInitMem},
	} {
		t.Run(c.name, c.test)
	}
}

// TestArgsImageExact: the argv of a room rooted in an image, pinned: the image's root
// read-only instead of /usr and the host's /etc, the identity bound over the image's files,
// the image's ENV under tare's variables and its PATH before tare's runtime, tare's folders
// in memory remounted read-only, and the workspace at the image's WORKDIR.
func TestArgsImageExact(t *testing.T) {
	r := baseRoom()
	r.Agent = "/opt/agents/node_modules"
	r.Image = &Image{Root: "/var/cache/tare/envs/abc/rootfs", WorkDir: "/app", Runtime: "/var/cache/tare/envs/runtime/node-1",
		Env: map[string]string{"PATH": "/opt/conda/bin:/usr/bin:/bin", "LANG": "en_US.UTF-8", "TMPDIR": "/var/tmp", "HOME": "/root", "TASK": "t1"}}
	fds := SequentialFDs(0)
	fds.MaskProc = procMasked
	got, err := r.Args(fds)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(`--die-with-parent --new-session --unshare-user --disable-userns --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net
 --hostname room --uid 1000 --gid 1000 --cap-drop ALL --clearenv
 --setenv HOME /home/agent --setenv LANG en_US.UTF-8
 --setenv PATH /opt/conda/bin:/usr/bin:/bin:/.tare/runtime/bin --setenv TASK t1 --setenv TERM dumb --setenv TMPDIR /tmp --setenv USER agent
 --ro-bind /var/cache/tare/envs/abc/rootfs /
 --ro-bind-data 3 /etc/passwd --ro-bind-data 4 /etc/group --ro-bind-data 5 /etc/hosts
 --proc /proc --dev /dev --ro-bind /dev/null /proc/keys --ro-bind /dev/null /proc/key-users --ro-bind /dev/null /proc/1/mem --ro-bind /dev/null /proc/1/task/1/mem
 --tmpfs /dev/shm --remount-ro /dev --tmpfs /tmp
 --perms 0700 --tmpfs /home/agent
 --tmpfs /opt/tare --tmpfs /opt/agent --ro-bind /var/cache/tare/envs/runtime/node-1 /.tare/runtime
 --ro-bind /opt/agents/node_modules /opt/agent/node_modules --ro-bind /usr/local/bin/tare /opt/tare/tare --bind /srv/project /app
 --remount-ro /opt/tare --remount-ro /opt/agent
 --seccomp 6 --info-fd 7 --chdir /app --remount-ro / --
 /opt/tare/tare relay --lifeline 8 --owner ` + Owner() + ` -- claude -p hi`)
	if !slices.Equal(got, want) {
		t.Errorf("argv differs\n got: %s\nwant: %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// TestImageValidation: an image spec the room cannot keep its promises with is refused, in
// one line naming the field and the fix.
func TestImageValidation(t *testing.T) {
	root := imageRoot(t)
	cases := []struct {
		name string
		edit func(*Room)
		want string
	}{
		{"relative root", func(r *Room) { r.Image.Root = "rootfs" }, `Image.Root "rootfs" is relative`},
		{"workdir /", func(r *Room) { r.Image.WorkDir = "/" }, "Image.WorkDir \"/\" must be a clean absolute folder other than /"},
		{"workdir in tare's folders", func(r *Room) { r.Image.WorkDir = "/home/agent/w" }, "collides with the room's /home/agent"},
		{"workdir above tare's", func(r *Room) { r.Image.WorkDir = "/opt" }, "collides with the room's /opt/tare"},
		{"root not prepared", func(r *Room) { r.Image.Root = t.TempDir() }, "build the environment again"},
		{"bind to a path the image lacks", func(r *Room) { r.Binds = []Bind{{Source: "/etc", Dest: "/srv/nowhere"}} }, `Binds[0].Dest "/srv/nowhere": /srv/nowhere is missing in the image`},
		{"missing runtime", func(r *Room) { r.Image.Runtime = "/nonexistent/runtime" }, `Image.Runtime "/nonexistent/runtime"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Room{Workspace: t.TempDir(), Argv: []string{"true"}, Image: &Image{Root: root, WorkDir: "/app"}}
			c.edit(&r)
			err := r.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate() = %v, want one line with %q", err, c.want)
			}
		})
	}
	if err := (Room{Workspace: t.TempDir(), Argv: []string{"true"}, Image: &Image{Root: root, WorkDir: "/app"}}).Validate(); err != nil {
		t.Fatalf("a prepared root is refused: %v", err)
	}
	// Below the room's own folders in memory bwrap makes the mount point: the probe's
	// control binds its planted home at its host path below /tmp.
	inTmp := Room{Workspace: t.TempDir(), Argv: []string{"true"}, Image: &Image{Root: root, WorkDir: "/app"},
		Binds: []Bind{{Dest: "/srv/planted", Tmpfs: true}, {Source: t.TempDir(), Dest: "/srv/planted/home"}, {Source: t.TempDir(), Dest: "/tmp/control/home"}}}
	if err := inTmp.Validate(); err == nil || !strings.Contains(err.Error(), "/srv/planted is missing") {
		t.Fatalf("a Tmpfs bind at a path the image lacks: %v", err)
	}
	inTmp.Binds = inTmp.Binds[2:]
	if err := inTmp.Validate(); err != nil {
		t.Fatalf("a bind below /tmp is refused: %v", err)
	}
}

// TestPrepareRootRefusesSymlinks: a mount point the image has as a symlink (here /home
// pointing at a host path) is refused, never followed onto the host.
func TestPrepareRootRefusesSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "home")); err != nil {
		t.Fatal(err)
	}
	err := PrepareRoot(root, "/app")
	if err == nil || !strings.Contains(err.Error(), "/home is a symlink") {
		t.Fatalf("PrepareRoot = %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Fatalf("PrepareRoot wrote through the symlink: %v", ents)
	}
}

// TestImageRoomAtWork: an agent's image room (AtWork) starts in /work, the workspace at the
// WORKDIR being the same files, and a guarded path is read-only at both: a bind of the
// workspace at /work without the guards would give the agent the .git hooks the WORKDIR
// keeps read-only.
func TestImageRoomAtWork(t *testing.T) {
	needRooms(t)
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	r := withImage(t, Room{Workspace: ws, Guard: []string{".git/hooks"}})
	r.Image.AtWork = true
	script := `pwd; echo shared > /app/via-app; cat /work/via-app
touch /work/.git/hooks/pre-commit 2>/dev/null && echo work-hooks-writable
touch /app/.git/hooks/pre-commit 2>/dev/null && echo app-hooks-writable
touch /work/.git/other && echo git-writable`
	code, out := runScript(t, r, script)
	if code != 0 {
		t.Fatalf("room exited %d:\n%s", code, out)
	}
	if !strings.HasPrefix(out, "/work\nshared\n") || !strings.Contains(out, "git-writable") {
		t.Errorf("want the command in /work, the WORKDIR's files there, the rest of .git writable:\n%s", out)
	}
	for _, bad := range []string{"work-hooks-writable", "app-hooks-writable"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: a guarded path is writable through one of the workspace's two paths:\n%s", bad, out)
		}
	}
}
