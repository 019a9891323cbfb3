package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is a bubblewrap version.
type Version struct{ Major, Minor, Patch int }

// MinVersion is the oldest bubblewrap tare runs rooms with. Older features
// are dropped from the argv (and named in BwrapInfo.Warnings) down to it.
var MinVersion = Version{0, 4, 0}

// Versions at which a room gains a defence.
var (
	versionPerms         = Version{0, 5, 0}  // --perms for --file/--dir
	versionTmpfsPerms    = Version{0, 6, 0}  // --perms for --tmpfs
	versionDisableUserns = Version{0, 8, 0}  // --disable-userns
	versionSymlinkFix    = Version{0, 12, 0} // symlink redirect fix reported in public write-ups (SANDBOX.md)
)

// String gives "0.8.0".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// IsZero reports whether v is unknown.
func (v Version) IsZero() bool { return v == Version{} }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// ParseVersion reads the output of `bwrap --version` ("bubblewrap 0.8.0").
func ParseVersion(out string) (Version, error) {
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "bubblewrap" {
		return Version{}, fmt.Errorf("not a bubblewrap version line: %q", strings.TrimSpace(out))
	}
	s := strings.TrimPrefix(f[1], "v")
	parts := strings.SplitN(s, ".", 3)
	var n [3]int
	for i, p := range parts {
		// Keep only the leading digits: "0.8.0-rc1" reads as 0.8.0.
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		v, err := strconv.Atoi(p[:end])
		if err != nil {
			return Version{}, fmt.Errorf("not a bubblewrap version: %q", f[1])
		}
		n[i] = v
	}
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("not a bubblewrap version: %q", f[1])
	}
	return Version{n[0], n[1], n[2]}, nil
}

// BwrapInfo is what `tare doctor` and the probe show about bubblewrap.
type BwrapInfo struct {
	Path     string
	Version  Version
	Warnings []string // defences this version lacks, each with what to do
}

// bwrapFallback is where bwrap is looked for when it is not in PATH.
// Tests point it elsewhere to simulate a machine without bubblewrap.
var bwrapFallback = "/usr/bin/bwrap"

const installFix = "install bubblewrap (apt-get install bubblewrap)"

// FindBwrap returns the bwrap to run: explicit when set, else the system's
// (/usr/bin/bwrap), else the first in PATH outside the working folder.
func FindBwrap(explicit string) (string, error) {
	if explicit != "" {
		st, err := os.Stat(explicit)
		if err != nil {
			return "", fmt.Errorf("bwrap %s: %v: %s or fix the configured path", explicit, unwrapPath(err), installFix)
		}
		if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("bwrap %s is not an executable file: %s or fix the configured path", explicit, installFix)
		}
		return explicit, nil
	}
	// The system's bwrap first: bwrap is the room itself, so one planted in a folder of a
	// project that is on PATH would be the sandbox.
	usable := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0
	}
	if usable(bwrapFallback) {
		return bwrapFallback, nil
	}
	for _, dir := range SafePATH(os.Getenv("PATH")) {
		if p := filepath.Join(dir, "bwrap"); usable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("bwrap not found at %s nor in PATH (outside the working folder): %s", bwrapFallback, installFix)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

type versionKey struct {
	path  string
	size  int64
	mtime time.Time
}

// versionCache spares Start an exec per room: keyed by path, size and mtime
// so an upgraded bwrap is read again.
var versionCache sync.Map // versionKey -> Version

// BwrapVersion finds bwrap (see FindBwrap) and reads its version. It fails,
// naming the fix, when bwrap is missing, unreadable or older than MinVersion.
func BwrapVersion(ctx context.Context, bwrap string) (BwrapInfo, error) {
	p, err := FindBwrap(bwrap)
	if err != nil {
		return BwrapInfo{}, err
	}
	info := BwrapInfo{Path: p}
	st, err := os.Stat(p)
	if err != nil {
		return info, fmt.Errorf("bwrap %s: %v: %s", p, unwrapPath(err), installFix)
	}
	key := versionKey{p, st.Size(), st.ModTime()}
	if v, ok := versionCache.Load(key); ok {
		info.Version = v.(Version)
	} else {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, p, "--version")
		cmd.Env = minimalEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			return info, fmt.Errorf("bwrap %s --version failed (%v: %s): reinstall bubblewrap (apt-get install --reinstall bubblewrap)", p, err, firstLine(out))
		}
		v, err := ParseVersion(string(out))
		if err != nil {
			return info, fmt.Errorf("bwrap %s --version: %v: reinstall bubblewrap (apt-get install --reinstall bubblewrap)", p, err)
		}
		versionCache.Store(key, v)
		info.Version = v
	}
	v := info.Version
	if v.Less(MinVersion) {
		return info, fmt.Errorf("bwrap %s is version %s, tare needs %s or newer: upgrade bubblewrap (apt-get install bubblewrap from a current release)", p, v, MinVersion)
	}
	if v.Less(versionPerms) {
		info.Warnings = append(info.Warnings, fmt.Sprintf("bwrap %s cannot set --perms: HOME files get bwrap's default modes; upgrade to %s or newer", v, versionPerms))
	} else if v.Less(versionTmpfsPerms) {
		info.Warnings = append(info.Warnings, fmt.Sprintf("bwrap %s cannot set --perms on a tmpfs: HOME is 0755 instead of 0700; upgrade to %s or newer", v, versionTmpfsPerms))
	}
	if v.Less(versionDisableUserns) {
		info.Warnings = append(info.Warnings, fmt.Sprintf("bwrap %s lacks --disable-userns: the agent can create nested user namespaces; upgrade to %s or newer", v, versionDisableUserns))
	}
	if v.Less(versionSymlinkFix) {
		info.Warnings = append(info.Warnings, fmt.Sprintf("bwrap %s predates the symlink fix reported for %s: tare never binds system paths from a workspace an agent wrote; upgrade when your distribution ships it", v, versionSymlinkFix))
	}
	return info, nil
}

