// Package environ builds a task's environment folder (a Dockerfile and its build context, as
// Harbor and Terminal-Bench tasks bring it in environment/) into an image with a container
// engine, and keeps the image's root filesystem in tare's cache, keyed by the digest of the
// build context, so that rooms can be rooted in it (sandbox.Image).
//
// The cache holds one folder per digest: rootfs/ (the image's files, owned by the caller,
// with no set-uid or set-gid bit), env.json (the image's WORKDIR, ENV, USER and id) and the
// build's log. Each is made in a temp folder and renamed into place, so a folder that exists
// is whole.
package environ

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tare/sandbox"
)

// Env is one built environment, as env.json records it.
type Env struct {
	Digest  string    `json:"digest"`   // Digest of the build context
	Image   string    `json:"image"`    // the engine's image name, localhost/tare-env-<digest>
	ImageID string    `json:"image_id"` // the engine's id of that image
	Engine  string    `json:"engine"`   // the engine that built it
	Source  string    `json:"source"`   // the folder it was built from
	WorkDir string    `json:"workdir"`  // the image's WORKDIR ("/" when it sets none)
	Env     []string  `json:"env"`      // the image's ENV, KEY=VALUE
	User    string    `json:"user"`     // the image's USER ("" when it sets none)
	Built   time.Time `json:"built"`

	// Dir is the cache folder of this environment (not stored: it is where env.json was read).
	Dir string `json:"-"`
}

// Root is the host folder holding the image's root filesystem.
func (e Env) Root() string { return filepath.Join(e.Dir, "rootfs") }

// Short is the digest's first 12 characters, as tare env ls prints it.
func (e Env) Short() string { return e.Digest[:12] }

// Cache is tare's cache of built environments, a folder below the state folder.
type Cache struct {
	Dir string
	// Programs is the config's [programs] table: where the host programs an environment
	// needs (podman, buildah, docker, tar, patchelf, ldd) are, when not on a trusted PATH.
	Programs map[string]string
}

// Open returns the cache below stateDir (<stateDir>/envs).
func Open(stateDir string) Cache { return Cache{Dir: filepath.Join(stateDir, "envs")} }

const (
	metaName = "env.json"
	logName  = "build.log"
)

// ImageName is the engine's name for the environment of a digest.
func ImageName(digest string) string { return "localhost/tare-env-" + digest }

// Build builds dir (a folder holding a Dockerfile) unless the cache already holds its digest,
// and returns the environment. Progress lines (the build's steps) go to progress. A failed
// build is one line naming the Dockerfile line and the fix; its log is kept in the cache's
// logs folder, named in the error. Nothing of a failed build is left in the cache but that log.
func (c Cache) Build(ctx context.Context, dir string, progress io.Writer) (Env, error) {
	if progress == nil {
		progress = io.Discard
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Env{}, err
	}
	dockerfile := filepath.Join(abs, "Dockerfile")
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return Env{}, fmt.Errorf("%s: not a folder; fix: give the environment folder that holds the Dockerfile", dir)
	}
	if _, err := os.Stat(dockerfile); err != nil {
		return Env{}, fmt.Errorf("%s: no Dockerfile in it; fix: give the environment folder (a task's environment/, holding Dockerfile)", dir)
	}
	stages, err := parseDockerfile(dockerfile)
	if err != nil {
		return Env{}, err
	}
	digest, err := Digest(abs)
	if err != nil {
		return Env{}, err
	}
	if e, err := c.Lookup(digest); err == nil {
		fmt.Fprintf(progress, "env: %s is cached (%s)\n", e.Short(), e.Dir)
		return e, nil
	}
	eng, err := c.FindEngine(ctx)
	if err != nil {
		return Env{}, err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o700); err != nil {
		return Env{}, fmt.Errorf("environment cache %s: %v; fix: make the state folder writable", c.Dir, err)
	}
	// The cache holds images' files with their modes: other users of the host have no business there.
	if err := os.Chmod(c.Dir, 0o700); err != nil {
		return Env{}, err
	}
	logPath := filepath.Join(c.Dir, "logs", digest[:12]+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return Env{}, err
	}
	defer log.Close()

	// Every FROM must be in the engine's store or pullable before the build starts: a build
	// that reaches a missing base fails after minutes of earlier stages, or with a registry
	// error that names no line.
	for _, st := range bases(stages) {
		if eng.hasImage(ctx, st.Image) {
			continue
		}
		fmt.Fprintf(progress, "env: pulling %s (Dockerfile:%d)\n", st.Image, st.From.Line)
		if err := eng.pull(ctx, st.Image, log); err != nil {
			return Env{}, fmt.Errorf("%s:%d: FROM %s is not in %s's store and cannot be pulled (%v); fix: scripts/setup makes debian:bookworm-slim from Debian's packages, or %s pull/import the image first",
				dockerfile, st.From.Line, st.Image, eng.Name, err, eng.Name)
		}
	}

	image := ImageName(digest)
	fmt.Fprintf(progress, "env: building %s with %s (log: %s)\n", digest[:12], eng.Name, logPath)
	if err := c.runBuild(ctx, eng, abs, dockerfile, image, stages, log, logPath, progress); err != nil {
		return Env{}, err
	}
	id, cfg, err := eng.inspect(ctx, image)
	if err != nil {
		return Env{}, err
	}
	e := Env{Digest: digest, Image: image, ImageID: id, Engine: eng.Name, Source: abs, WorkDir: cfg.WorkingDir,
		Env: cfg.Env, User: cfg.User, Built: time.Now().UTC()}
	if e.WorkDir == "" {
		e.WorkDir = "/"
	}
	fmt.Fprintf(progress, "env: exporting the root filesystem of %s\n", digest[:12])
	return c.export(ctx, eng, e, logPath)
}

