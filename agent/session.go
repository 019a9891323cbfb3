package agent

import (
	"fmt"
	"path/filepath"
	"strings"
)

// FindSession returns the host path of session id's file, given the host
// folder that was the room's HOME. Every agent here names the file by its id.
func FindSession(a Agent, home, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%s: no session id to look for", a.Name())
	}
	rel := strings.TrimPrefix(a.SessionGlob(), Home+"/")
	matches, err := filepath.Glob(filepath.Join(home, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("%s: session glob %s: %w", a.Name(), rel, err)
	}
	for _, m := range matches {
		if strings.Contains(filepath.Base(m), id) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%s: no session file for %s in %s (looked for %s)", a.Name(), id, home, rel)
}
