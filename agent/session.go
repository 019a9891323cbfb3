package agent

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// SessionRoot is the folder inside the room where a's session files land: the part of its
// session glob before the first wildcard, without the leading slash. A host folder bound
// there keeps the sessions after the room's tmpfs HOME is gone.
func SessionRoot(a Agent) string {
	parts := strings.Split(a.SessionGlob(), "/")
	for i, p := range parts {
		if strings.ContainsAny(p, "*?[") {
			return path.Join(parts[:i]...)
		}
	}
	return path.Dir(a.SessionGlob())
}

// FindSession returns the host path of session id's file below dir, the host folder that
// was bound at SessionRoot. Every agent here names the file by its id, or by part of it
// (Gemini CLI: sessionFileKey).
func FindSession(a Agent, dir, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%s: the stream named no session id", a.Name())
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(a.SessionGlob(), "/"+SessionRoot(a)), "/")
	matches, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("%s: session glob %s: %w", a.Name(), rel, err)
	}
	key := id
	if k, ok := a.(interface{ sessionFileKey(string) string }); ok {
		key = k.sessionFileKey(id)
	}
	for _, m := range matches {
		if strings.Contains(filepath.Base(m), key) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%s: no session file for %s below %s", a.Name(), id, dir)
}