// CheckBwrap finds bwrap, reads its version and starts a minimal room
// running `true` with the same flags every room uses. Any failure is one
// line naming what failed and the fix.
func CheckBwrap(ctx context.Context, bwrap string) (BwrapInfo, error) {
	info, err := BwrapVersion(ctx, bwrap)
	if err != nil {
		return info, err
	}
	ws, err := os.MkdirTemp("", "tare-check-")
	if err != nil {
		return info, fmt.Errorf("bwrap check: temp folder: %v: set TMPDIR to a writable folder", err)
	}
	defer os.RemoveAll(ws)
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := Start(ctx, Room{Workspace: ws, Argv: []string{"true"}, Bwrap: info.Path, Stderr: &stderr, Stdout: &stderr})
	if err != nil {
		return info, err
	}
	code, err := p.Wait()
	if err != nil {
		return info, fmt.Errorf("bwrap %s: the minimal room did not finish: %v: see `bwrap --version` and dmesg", info.Path, err)
	}
	if code != 0 {
		return info, bwrapFailure(info.Path, code, stderr.String())
	}
	return info, nil
}

// bwrapFailure turns what bwrap printed when a room failed into one line
// with the fix.
func bwrapFailure(path string, code int, stderr string) error {
	msg := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "bwrap: ") {
			msg = strings.TrimPrefix(l, "bwrap: ")
		}
	}
	if msg == "" {
		msg = firstLine([]byte(stderr))
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "seccomp"):
		return fmt.Errorf("bwrap %s: the kernel refused the room's seccomp filter (%s): tare needs a Linux kernel with seccomp filters (CONFIG_SECCOMP_FILTER)", path, msg)
	case strings.Contains(low, "namespace") || strings.Contains(low, "uid map") ||
		strings.Contains(low, "unshare") || strings.Contains(low, "operation not permitted"):
		return fmt.Errorf("bwrap %s cannot create the room's namespaces (%s): enable user namespaces "+
			"(sysctl -w user.max_user_namespaces=15000; on older Debian also kernel.unprivileged_userns_clone=1; "+
			"on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0) or run tare as root", path, msg)
	case strings.Contains(low, "unknown option") || strings.Contains(low, "unrecognized"):
		return fmt.Errorf("bwrap %s does not know a flag rooms use (%s): upgrade bubblewrap to %s or newer", path, msg, versionDisableUserns)
	}
	return fmt.Errorf("bwrap %s could not start a minimal room (exit %d: %s): run `tare doctor` and check that /usr and /proc are usable", path, code, msg)
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "no output"
	}
	return s
}
