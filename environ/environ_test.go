package environ

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

	"tare/agent"
	"tare/modelserver"
	"tare/sandbox"
)

// The base every test image builds from, made by scripts/setup from Debian's packages.
const baseImage = "docker.io/library/debian:bookworm-slim"

func TestMain(m *testing.M) {
	code := m.Run()
	if helperDir != "" {
		os.RemoveAll(helperDir)
	}
	os.Exit(code)
}

// needRooms skips t under -short: it builds images with podman and starts rooms in them.
func needRooms(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds podman images and starts rooms; skipped under -short")
	}
}

// requireBase is where a test of environments begins: it skips under -short (needRooms), and
// otherwise fails (never skips) when podman or the base image is missing: environments are
// tested with the real engine or not at all.
func requireBase(t testing.TB) {
	t.Helper()
	needRooms(t)
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("podman is missing: run scripts/setup (apt-get install podman)")
	}
	if err := exec.Command("podman", "image", "exists", baseImage).Run(); err != nil {
		t.Fatal(baseImage + " is not in podman's store: run scripts/setup, which makes it from Debian's packages")
	}
}

var (
	helperOnce sync.Once
	helperDir  string
	helperBin  string
	helperErr  string
)

// roomHelper is tare-room built static, as scripts/setup builds it: an image room runs its
// relay and lifeline from it, since the image may have no libc for a dynamic binary.
func roomHelper(t testing.TB) string {
	t.Helper()
	helperOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tare-environ-helper-")
		if err != nil {
			helperErr = err.Error()
			return
		}
		helperDir = dir
		bin := filepath.Join(dir, sandbox.HelperName)
		cmd := exec.Command("go", "build", "-o", bin, "tare/cmd/tare-room")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			helperErr = "build tare-room: " + err.Error() + "\n" + string(out)
			return
		}
		helperBin = bin
	})
	if helperErr != "" {
		t.Fatal(helperErr)
	}
	return helperBin
}