// runBuild runs the engine's build, its output into the log and its step lines to progress,
// and turns a failure into the Dockerfile line of the step that failed.
func (c Cache) runBuild(ctx context.Context, eng Engine, dir, dockerfile, image string, stages []stage, log io.Writer, logPath string, progress io.Writer) error {
	cmd := eng.command(ctx, eng.buildArgs(dir, dockerfile, image)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s build: %v; fix: reinstall %s", eng.Name, err, eng.Name)
	}
	waitErr := make(chan error, 1)
	go func() {
		waitErr <- cmd.Wait()
		pw.Close()
	}()
	var last instruction
	var lastErr string
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if m := stepRE.FindStringSubmatch(line); m != nil {
			stageNo, step := 1, 0
			if m[1] != "" {
				fmt.Sscan(m[1], &stageNo)
			}
			fmt.Sscan(m[2], &step)
			if in, ok := stepLine(stages, stageNo, step); ok {
				last = in
			}
			fmt.Fprintf(progress, "env: %s\n", line)
		}
		if strings.HasPrefix(line, "Error: ") || strings.HasPrefix(line, "error ") || strings.HasPrefix(line, "ERROR") {
			lastErr = line
		}
	}
	io.Copy(io.Discard, pr)
	if err := <-waitErr; err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s build of %s stopped: %v", eng.Name, dockerfile, ctx.Err())
		}
		return buildFailure(dockerfile, last, lastErr, err, logPath)
	}
	return nil
}

// buildFailure is one line naming the failed step's line and what to do about it.
func buildFailure(dockerfile string, step instruction, msg string, err error, logPath string) error {
	msg = strings.TrimPrefix(msg, "Error: ")
	if msg == "" {
		msg = err.Error()
	}
	if step.Line == 0 {
		return fmt.Errorf("%s: the build failed (%s); fix: see the build log %s", dockerfile, msg, logPath)
	}
	fix := "fix that line"
	low := strings.ToLower(msg)
	switch {
	case step.Cmd == "COPY" || step.Cmd == "ADD":
		if strings.Contains(low, "no such file") || strings.Contains(low, "no items matching") || strings.Contains(low, "not found") {
			fix = "put the file in the environment folder (the build context) or fix its name"
		}
	case step.Cmd == "RUN":
		fix = "fix the command on that line (the log has its output)"
	}
	return fmt.Errorf("%s:%d: %s %s failed (%s); %s; the build log is %s", dockerfile, step.Line, step.Cmd, clip(step.Args, 60), msg, fix, logPath)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// export unpacks the image's root filesystem into a temp folder of the cache, prepares it as
// a room's root, writes env.json and renames the folder into place.
func (c Cache) export(ctx context.Context, eng Engine, e Env, logPath string) (Env, error) {
	tmp, err := os.MkdirTemp(c.Dir, ".build-"+e.Digest[:12]+"-")
	if err != nil {
		return Env{}, err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	root := filepath.Join(tmp, "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		return Env{}, err
	}
	// --no-same-owner: the files become the caller's, which is the uid the room's user maps
	// to, so the image's files are readable in the room whatever user the image gave them.
	// Device nodes are left out: the room has its own /dev.
	tar, err := c.program("tar")
	if err != nil {
		return Env{}, err
	}
	untar := exec.CommandContext(ctx, tar, "-x", "-p", "--no-same-owner", "--exclude=dev/*", "-C", root)
	pipe, err := untar.StdinPipe()
	if err != nil {
		return Env{}, err
	}
	var untarErr strings.Builder
	untar.Stderr = &untarErr
	if err := untar.Start(); err != nil {
		return Env{}, fmt.Errorf("tar: %v; fix: install tar", err)
	}
	expErr := eng.export(ctx, e.Image, pipe)
	pipe.Close()
	if err := untar.Wait(); err != nil {
		return Env{}, fmt.Errorf("unpack the root filesystem of %s: %v: %s", e.Image, err, firstLine(untarErr.String()))
	}
	if expErr != nil {
		return Env{}, expErr
	}
	if err := stripSetID(root); err != nil {
		return Env{}, err
	}
	if err := sandbox.PrepareRoot(root, e.roomWorkDir()); err != nil {
		return Env{}, fmt.Errorf("%s: %v", e.Source, err)
	}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return Env{}, err
	}
	if err := writeFileSync(filepath.Join(tmp, metaName), append(data, '\n')); err != nil {
		return Env{}, err
	}
	if b, err := os.ReadFile(logPath); err == nil {
		_ = os.WriteFile(filepath.Join(tmp, logName), b, 0o600)
	}
	final := filepath.Join(c.Dir, e.Digest)
	if err := os.Rename(tmp, final); err != nil {
		// Another build of the same digest got there first: its folder is whole, take it.
		if other, lerr := c.Lookup(e.Digest); lerr == nil {
			return other, nil
		}
		return Env{}, fmt.Errorf("environment cache: %v", err)
	}
	done = true
	syncDir(c.Dir)
	e.Dir = final
	return e, nil
}

// stripSetID clears set-uid and set-gid bits below root: the cache is on the host, where an
// image's set-uid-root program would be one any local user could run.
func stripSetID(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			return os.Chmod(p, info.Mode().Perm()|(info.Mode()&fs.ModeSticky))
		}
		return nil
	})
}

