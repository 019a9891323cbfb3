package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// SafePATH is the folders of path (a PATH value) that tare may take a program from: absolute,
// and neither the working folder nor inside it, nor inside any of avoid (the projects a room
// writes). An activated .venv/bin or direnv's node_modules/.bin is a folder of the project on
// the operator's PATH: an agent in an attached run can put a bwrap, a node or a CLI there,
// and tare would run it on the host, as the operator, before any room exists.
func SafePATH(path string, avoid ...string) []string {
	if wd, err := os.Getwd(); err == nil {
		avoid = append(avoid, wd)
	}
	var roots []string
	for _, a := range avoid {
		if a == "" {
			continue
		}
		roots = append(roots, filepath.Clean(a))
		if real, err := filepath.EvalSymlinks(a); err == nil {
			roots = append(roots, real)
		}
	}
	var out []string
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		forms := []string{filepath.Clean(dir)}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			forms = append(forms, real)
		}
		if !underAny(forms, roots) {
			out = append(out, dir)
		}
	}
	return out
}

func underAny(paths, roots []string) bool {
	for _, p := range paths {
		for _, r := range roots {
			if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) || r == "/" {
				return true
			}
		}
	}
	return false
}
