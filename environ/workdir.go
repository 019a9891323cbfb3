package environ

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"tare/sandbox"
)

// CopyWorkDir copies the image's WORKDIR contents (what its COPY and RUN steps left there)
// into dst, a new or empty folder that becomes the run's workspace and so its start capsule:
// the room binds it read-write at the WORKDIR, over the image's read-only copy. Folders,
// regular files (with their permission bits, set-id bits dropped) and symlinks (as links,
// never followed) are copied; anything else is refused.
func (e Env) CopyWorkDir(dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if ents, err := os.ReadDir(dst); err != nil {
		return err
	} else if len(ents) > 0 {
		return fmt.Errorf("%s: not empty; fix: give a new folder for the workspace of environment %s", dst, e.Short())
	}
	if e.roomWorkDir() == "" {
		return nil // no WORKDIR: the workspace starts empty, at the room's usual place
	}
	src := filepath.Join(e.Root(), filepath.FromSlash(e.WorkDir))
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			return os.Mkdir(to, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case mode.IsRegular():
			return copyFile(p, to, mode.Perm())
		default:
			return fmt.Errorf("%s: a %v in the image's WORKDIR %s cannot be part of a workspace; fix: leave it out of the Dockerfile's WORKDIR", strings.TrimPrefix(p, e.Root()), mode.Type(), e.WorkDir)
		}
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Room is the sandbox option rooting a room in this environment; runtime is tare's agent
// runtime folder (NodeRuntime) or "".
func (e Env) Room(runtime string) *sandbox.Image {
	env := map[string]string{}
	for _, kv := range e.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return &sandbox.Image{Root: e.Root(), WorkDir: e.roomWorkDir(), Env: env, Runtime: runtime, Digest: e.Digest, User: e.User}
}

// roomWorkDir is the room's Image.WorkDir: the image's WORKDIR, or "" (the room's usual
// place) for an image that sets none.
func (e Env) roomWorkDir() string {
	if e.WorkDir == "/" {
		return ""
	}
	return e.WorkDir
}
