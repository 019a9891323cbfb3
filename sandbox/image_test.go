package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
// tested for real or not at all.
func imageRoot(t testing.TB) string {
	t.Helper()
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
