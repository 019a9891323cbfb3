package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envFolder writes an environment folder: a Dockerfile and a file for its COPY.
func envFolder(t *testing.T, dockerfile string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("notes of the task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEnvCommands: tare env build, ls and rm as an operator uses them: a build prints the
// digest with progress on stderr, a second build is the cached one, ls lists it, rm removes it
// and its image; a failed step and a missing base are each one line naming the Dockerfile
// line and the fix, with a non-zero exit and nothing left in the cache.
func TestEnvCommands(t *testing.T) {
	if err := exec.Command("podman", "image", "exists", "docker.io/library/debian:bookworm-slim").Run(); err != nil {
		t.Fatal("debian:bookworm-slim is not in podman's store: run scripts/setup, which makes it from Debian's packages")
	}
	r := newRun(t, "")
	dir := envFolder(t, "FROM debian:bookworm-slim\nWORKDIR /app\nCOPY notes.txt ./\n")
	r.tare(t, "env", "build", dir)
	if r.code != 0 {
		t.Fatalf("env build exited %d: %s", r.code, r.stderr)
	}
	digest, image, _ := strings.Cut(strings.TrimSpace(r.stdout), " ")
	if len(digest) != 64 || !strings.HasPrefix(image, "localhost/tare-env-"+digest) || !strings.Contains(r.stdout, "(WORKDIR /app)") {
		t.Fatalf("env build printed %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "env: STEP 3/3: COPY notes.txt ./") {
		t.Errorf("no progress lines on stderr: %q", r.stderr)
	}
	if r.tare(t, "env", "build", dir); r.code != 0 || !strings.Contains(r.stderr, "is cached") {
		t.Errorf("second build: exit %d, %q", r.code, r.stderr)
	}
	if r.tare(t, "env", "ls"); r.code != 0 || !strings.Contains(r.stdout, digest[:12]+"  /app") || !strings.Contains(r.stdout, dir) {
		t.Errorf("env ls: exit %d, %q", r.code, r.stdout)
	}
	if r.tare(t, "env", "rm", digest[:12]); r.code != 0 || !strings.Contains(r.stdout, "removed "+digest[:12]) {
		t.Errorf("env rm: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if err := exec.Command("podman", "image", "exists", "localhost/tare-env-"+digest).Run(); err == nil {
		t.Errorf("env rm left the image in podman's store")
		exec.Command("podman", "rmi", "localhost/tare-env-"+digest).Run()
	}
	if r.tare(t, "env", "ls"); !strings.Contains(r.stdout, "no environments") {
		t.Errorf("env ls after rm: %q", r.stdout)
	}

	for _, c := range []struct{ name, dockerfile, want string }{
		{"failed step", "FROM debian:bookworm-slim\nWORKDIR /app\nRUN test -e /nonexistent\n", "Dockerfile:3: RUN test -e /nonexistent failed"},
		{"missing base", "FROM localhost/tare-no-such-base:1\nRUN true\n", "Dockerfile:1: FROM localhost/tare-no-such-base:1 is not in podman's store"},
		{"no Dockerfile", "", "no Dockerfile in it; fix:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := envFolder(t, c.dockerfile)
			if c.dockerfile == "" {
				os.Remove(filepath.Join(dir, "Dockerfile"))
			}
			r := newRun(t, "").tare(t, "env", "build", dir)
			if r.code == 0 {
				t.Fatalf("exit 0: %q", r.stdout)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "env: ") {
					t.Errorf("stderr has more than one error line: %q", r.stderr)
				}
			}
			if !strings.Contains(last, c.want) || !strings.Contains(last, "fix") {
				t.Errorf("error line %q lacks %q and a fix", last, c.want)
			}
			if r.tare(t, "env", "ls"); !strings.Contains(r.stdout, "no environments") {
				t.Errorf("a failed build left %q", r.stdout)
			}
			if left := r.leftovers(t); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
