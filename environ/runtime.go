package environ

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"tare/sandbox"
)

// NodeRuntime returns a folder of the cache holding node for rooms rooted in an image: a copy
// of the host's node at bin/node and every shared library it loads, its dynamic loader
// included, in lib/. The copy's interpreter and its DT_RPATH are set (with patchelf) to
// sandbox.RuntimeDir/lib, where the room binds lib/, so node runs on tare's libraries in an
// image whose libc is older or another one (musl), or that has none; DT_RPATH (not RUNPATH)
// so the libraries' own dependencies resolve there too, and it is not inherited: the
// programs node starts (the task's tools) load the image's libraries as they would anyway.
//
// The folder is keyed by node's path, size and time, made in a temp folder and renamed into
// place, so it is made once per node.
func (c Cache) NodeRuntime(ctx context.Context, node string) (string, error) {
	node, err := filepath.EvalSymlinks(node)
	if err != nil {
		return "", fmt.Errorf("node %s: %v; fix: install Node.js (apt-get install nodejs)", node, err)
	}
	st, err := os.Stat(node)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s %d %d", node, st.Size(), st.ModTime().UnixNano())))
	final := filepath.Join(c.Dir, "runtime", "node-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(final, "bin", "node")); err == nil {
		return final, nil
	}
	patchelf, err := c.program("patchelf")
	if missing(err) {
		return "", fmt.Errorf("patchelf is missing, and image rooms need it to bring node with its own libraries; fix: apt-get install patchelf (scripts/setup does)")
	}
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), ".make-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, d := range []string{"bin", "lib"} {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
			return "", err
		}
	}
	libs, loader, err := c.sharedLibs(ctx, node)
	if err != nil {
		return "", err
	}
	for _, l := range libs {
		real, err := filepath.EvalSymlinks(l)
		if err != nil {
			return "", err
		}
		if err := copyFile(real, filepath.Join(tmp, "lib", filepath.Base(l)), 0o755); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(tmp, "bin", "node")
	if err := copyFile(node, bin, 0o755); err != nil {
		return "", err
	}
	lib := sandbox.RuntimeDir + "/lib"
	cmd := exec.CommandContext(ctx, patchelf, "--set-interpreter", lib+"/"+filepath.Base(loader), "--force-rpath", "--set-rpath", lib, bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("patchelf %s: %v: %s", node, err, firstLine(string(out)))
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, "bin", "node")); serr == nil {
			return final, nil // made by another tare at the same time
		}
		return "", err
	}
	return final, nil
}

// sharedLibs lists the shared libraries bin loads, as ldd resolves them on the host, and its
// dynamic loader (also in the list).
func (c Cache) sharedLibs(ctx context.Context, bin string) (libs []string, loader string, err error) {
	ldd, err := c.program("ldd")
	if err != nil {
		return nil, "", err
	}
	out, err := exec.CommandContext(ctx, ldd, bin).Output()
	if err != nil {
		return nil, "", fmt.Errorf("ldd %s: %v; fix: node must be a dynamically linked ELF the host runs", bin, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			loader = f[0]
			libs = append(libs, f[0])
		}
	}
	if loader == "" {
		return nil, "", fmt.Errorf("ldd %s names no dynamic loader; fix: point tare at a dynamically linked node", bin)
	}
	return libs, loader, nil
}
