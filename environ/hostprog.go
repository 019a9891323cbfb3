package environ

import (
	"errors"
	"path/filepath"

	"tare/sandbox"
)

// program finds a program tare runs on the host for an environment (the container engine,
// tar, patchelf, ldd) the one way tare finds every host program: the config's programs.NAME
// when set, else PATH through sandbox.LookHost, which refuses a PATH entry an agent can
// write (a project, the working folder, a virtualenv, the state folder where workspaces
// live). An image build runs as the operator, so a podman planted in such a folder would run
// unconfined.
func (c Cache) program(name string) (string, error) {
	return sandbox.LookHost(sandbox.HostProgram{
		Name:  name,
		Path:  c.Programs[name],
		Key:   `programs.` + name + ` = "/usr/bin/` + name + `"`,
		Avoid: []string{filepath.Dir(c.Dir)},
	})
}

// missing reports whether err says no place holds the program (as opposed to one tare
// refuses to run).
func missing(err error) bool { return errors.Is(err, sandbox.ErrNoProgram) }
