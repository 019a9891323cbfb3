package engine

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"tare/agent"
)

// sessionRoot is the folder inside the room where the agent writes its session files: the
// part of its session glob before the first wildcard. A host folder bound there keeps the
// session after the room's tmpfs HOME is gone.
func sessionRoot(a agent.Agent) string {
	glob := a.SessionGlob()
	parts := strings.Split(glob, "/")
	for i, p := range parts {
		if strings.ContainsAny(p, "*?[") {
			return path.Join(parts[:i]...)
		}
	}
	return path.Dir(glob)
}

// findSession finds session id's file below host, the folder that was bound at sessionRoot.
func findSession(a agent.Agent, host, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%s: the stream named no session id", a.Name())
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(a.SessionGlob(), "/"+sessionRoot(a)), "/")
	matches, err := filepath.Glob(filepath.Join(host, filepath.FromSlash(rel)))
	if err != nil {
		return "", err
	}
	for _, m := range matches {
		if strings.Contains(filepath.Base(m), id) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%s: no session file for %s below %s", a.Name(), id, host)
}

// placeSession readies a resume of session id in the room p builds: the agent's session
// file (as its adapter lays it out) goes into p.sessions when that folder is bound, so the
// resumed session keeps growing there, or into the room's HOME otherwise.
func placeSession(p *plan, data []byte, id string) error {
	root := "/" + sessionRoot(p.agent)
	for _, f := range p.agent.PlaceSession(data, id) {
		rel, below := strings.CutPrefix(f.Path, root+"/")
		if p.sessions == "" || !below {
			p.extra = append(p.extra, f)
			continue
		}
		dst := filepath.Join(p.sessions, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, f.Data, 0o644); err != nil {
			return fmt.Errorf("placing the session of %s: %v", id, err)
		}
	}
	return nil
}
