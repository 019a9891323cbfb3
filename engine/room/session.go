package room

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tare/agent"
	"tare/capsule"
	"tare/engine/journal"
)

// PlaceSession readies a resume of session id in the room p builds: the agent's session
// file (as its adapter lays it out) goes into p.Sessions when that folder is bound, so the
// resumed session keeps growing there, or into the room's HOME otherwise.
func PlaceSession(p *Plan, data []byte, id string) error {
	root := "/" + agent.SessionRoot(p.Agent)
	for _, f := range p.Agent.PlaceSession(data, id) {
		rel, below := strings.CutPrefix(f.Path, root+"/")
		if p.Sessions == "" || !below {
			p.Extra = append(p.Extra, f)
			continue
		}
		dst := filepath.Join(p.Sessions, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		// The sessions folder is the tail's, in its run folder, and a room writes in it.
		out, err := journal.OpenNoFollow(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err == nil {
			_, err = out.Write(f.Data)
			err = errors.Join(err, out.Close())
		}
		if err != nil {
			return fmt.Errorf("placing the session of %s: %v", id, err)
		}
	}
	return nil
}

// maxSession is the largest session file tare reads back from a room.
const maxSession = 256 << 20

// ReadSession reads the session file of id that agent a wrote in a room, below sessions (the
// host folder bound at its session root), without following any symlink the room may have
// planted there.
func ReadSession(a agent.Agent, sessions, id string) ([]byte, error) {
	path, err := agent.FindSession(a, sessions, id)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(sessions, path)
	if err != nil {
		return nil, err
	}
	return capsule.ReadFileBeneath(sessions, filepath.ToSlash(rel), maxSession)
}
