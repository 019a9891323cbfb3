package environ

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// CheckFolder checks, without building anything, that dir is an environment folder a run can
// use: a folder holding a Dockerfile tare can read, whose build context digests (no
// .dockerignore, no special file, no link out of it). The error is one line naming the file
// and the fix; it returns the folder's absolute path and its digest.
func CheckFolder(dir string) (abs, digest string, err error) {
	if abs, err = filepath.Abs(dir); err != nil {
		return "", "", fmt.Errorf("--env %s: %v", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", "", fmt.Errorf("--env %s: not a folder; fix: give the environment folder that holds the Dockerfile (a task's environment/)", dir)
	}
	dockerfile := filepath.Join(abs, "Dockerfile")
	if _, err := os.Stat(dockerfile); err != nil {
		return "", "", fmt.Errorf("--env %s: no Dockerfile in it; fix: give the environment folder (a task's environment/, holding Dockerfile)", dir)
	}
	if _, err := parseDockerfile(dockerfile); err != nil {
		return "", "", err
	}
	if digest, err = Digest(abs); err != nil {
		return "", "", fmt.Errorf("--env %s: %v", dir, err)
	}
	return abs, digest, nil
}

// AgentRuntime is NodeRuntime for the host's node, found as every host program is
// (programs.node, else a trusted PATH): "" with no error when the host has no node, as for
// an agent CLI that is a native binary.
func (c Cache) AgentRuntime(ctx context.Context) (string, error) {
	node, err := c.program("node")
	if missing(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return c.NodeRuntime(ctx, node)
}
