package probe

import (
	"context"
	"os"

	"tare/engine/room"
	"tare/sandbox"
)

// InspectRoom runs the probe's in-room inspection as the command of box, built for project
// with setup, and reads what it saw with the probe's detectors: the environment seen inside
// and the leaks by detector (none in a clean room). A room built for a run (a metered one)
// is read as the probe reads its own.
func InspectRoom(ctx context.Context, box sandbox.Room, setup room.Setup, project string) (env map[string]string, leaks map[string][]Leak, err error) {
	s := subject{home: os.Getenv("HOME"), project: project, env: setup.EnvNames, show: tilde, loopback: "127.0.0.1:9"}
	var view sandbox.View
	if err := inspectRoom(ctx, box, s, s.loopback, nil, &view); err != nil {
		return nil, nil, err
	}
	sight := sightOf(&view, s.loopback)
	return sight.env, detect(evidence{sight: sight}, s), nil
}
