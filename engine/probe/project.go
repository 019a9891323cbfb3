package probe

import (
	"fmt"
	"os"
	"path/filepath"
)

// ProjectDir resolves --project to an absolute folder, refusing a path that is not a folder
// and (unless allowDirty) one CheckProject refuses: before anything is created or started.
func ProjectDir(p string, allowDirty bool) (string, error) {
	if p == "" {
		p = "."
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--project %s: %v", p, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--project %s: no such folder; fix: give the folder the agent should work in", p)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("--project %s: not a folder; fix: give the folder the agent should work in", p)
	}
	if !allowDirty {
		home, _ := os.UserHomeDir()
		if err := CheckProject(abs, home); err != nil {
			return "", err
		}
	}
	return abs, nil
}
