package environ

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Digest is the key of an environment folder: a sha256 over every entry of the build context
// (its slash-separated path, its type, its permission bits, and a regular file's content or a
// symlink's target), in path order. Owners and times are left out, so a fresh checkout of the
// same task has the same digest on every machine.
//
// A .dockerignore is refused: the engine would leave out files the digest counts (or, read
// by tare, tare would have to match the engine's own reading of its patterns), so the same
// digest could name two images. Special files (sockets, devices, pipes) are refused too: no
// engine copies them into an image.
func Digest(dir string) (string, error) {
	type entry struct {
		rel  string
		line string
	}
	var entries []entry
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ".dockerignore" {
			return fmt.Errorf("%s: a .dockerignore is not supported: tare keys an environment by every file of its build context; fix: delete it and move the files it ignores out of the folder", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		var body string
		switch {
		case mode.IsDir():
			body = "dir"
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := linkInside(real, dir, p, target); err != nil {
				return err
			}
			body = "link " + strconv.Quote(target)
		case mode.IsRegular():
			sum, err := fileSum(p)
			if err != nil {
				return err
			}
			body = "file " + sum
		default:
			return fmt.Errorf("%s: a %v is no file a build context can hold; fix: remove it from the folder", p, mode.Type())
		}
		entries = append(entries, entry{rel, fmt.Sprintf("%q %04o %s\n", rel, mode.Perm(), body)})
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	for _, e := range entries {
		io.WriteString(h, e.line)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// linkInside refuses a symlink of the build context that leads out of it. COPY resolves such a
// link inside the context, but a RUN --mount=type=bind,source=LINK follows it on the host, so
// a task could bind the operator's home (its keys, its tokens) into the build. A link is
// followed as the kernel would (through other links) when it resolves, and read as written
// when it dangles; real is the context folder with its own links resolved.
func linkInside(real, dir, p, target string) error {
	to, err := filepath.EvalSymlinks(p)
	if err != nil {
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil {
			return rerr
		}
		to = filepath.Join(real, filepath.Dir(rel), target)
		if filepath.IsAbs(target) {
			to = target
		}
	}
	if to != real && !strings.HasPrefix(to, real+string(filepath.Separator)) {
		return fmt.Errorf("%s: a symlink to %s, outside the build context; fix: copy what it points at into the folder, or make it a link inside the folder", p, target)
	}
	return nil
}
