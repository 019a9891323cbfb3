package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What the room can learn of the host through its own /proc: tare's output through the
// descriptors it was given, host paths through bwrap's command line, and the memory of the
// processes that are not the agent's (red-team F8, F9, F13). Each check returns what it found
// wrong; the mutation tests show each one fails without its defence.

// checkOwnOutput runs a room whose stdout and stderr are a file tare already wrote a secret
// line to (the probe's reading, say: "kept out" lines quote personal files), and whose stdin
// is a prompt file, as `tare claude -p go <prompt >log 2>&1` gives them. The room tries to
// read the secret by reopening its own descriptors and bwrap's (pid 1) from offset 0, and to
// write into the prompt file through its stdin. A control reads the secret from a workspace
// file the same way, so a blind reader cannot pass.
func checkOwnOutput(t *testing.T, fileStdio bool) []string {
	t.Helper()
	dir, ws := t.TempDir(), t.TempDir()
	secret := "tare-reading-" + randHex(8)
	log := filepath.Join(dir, "tare.log")
	prompt := filepath.Join(dir, "prompt")
	for name, data := range map[string]string{log: "kept out: " + secret + "\n", prompt: "go\n", filepath.Join(ws, "control"): secret} {
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, err := os.Open(prompt)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// Reads are non-blocking (a pipe reopened for reading may be empty), and every result is
	// printed last, so nothing the room wrote earlier is read back out of its own pipe. The
	// shell's descriptors are named by its pid: /proc/self in $(look) is the subshell's.
	script := `read -r line
look() { case "$(dd if="$1" iflag=nonblock bs=65536 count=1 2>/dev/null)" in *"$SECRET"*) echo yes;; *) echo no;; esac; }
control=$(look ./control) # the workspace, where the room starts
reads=""
for p in /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2 /proc/1/fd/0 /proc/1/fd/1 /proc/1/fd/2; do
  [ "$(look $p)" = yes ] && reads="$reads $p"
done
for p in /proc/$$/fd/0 /proc/1/fd/0; do (printf 'tampered\n' >>$p) 2>/dev/null; done
echo "stdin=$line control=$control reads=[$reads]"`
	r := rooted(Room{Workspace: ws, Argv: []string{"/bin/sh", "-c", script}, Env: map[string]string{"SECRET": secret},
		Stdin: in, Stdout: out, Stderr: out, fileStdio: fileStdio})
	if code := runRoom(t, r); code != 0 {
		t.Fatalf("room exited %d", code)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	if !strings.HasPrefix(text, "kept out: "+secret+"\n") || !strings.Contains(text, "stdin=go control=yes") {
		t.Fatalf("the room's output did not reach the log after tare's line, or the control read nothing:\n%s", text)
	}
	var bad []string
	if i := strings.Index(text, "reads=["); i >= 0 && !strings.HasPrefix(text[i:], "reads=[]") {
		bad = append(bad, "read what tare wrote before the room started: "+strings.TrimSpace(text[i:]))
	}
	if p, _ := os.ReadFile(prompt); string(p) != "go\n" {
		bad = append(bad, fmt.Sprintf("wrote into tare's stdin file: %q", p))
	}
	return bad
}

// TestRoomCannotReadTaresOutput: the room's stdio are pipes tare owns, so reopening them
// (or bwrap's) shows nothing tare wrote, and tare's stdin file cannot be written through
// them; the room's output and input still go through.
func TestRoomCannotReadTaresOutput(t *testing.T) {
	if bad := checkOwnOutput(t, false); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// checkInitCmdline lists every host path found in the command lines of the room's
// processes, bwrap's pid 1 above all (its argv names every bind source): the workspace, the
// run store, the tare binary, the relay's socket folder, this checkout and HOME.
func checkInitCmdline(t *testing.T, argvOptions bool) []string {
	t.Helper()
	ws, store := t.TempDir(), t.TempDir()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r := rooted(Room{Workspace: ws, RunStore: store, Stdout: &out, argvOptions: argvOptions,
		Relays: []Relay{{Port: 8080, Upstream: "127.0.0.1:9"}},
		Argv:   []string{"/bin/sh", "-c", `for f in /proc/[0-9]*/cmdline; do echo "${f%/cmdline}: $(tr '\0' ' ' <$f)"; done`}})
	if code := runRoom(t, r); code != 0 {
		t.Fatalf("room exited %d", code)
	}
	got := out.String()
	if !strings.Contains(got, "/proc/1: bwrap ") {
		t.Fatalf("no command line of the room's pid 1:\n%s", got)
	}
	hostPaths := []string{ws, store, testBinary(t), filepath.Join(os.TempDir(), roomPrefix), cwd}
	if home := os.Getenv("HOME"); len(home) > 1 {
		hostPaths = append(hostPaths, home)
	}
	var bad []string
	for _, l := range strings.Split(got, "\n") {
		proc, _, _ := strings.Cut(l, ":")
		for _, p := range hostPaths {
			if strings.Contains(l, p) {
				bad = append(bad, fmt.Sprintf("%s in %s/cmdline", p, proc))
			}
		}
	}
	return slices.Compact(bad)
}

// TestInitCmdlineHoldsNoHostPath: bwrap's options reach it through --args, so the command
// line every room process can read names no host path.
func TestInitCmdlineHoldsNoHostPath(t *testing.T) {
	if bad := checkInitCmdline(t, false); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// TestArgsFileRefusesNUL: bwrap splits its --args file at NUL bytes, so a NUL in a path
// would smuggle options in (here the host root, read-write): Start refuses it instead.
func TestArgsFileRefusesNUL(t *testing.T) {
	requireBwrap(t)
	r := Room{Workspace: t.TempDir(), Tare: testBinary(t), Argv: []string{"/bin/true"},
		Binds: []Bind{{Source: "/nonexistent\x00/opt/y\x00--bind\x00/\x00/host\x00--ro-bind-try\x00/nonexistent", Dest: "/opt/x", Try: true}}}
	p, err := Start(t.Context(), r)
	if err == nil {
		code, _ := p.Wait()
		t.Fatalf("Start took a path with NUL bytes in it (the room exited %d)", code)
	}
	if !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("Start: %v; want the NUL byte named", err)
	}
}

// checkProcMem reads 8 bytes of memory, through /proc/PID/mem, of the room's pid 1 (bwrap,
// masked), pid 2 (tare's relay, non-dumpable) and, as the control, a sibling of the reader.
func checkProcMem(t *testing.T, mutate func([]string) []string) []string {
	t.Helper()
	var out strings.Builder
	// The sibling's memory is read once it runs sleep: until its exec is done its maps are
	// empty or the shell's, and the read finds nothing (seen under load).
	script := `sleep 30 & s=$!
i=0; while [ "$(readlink /proc/$s/exe)" != /usr/bin/sleep ] && [ $i -lt 100000 ]; do i=$((i+1)); done
mem() { a=$(sed -n '1s/-.*//p' /proc/$1/maps 2>/dev/null); dd if=$2 bs=8 count=1 iflag=skip_bytes skip=$((0x${a:-400000})) 2>/dev/null | wc -c; }
echo "sibling=$(mem $s /proc/$s/mem) init=$(mem 1 /proc/1/mem) init-task=$(mem 1 /proc/1/task/1/mem) relay=$(mem 2 /proc/2/mem)"
kill $s`
	r := rooted(Room{Workspace: t.TempDir(), Argv: []string{"/bin/sh", "-c", script}, Stdout: &out, mutate: mutate})
	if code := runRoom(t, r); code != 0 {
		t.Fatalf("room exited %d:\n%s", code, out.String())
	}
	got := strings.TrimSpace(out.String())
	if !strings.Contains(got, "sibling=8 ") {
		t.Fatalf("the control could not read a sibling's memory, so the check is blind: %s", got)
	}
	var bad []string
	for _, f := range strings.Fields(got)[1:] {
		if k, v, _ := strings.Cut(f, "="); v != "0" {
			bad = append(bad, fmt.Sprintf("read %s bytes of %s's memory", v, k))
		}
	}
	return bad
}

// TestRoomMemoryOutOfReach: no process of the room can read the memory of bwrap's pid 1
// (masked) or of tare's relay (non-dumpable), while a sibling's stays readable, as
// docs/room.md says.
func TestRoomMemoryOutOfReach(t *testing.T) {
	if bad := checkProcMem(t, nil); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}
