package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Suite item 11: bwrap missing, too old, or unable to create namespaces
// gives one clear line naming the fix.

// fakeBwrap writes a script that answers --version with version (it
// tests tare's parsing, not bwrap).
func fakeBwrap(t *testing.T, version string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+version+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func oneLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", want)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
}

func TestBwrapMissingFromPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := bwrapFallback
	bwrapFallback = filepath.Join(t.TempDir(), "bwrap")
	defer func() { bwrapFallback = old }()
	_, err := FindBwrap("")
	oneLine(t, err, "bwrap not found at", "nor in PATH", "apt-get install bubblewrap")
	_, err = CheckBwrap(t.Context(), "")
	oneLine(t, err, "apt-get install bubblewrap")
	_, err = Start(t.Context(), Room{Workspace: t.TempDir(), Argv: []string{"true"}})
	oneLine(t, err, "apt-get install bubblewrap")
}

func TestBwrapMissingPath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "bwrap")
	_, err := CheckBwrap(t.Context(), p)
	oneLine(t, err, p, "no such file", "apt-get install bubblewrap")
	_, err = CheckBwrap(t.Context(), t.TempDir())
	oneLine(t, err, "not an executable", "apt-get install bubblewrap")
}

func TestBwrapTooOld(t *testing.T) {
	_, err := CheckBwrap(t.Context(), fakeBwrap(t, "bubblewrap 0.3.1"))
	oneLine(t, err, "version 0.3.1", "needs 0.4.0", "upgrade bubblewrap")
}

func TestBwrapUnreadableVersion(t *testing.T) {
	_, err := CheckBwrap(t.Context(), fakeBwrap(t, "hello"))
	oneLine(t, err, "--version", "reinstall bubblewrap")
}

func TestBwrapOldButSupported(t *testing.T) {
	info, err := BwrapVersion(t.Context(), fakeBwrap(t, "bubblewrap 0.6.2"))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(info.Warnings, "\n")
	if info.Version != (Version{0, 6, 2}) || !strings.Contains(w, "--disable-userns") || !strings.Contains(w, "0.12.0") {
		t.Errorf("0.6.2: %+v", info)
	}
}

// TestCheckBwrapReal starts the minimal room with the installed bwrap and
// reports its version for the doctor.
func TestCheckBwrapReal(t *testing.T) {
	requireBwrap(t)
	info, err := CheckBwrap(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if info.Version.Less(versionDisableUserns) {
		t.Errorf("installed bwrap %s is older than the %s the suite assumes", info.Version, versionDisableUserns)
	}
	t.Logf("bwrap %s %s; warnings: %q", info.Path, info.Version, info.Warnings)
}

// TestBwrapNamespacesUnusable runs CheckBwrap inside a room, where bwrap cannot
// create namespaces (--disable-userns): one line naming the sysctl fix.
func TestBwrapNamespacesUnusable(t *testing.T) {
	requireBwrap(t)
	var out bytes.Buffer
	code := runRoom(t, Room{Workspace: t.TempDir(), Argv: []string{TareBin, "check-bwrap"}, Stdout: &out, Stderr: &out})
	if code != 1 {
		t.Fatalf("check inside a room exited %d: %s", code, out.String())
	}
	line := strings.TrimSpace(out.String())
	oneLine(t, errString(line), "cannot create the room's namespaces", "sysctl", "user.max_user_namespaces", "run tare as root")
	t.Logf("inside a room: %s", line)
}

type errString string

func (e errString) Error() string { return string(e) }

// TestPlantedBwrapIsNeverTaken: a bwrap an agent planted in a folder of the project that sits
// on the operator's PATH (an activated .venv/bin, direnv's node_modules/.bin) is never the
// room: the system's comes first, and a PATH entry inside the working folder is skipped.
func TestPlantedBwrapIsNeverTaken(t *testing.T) {
	project := t.TempDir()
	venv := filepath.Join(project, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(venv, "bwrap")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\ntouch "+filepath.Join(project, "PWNED")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", venv+":/usr/bin:/bin")
	if p, err := FindBwrap(""); err != nil || p == planted {
		t.Fatalf("FindBwrap took %q (%v) with the system's bwrap installed", p, err)
	}
	// Without a system bwrap, one in a PATH entry inside the working folder is still refused.
	old := bwrapFallback
	bwrapFallback = filepath.Join(t.TempDir(), "bwrap")
	defer func() { bwrapFallback = old }()
	t.Chdir(project)
	t.Setenv("PATH", venv)
	if p, err := FindBwrap(""); err == nil || p == planted {
		t.Fatalf("FindBwrap took %q from a PATH entry inside the working folder", p)
	}
	if got := SafePATH("relative/bin:"+venv+":/usr/bin", "/elsewhere"); len(got) != 1 || got[0] != "/usr/bin" {
		t.Errorf("SafePATH kept %v, want only /usr/bin", got)
	}
}