func writeFileSync(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// List returns the cached environments, newest first.
func (c Cache) List() ([]Env, error) {
	ents, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Env
	for _, d := range ents {
		if !d.IsDir() || !isDigest(d.Name()) {
			continue
		}
		e, err := c.read(filepath.Join(c.Dir, d.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Built.After(out[j].Built) })
	return out, nil
}

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

func (c Cache) read(dir string) (Env, error) {
	p := filepath.Join(dir, metaName)
	data, err := os.ReadFile(p)
	if err != nil {
		return Env{}, err
	}
	var e Env
	if err := json.Unmarshal(data, &e); err != nil {
		return Env{}, fmt.Errorf("%s: %v; fix: remove the folder %s and build the environment again", p, err, dir)
	}
	if e.Digest != filepath.Base(dir) {
		return Env{}, fmt.Errorf("%s: field digest %q is not its folder's name; fix: remove the folder %s and build the environment again", p, e.Digest, dir)
	}
	e.Dir = dir
	return e, nil
}

// Lookup finds a cached environment by its digest, a unique prefix of it (6 characters at
// least) or its image name.
func (c Cache) Lookup(key string) (Env, error) {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "localhost/"), "tare-env-")
	if len(key) < 6 {
		return Env{}, fmt.Errorf("environment %q: give at least 6 characters of its digest (tare env ls lists them)", key)
	}
	all, err := c.List()
	if err != nil {
		return Env{}, err
	}
	var hits []Env
	for _, e := range all {
		if strings.HasPrefix(e.Digest, key) {
			hits = append(hits, e)
		}
	}
	switch len(hits) {
	case 0:
		return Env{}, fmt.Errorf("environment %q: not in the cache %s; fix: tare env ls lists what is, tare env build DIR builds one", key, c.Dir)
	case 1:
		return hits[0], nil
	}
	return Env{}, fmt.Errorf("environment %q: %d cached environments start so; fix: give more of the digest", key, len(hits))
}

// Remove drops a cached environment (see Lookup for key) and its image from the engine's
// store. The folder is renamed away first, so the cache never holds half of one.
func (c Cache) Remove(ctx context.Context, key string) (Env, error) {
	e, err := c.Lookup(key)
	if err != nil {
		return Env{}, err
	}
	trash, err := os.MkdirTemp(c.Dir, ".rm-")
	if err != nil {
		return Env{}, err
	}
	if err := os.Rename(e.Dir, filepath.Join(trash, e.Digest)); err != nil {
		os.Remove(trash)
		return Env{}, fmt.Errorf("remove environment %s: %v", e.Short(), err)
	}
	syncDir(c.Dir)
	if err := os.RemoveAll(trash); err != nil {
		return Env{}, fmt.Errorf("remove environment %s: %v", e.Short(), err)
	}
	os.Remove(filepath.Join(c.Dir, "logs", e.Short()+".log"))
	if eng, err := c.FindEngine(ctx); err == nil && eng.Name == e.Engine {
		if err := eng.removeImage(ctx, e.Image); err != nil {
			return e, fmt.Errorf("environment %s left the cache, but %s keeps its image %s (%v); fix: %s rmi %s", e.Short(), eng.Name, e.Image, err, eng.Name, e.Image)
		}
	}
	return e, nil
}
