package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRoomEtcIsTheHosts: the allow-listed /etc files a room gets as copies (bwrap --file,
// no mount) hold the host's bytes and mode, as the binds they replace did, and, like every
// file of the room's root, cannot be written.
func TestRoomEtcIsTheHosts(t *testing.T) {
	requireBwrap(t)
	var want strings.Builder
	var paths []string
	for _, p := range append(slices.Clone(etcAllow), "/etc/ld.so.cache") {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || slices.Contains(paths, p) {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		paths = append(paths, p)
		fmt.Fprintf(&want, "%o %x %s\n", st.Mode().Perm(), sha256.Sum256(data), p)
	}
	if len(paths) == 0 {
		t.Fatal("no allow-listed /etc file on this host to compare: the room would copy none")
	}
	var out, errb bytes.Buffer
	script := `for f in "$@"; do printf '%s %s %s\n' "$(stat -c %a "$f")" "$(sha256sum <"$f" | cut -d' ' -f1)" "$f"; done
for f in "$@"; do ( : >>"$f" ) 2>/dev/null && echo "writable: $f"; done; true`
	r := Room{Workspace: t.TempDir(), Tare: testBinary(t), Stdout: &out, Stderr: &errb,
		Argv: append([]string{"/bin/sh", "-c", script, "sh"}, paths...)}
	p, err := Start(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("room: exit %d, %v: %s", code, err, errb.String())
	}
	if out.String() != want.String() {
		t.Errorf("the room's /etc differs from the host's\n got:\n%s\nwant:\n%s", out.String(), want.String())
	}
}

// TestEtcCopyFollowsTheHost: each room reads the host file anew, so a changed file (a new
// ld.so.cache after an install) is what the next room holds; a folder, a missing path and an
// oversized file are left to a bind.
func TestEtcCopyFollowsTheHost(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nsswitch.conf")
	read := func() (string, fs.FileMode) {
		t.Helper()
		f, mode, err := etcCopy(p, dir)
		if err != nil || f == nil {
			t.Fatalf("etcCopy(%s): %v, %v", p, f, err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), mode
	}
	os.WriteFile(p, []byte("one\n"), 0o644)
	if got, mode := read(); got != "one\n" || mode != 0o644 {
		t.Fatalf("first copy %q %o, want \"one\\n\" 644", got, mode)
	}
	os.WriteFile(p, []byte("two, longer\n"), 0o644)
	os.Chmod(p, 0o640)
	if got, mode := read(); got != "two, longer\n" || mode != 0o640 {
		t.Fatalf("copy after the host's change %q %o, want the new file, 640", got, mode)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, etcMax+1), 0o644)
	for _, q := range []string{dir, filepath.Join(dir, "missing"), big} {
		if f, _, err := etcCopy(q, dir); f != nil || err != nil {
			t.Errorf("etcCopy(%s) = %v, %v: want it left to a bind", q, f, err)
		}
	}
}
