package environ

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Engine is the container tool tare builds environments with: podman (Debian's package, and
// the one tare is tested with), else buildah, else docker with a daemon that answers.
type Engine struct {
	Name string // "podman", "buildah" or "docker"
	Path string // its executable
	Tar  string // tar, which a buildah export streams the mounted root through
}

// FindEngine returns the first engine this host has, or one line saying what to install. An
// engine found where tare takes no program from is refused, not skipped.
func (c Cache) FindEngine(ctx context.Context) (Engine, error) {
	for _, name := range []string{"podman", "buildah", "docker"} {
		p, err := c.program(name)
		if missing(err) {
			continue
		}
		if err != nil {
			return Engine{}, err
		}
		e := Engine{Name: name, Path: p}
		if name == "buildah" {
			if e.Tar, err = c.program("tar"); err != nil {
				return Engine{}, err
			}
		}
		if name == "docker" {
			// A docker client without a daemon builds nothing: look for the server first.
			if _, err := e.output(ctx, "version", "--format", "{{.Server.Version}}"); err != nil {
				continue
			}
		}
		return e, nil
	}
	return Engine{}, errors.New("environments need a container engine and this host has none (podman, buildah, or docker with a running daemon); fix: apt-get install podman (scripts/setup does)")
}

// command is the engine run with args, in a minimal environment of the caller's PATH and
// HOME (podman keeps its store below HOME for a user other than root).
func (e Engine) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.Path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C"}
	for _, k := range []string{"XDG_RUNTIME_DIR", "TMPDIR", "CONTAINERS_STORAGE_CONF", "CONTAINERS_CONF", "DOCKER_HOST"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	return cmd
}

func (e Engine) output(ctx context.Context, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := e.command(ctx, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", e.Name, args[0], err, firstLine(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:] // engines print the reason last
	}
	if s == "" {
		return "no output"
	}
	return s
}

// hasImage reports whether the engine's local store holds ref.
func (e Engine) hasImage(ctx context.Context, ref string) bool {
	var args []string
	switch e.Name {
	case "podman":
		args = []string{"image", "exists", ref}
	case "buildah":
		args = []string{"inspect", "--type", "image", ref}
	default:
		args = []string{"image", "inspect", ref}
	}
	cmd := e.command(ctx, args...)
	return cmd.Run() == nil
}

// pull fetches ref into the local store.
func (e Engine) pull(ctx context.Context, ref string, log io.Writer) error {
	cmd := e.command(ctx, "pull", ref)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &out), io.MultiWriter(log, &out)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %s", err, firstLine(out.String()))
	}
	return nil
}

// buildArgs is the build of dir's Dockerfile into the image tag. chroot isolation: crun, the
// default runtime, fails at the first RUN on hosts with cgroups in hybrid mode, and the room
// tare runs the image in is its own sandbox anyway. --pull=never: FROM images were checked (or
// pulled) before, so the build never reaches a registry on its own.
func (e Engine) buildArgs(dir, dockerfile, tag string) []string {
	switch e.Name {
	case "podman", "buildah":
		return []string{"build", "--isolation=chroot", "--pull=never", "--layers", "-t", tag, "-f", dockerfile, dir}
	default:
		return []string{"build", "--pull=false", "-t", tag, "-f", dockerfile, dir}
	}
}

// imageConfig is what tare keeps of an image's configuration.
type imageConfig struct {
	Env        []string `json:"Env"`
	WorkingDir string   `json:"WorkingDir"`
	User       string   `json:"User"`
}

// inspect reads the image's id and configuration.
func (e Engine) inspect(ctx context.Context, ref string) (string, imageConfig, error) {
	var cfg imageConfig
	if e.Name == "buildah" {
		// buildah's --format has no json function: read its whole answer.
		out, err := e.output(ctx, "inspect", "--type", "image", ref)
		if err != nil {
			return "", cfg, err
		}
		var img struct {
			FromImageID string
			OCIv1       struct {
				Config imageConfig `json:"config"`
			}
		}
		if err := json.Unmarshal([]byte(out), &img); err != nil {
			return "", cfg, fmt.Errorf("buildah inspect %s: %v", ref, err)
		}
		return img.FromImageID, img.OCIv1.Config, nil
	}
	out, err := e.output(ctx, "image", "inspect", "--format", "{{json .Config}}", ref)
	if err != nil {
		return "", cfg, err
	}
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		return "", cfg, fmt.Errorf("%s inspect %s: %v", e.Name, ref, err)
	}
	id, err := e.output(ctx, "image", "inspect", "--format", "{{.Id}}", ref)
	return strings.TrimPrefix(id, "sha256:"), cfg, err
}

// export writes the image's root filesystem as a tar stream to w.
func (e Engine) export(ctx context.Context, ref string, w io.Writer) error {
	if e.Name == "buildah" {
		cid, err := e.output(ctx, "from", "--pull=never", ref)
		if err != nil {
			return err
		}
		defer e.command(context.WithoutCancel(ctx), "rm", cid).Run()
		mnt, err := e.output(ctx, "mount", cid)
		if err != nil {
			return err
		}
		defer e.command(context.WithoutCancel(ctx), "umount", cid).Run()
		cmd := exec.CommandContext(ctx, e.Tar, "-C", mnt, "-c", ".")
		cmd.Stdout = w
		return cmd.Run()
	}
	cid, err := e.output(ctx, "create", ref, "true")
	if err != nil {
		return err
	}
	defer e.command(context.WithoutCancel(ctx), "rm", cid).Run()
	var stderr bytes.Buffer
	cmd := e.command(ctx, "export", cid)
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s export: %v: %s", e.Name, err, firstLine(stderr.String()))
	}
	return nil
}

// removeImage drops the image from the engine's store; one already gone is no error.
func (e Engine) removeImage(ctx context.Context, ref string) error {
	if !e.hasImage(ctx, ref) {
		return nil
	}
	_, err := e.output(ctx, "rmi", ref)
	return err
}