// writeContext makes an environment folder from name -> content (mode 0755 for names ending
// in ".sh" or without a dot, 0644 otherwise).
func writeContext(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if !strings.Contains(filepath.Base(name), ".") || strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// build builds dir into a fresh cache and removes the image from podman when the test ends.
func build(t testing.TB, cache Cache, dir string) (Env, string) {
	t.Helper()
	var progress bytes.Buffer
	e, err := cache.Build(context.Background(), dir, &progress)
	if err != nil {
		t.Fatalf("Build: %v\nprogress:\n%s", err, progress.String())
	}
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", e.Image).Run() })
	return e, progress.String()
}

// taskContext is a task whose check needs a tool only its image has: envtool, copied in by
// the Dockerfile (no network needed), and a file in WORKDIR /app.
var taskContext = map[string]string{
	"Dockerfile": `FROM debian:bookworm-slim
WORKDIR /app
COPY hello.txt ./
COPY envtool /usr/local/bin/envtool
ENV TASK_MODE=graded
`,
	"hello.txt": "hello from the build context\n",
	"envtool":   "#!/bin/sh\necho envtool ran\n",
}

// runRoom runs sh -c script in r (with the static helper) and returns its exit code and output.
func runRoom(t testing.TB, r sandbox.Room, argv ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	r.Argv = argv
	r.Stdout, r.Stderr = &out, &out
	r.Helper = roomHelper(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := sandbox.Start(ctx, r)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	code, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v (%s)", err, out.String())
	}
	return code, out.String()
}

// TestTaskNeedsItsImage: a task that needs a tool only its image has passes in a room rooted
// in that image, with the context's files at WORKDIR /app, the image's ENV, and a root it
// cannot write, and fails in a host-rooted room.
func TestTaskNeedsItsImage(t *testing.T) {
	requireBase(t)
	cache := Cache{Dir: t.TempDir()}
	e, _ := build(t, cache, writeContext(t, taskContext))
	if e.WorkDir != "/app" {
		t.Errorf("WorkDir %q, want /app", e.WorkDir)
	}
	if !strings.Contains(strings.Join(e.Env, " "), "TASK_MODE=graded") {
		t.Errorf("Env %v lacks the Dockerfile's TASK_MODE=graded", e.Env)
	}
	ws := t.TempDir()
	if err := e.CopyWorkDir(ws); err != nil {
		t.Fatal(err)
	}
	script := `envtool || exit 3; pwd; cat hello.txt; echo "mode=$TASK_MODE"
if touch /usr/written 2>/dev/null; then echo usr-writable; else echo usr-read-only; fi`
	code, out := runRoom(t, sandbox.Room{Workspace: ws, Image: e.Room("")}, "/bin/sh", "-c", script)
	if code != 0 {
		t.Fatalf("the task failed in its image room (exit %d):\n%s", code, out)
	}
	for _, want := range []string{"envtool ran\n", "/app\n", "hello from the build context\n", "mode=graded\n", "usr-read-only\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("image room: missing %q in:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(e.Root(), "usr", "written")); err == nil {
		t.Errorf("the room wrote into the cached image root")
	}
	code, out = runRoom(t, sandbox.Room{Workspace: ws}, "/bin/sh", "-c", script)
	if code != 3 {
		t.Fatalf("the task should fail in a host room for want of envtool (exit 3), got exit %d:\n%s", code, out)
	}
}

// TestBuildIsCached: the second build of the same folder takes the cache, without the
// engine (the image is gone from podman's store and the build still answers), and a change
// of one file's mode is another environment.
func TestBuildIsCached(t *testing.T) {
	requireBase(t)
	cache := Cache{Dir: t.TempDir()}
	dir := writeContext(t, taskContext)
	first, _ := build(t, cache, dir)
	if err := exec.Command("podman", "rmi", "-f", first.Image).Run(); err != nil {
		t.Fatal(err)
	}
	second, progress := build(t, cache, dir)
	if second.Digest != first.Digest || second.Dir != first.Dir || !strings.Contains(progress, "is cached") {
		t.Fatalf("second build was not the cached one: %+v\n%s", second, progress)
	}
	if err := os.Chmod(filepath.Join(dir, "hello.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Digest(dir)
	if err != nil || d == first.Digest {
		t.Fatalf("a mode change kept the digest (%v)", err)
	}
	list, err := cache.List()
	if err != nil || len(list) != 1 || list[0].Digest != first.Digest {
		t.Fatalf("List: %v %+v", err, list)
	}
	gone, err := cache.Remove(context.Background(), first.Short())
	if err != nil || gone.Digest != first.Digest {
		t.Fatalf("Remove: %v", err)
	}
	if list, _ := cache.List(); len(list) != 0 {
		t.Fatalf("Remove left %+v", list)
	}
}

// TestBuildFailureNamesLine: a failed RUN is one line naming the Dockerfile's line, with the
// log kept and nothing in the cache.
func TestBuildFailureNamesLine(t *testing.T) {
	requireBase(t)
	cache := Cache{Dir: t.TempDir()}
	dir := writeContext(t, map[string]string{"Dockerfile": "FROM debian:bookworm-slim\n# a comment\nRUN echo one && \\\n    false\nRUN echo never\n"})
	_, err := cache.Build(context.Background(), dir, nil)
	if err == nil {
		t.Fatal("a RUN that fails built")
	}
	msg := err.Error()
	if !strings.Contains(msg, filepath.Join(dir, "Dockerfile")+":3: RUN echo one && false failed") || strings.Contains(msg, "\n") {
		t.Fatalf("error does not name line 3 on one line: %s", msg)
	}
	t.Logf("refused: %s", msg)
	if !strings.Contains(msg, filepath.Join(cache.Dir, "logs")) {
		t.Errorf("error names no build log: %s", msg)
	}
	if list, _ := cache.List(); len(list) != 0 {
		t.Errorf("a failed build left %+v in the cache", list)
	}
}

// TestMissingBaseRefused: a FROM that is neither in the store nor pullable is refused before
// the build starts, naming the line and the fix, leaving nothing in the cache.
func TestMissingBaseRefused(t *testing.T) {
	requireBase(t)
	cache := Cache{Dir: t.TempDir()}
	dir := writeContext(t, map[string]string{"Dockerfile": "ARG BASE=localhost/tare-no-such-base:1\n\nFROM $BASE\nRUN echo built\n"})
	var progress bytes.Buffer
	_, err := cache.Build(context.Background(), dir, &progress)
	if err == nil {
		t.Fatal("a missing base built")
	}
	msg := err.Error()
	if !strings.Contains(msg, "Dockerfile:3: FROM localhost/tare-no-such-base:1 is not in podman's store") || !strings.Contains(msg, "scripts/setup") || strings.Contains(msg, "\n") {
		t.Fatalf("error: %s", msg)
	}
	t.Logf("refused: %s", msg)
	if strings.Contains(progress.String(), "STEP") {
		t.Errorf("the build started:\n%s", progress.String())
	}
	if list, _ := cache.List(); len(list) != 0 {
		t.Errorf("left %+v in the cache", list)
	}
}

// TestDockerignoreRefused: the digest would not be the image's, so the folder is refused.
func TestDockerignoreRefused(t *testing.T) {
	dir := writeContext(t, map[string]string{"Dockerfile": "FROM debian:bookworm-slim\n", ".dockerignore": "secret\n"})
	_, err := (Cache{Dir: t.TempDir()}).Build(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), ".dockerignore is not supported") {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkEnvBuild: a cold build (a context no layer cache has seen, built and exported)
// against a cached one (tare's cache answers).
func BenchmarkEnvBuild(b *testing.B) {
	requireBase(b)
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ctx := map[string]string{}
			for k, v := range taskContext {
				ctx[k] = v
			}
			ctx["hello.txt"] = time.Now().String()
			build(b, Cache{Dir: b.TempDir()}, writeContext(b, ctx))
		}
	})
	b.Run("cached", func(b *testing.B) {
		cache := Cache{Dir: b.TempDir()}
		dir := writeContext(b, taskContext)
		build(b, cache, dir)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := cache.Build(context.Background(), dir, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRoomStart: a room running /bin/true rooted in an image against one rooted in the
// host's /usr.
func BenchmarkRoomStart(b *testing.B) {
	requireBase(b)
	e, _ := build(b, Cache{Dir: b.TempDir()}, writeContext(b, taskContext))
	for _, c := range []struct {
		name  string
		image *sandbox.Image
	}{{"host", nil}, {"image", e.Room("")}} {
		b.Run(c.name, func(b *testing.B) {
			ws := b.TempDir()
			for i := 0; i < b.N; i++ {
				if code, out := runRoom(b, sandbox.Room{Workspace: ws, Image: c.image}, "/bin/true"); code != 0 {
					b.Fatalf("exit %d: %s", code, out)
				}
			}
		})
	}
}

// envStub is a static /usr/bin/env for an image with no libc: what a `#!/usr/bin/env node`
// script needs of the image, and nothing more.
const envStub = `package main

import (
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(0)
	}
	p, err := exec.LookPath(os.Args[1])
	if err != nil {
		os.Stderr.WriteString("env: " + os.Args[1] + ": not found\n")
		os.Exit(127)
	}
	err = syscall.Exec(p, os.Args[1:], os.Environ())
	os.Stderr.WriteString("env: " + err.Error() + "\n")
	os.Exit(126)
}
`

// TestAgentInImageRoom: a real agent CLI (pi, a `#!/usr/bin/env node` script) answers tare's
// model server from rooms rooted in two images: the Debian base, and one built FROM scratch
// holding no libc, no loader and no node at all, where only the node tare brings (its own
// loader and libraries at sandbox.RuntimeDir) can run it.
func TestAgentInImageRoom(t *testing.T) {
	requireBase(t)
	cache := Cache{Dir: t.TempDir()}
	runtime, err := cache.NodeRuntime(context.Background(), "/usr/bin/node")
	if err != nil {
		t.Fatal(err)
	}
	stubDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(stubDir, "main.go"), []byte(envStub), 0o644); err != nil {
		t.Fatal(err)
	}
	scratch := writeContext(t, map[string]string{
		"Dockerfile": "FROM scratch\nCOPY env /usr/bin/env\nWORKDIR /app\nCOPY task.txt ./\n",
		"task.txt":   "a task in an image without libc\n",
	})
	cmd := exec.Command("go", "build", "-o", filepath.Join(scratch, "env"), filepath.Join(stubDir, "main.go"))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the env stub: %v\n%s", err, out)
	}
	bin, err := filepath.Abs(filepath.Join("..", "agents", "pi", "node_modules", ".bin", "pi"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.ByName("pi")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := a.Find(agent.FindOptions{Bins: map[string]string{"pi": bin}, VersionLater: true})
	if err != nil {
		t.Fatalf("pi: %v (run scripts/setup, which installs the agent CLIs)", err)
	}
	srv, err := modelserver.New(modelserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	for _, c := range []struct{ name, dir string }{
		{"debian", writeContext(t, taskContext)},
		{"no libc", scratch},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := build(t, cache, c.dir)
			if c.name == "no libc" {
				for _, p := range []string{"lib64/ld-linux-x86-64.so.2", "usr/bin/node", "bin/sh"} {
					if _, err := os.Lstat(filepath.Join(e.Root(), p)); err == nil {
						t.Fatalf("the scratch image has /%s", p)
					}
				}
			}
			setup, err := a.Room(agent.RoomOptions{BaseURL: "http://127.0.0.1:4000"})
			if err != nil {
				t.Fatal(err)
			}
			ws := t.TempDir()
			if err := e.CopyWorkDir(ws); err != nil {
				t.Fatal(err)
			}
			r := sandbox.Room{Workspace: ws, Agent: inst.Runtime, Image: e.Room(runtime), Env: setup.Env, Path: setup.Path,
				Relays: []sandbox.Relay{{Port: 4000, Upstream: srv.Addr()}}}
			for _, f := range setup.Files {
				r.Files = append(r.Files, sandbox.File{Path: f.Path, Data: f.Data, Mode: f.Mode})
			}
			argv := append([]string{inst.Command}, a.RunArgs("Say hello.", nil)...)
			if c.name == "no libc" {
				// The control: without tare's runtime the image has no node to run pi with.
				bare := r
				bare.Image = e.Room("")
				if code, out := runRoom(t, bare, argv...); code != 127 || !strings.Contains(out, "node: not found") {
					t.Fatalf("without tare's runtime pi should find no node (exit 127), got exit %d:\n%s", code, out)
				}
			}
			code, out := runRoom(t, r, argv...)
			if code != 0 {
				t.Fatalf("pi exited %d in the %s image room:\n%s", code, c.name, out)
			}
			res, err := a.ParseStream(strings.NewReader(out))
			if err != nil || res.IsError || res.Text == "" {
				t.Fatalf("pi's run: %v %s, text %q\n%s", err, res.Error, res.Text, out)
			}
			t.Logf("%s image: pi answered %q", c.name, clip(res.Text, 60))
		})
	}
}

// TestNoEngineSaysWhatToInstall: a host with none of the engines gets one line naming them
// and the fix, before anything is built.
func TestNoEngineSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dir := writeContext(t, map[string]string{"Dockerfile": "FROM debian:bookworm-slim\n"})
	_, err := (Cache{Dir: t.TempDir()}).Build(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), "podman, buildah, or docker with a running daemon") || !strings.Contains(err.Error(), "apt-get install podman") {
		t.Fatalf("err = %v", err)
	}
}

// TestPlantedEngineIsRefused: a podman in a folder an agent writes (here the state folder,
// where tails' workspaces live), first on PATH, is refused in one line naming the entry and
// the fix, and never runs: a build runs as the operator, outside any room.
func TestPlantedEngineIsRefused(t *testing.T) {
	state := t.TempDir()
	planted := filepath.Join(state, "calibrate", "run", "tails", "a-1", "work", ".venv", "bin")
	if err := os.MkdirAll(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(planted, "podman"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", planted+":/usr/bin:/bin")
	dir := writeContext(t, map[string]string{"Dockerfile": "FROM debian:bookworm-slim\n"})
	_, err := Open(state).Build(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), planted) || !strings.Contains(err.Error(), "fix:") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a planted podman: err = %v, want one line naming %s and the fix", err, planted)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the planted podman ran")
	}
}
