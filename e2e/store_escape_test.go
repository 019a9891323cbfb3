package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/demo"
)

// payload is what the red team had the host write into /etc/cron.d (F2).
const payload = "* * * * * root touch /tmp/PWNED-cron\n"

// TestRoomCannotRedirectTheStore is the red team's F2 through the real CLI, Claude Code and
// tare's model server: an agent replaces the object folder its payload's blob goes to
// (`blobs/XX`, XX the payload hash's first two digits) with a symlink to a host folder, in
// every store it can reach, then writes the payload. tare record and tare tail must write
// nothing into that folder; the run still works, or fails naming the reason.
//
// "plant" is the red team's script: plant in turn 1, payload in turn 2 (which the tail
// replays, so the host's end-of-tail snapshot stores it). "forge" also hands the host a
// staged capsule whose blob lies behind the symlink, so the import meets it.
func TestRoomCannotRedirectTheStore(t *testing.T) {
	sum := sha256.Sum256([]byte(payload))
	fan := hex.EncodeToString(sum[:])[:2]
	for _, how := range []string{"plant", "forge"} {
		t.Run(how, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "cron.d")
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			// Every store the room can reach: /tare-run (the run's store before the fix, the
			// room's staging folder now) and /tare-store (the run's store, read-only).
			// (Spelled out: Claude Code refuses `rm -rf $var/...`.)
			var plant string
			for i, dir := range []string{"/tare-run/blobs", "/tare-run/trees", "/tare-store/blobs", "/tare-store/trees"} {
				plant += fmt.Sprintf("mkdir -p %s; mv %s/%s /tmp/moved-%d; ln -sfn %s %s/%s; ", dir, dir, fan, i, target, dir, fan)
			}
			plant += "ls -l /tare-run/blobs /tare-store/blobs 2>&1 | grep -- '->'"
			write := "printf '" + strings.TrimSuffix(payload, "\n") + "\\n' > /work/cronjob && sha256sum /work/cronjob"
			script := "[[turn]]\ntext = \"Setting up.\"\nshell = '''" + plant + "'''\n\n" +
				"[[turn]]\ntext = \"Writing the payload.\"\nshell = '''" + write + "'''\n\n" +
				"[[turn]]\ntext = \"Done.\"\n"
			if how == "forge" {
				// One tool call: the payload, a capsule of it taken by hand into a store of
				// the room's own, copied into /tare-run, and then the symlink.
				forge := write + " && mkdir -p /tmp/s && /opt/tare/tare snap --store /tmp/s --work /work --id forged </dev/null" +
					" && mkdir -p /tare-run/capsules /tare-run/trees && cp -r /tmp/s/capsules/. /tare-run/capsules/ && cp -r /tmp/s/trees/. /tare-run/trees/" +
					"; " + plant
				script = "[[turn]]\ntext = \"Forging.\"\nshell = '''" + forge + "'''\n\n[[turn]]\ntext = \"Done.\"\n"
			}
			scriptFile := filepath.Join(t.TempDir(), "escape.toml")
			if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
			if err != nil {
				t.Fatal(err)
			}
			r := newRun(t, "")
			out := filepath.Join(r.home, "rec")
			rec := *r.tare(t, "record", "Do the task.", "--side", "claude", "--script", scriptFile, "--project", paths.Project, "--out", out)
			tail := *r.tare(t, "tail", out, "--step", "1")
			t.Logf("record exit %d: %s%s\ntail exit %d: %s%s", rec.code, rec.stdout, rec.stderr, tail.code, tail.stdout, tail.stderr)

			// The attack ran: the room's shell showed its symlink.
			if stream, _ := os.ReadFile(filepath.Join(out, "original", "stdout.jsonl")); !strings.Contains(string(stream), fan+" -> "+target) {
				t.Fatalf("the room planted no symlink %s -> %s: the test proves nothing\n%s", fan, target, stream)
			}
			if names, _ := os.ReadDir(target); len(names) > 0 {
				t.Fatalf("tare wrote %s into %s through the room's symlink", names[0].Name(), target)
			}
			filepath.WalkDir(filepath.Join(out, "store"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type()&fs.ModeSymlink != 0 {
					t.Errorf("the run's store holds a symlink the room planted: %s", p)
				}
				return nil
			})
			switch how {
			case "plant":
				// The room could not reach the store: the recording and the tail work.
				if rec.code != 0 || tail.code != 0 || !strings.Contains(tail.stdout+tail.stderr, "native-1-claude-0") {
					t.Fatalf("record exit %d, tail exit %d: want both to work\n%s%s\n%s%s", rec.code, tail.code, rec.stdout, rec.stderr, tail.stdout, tail.stderr)
				}
			case "forge":
				// The import refuses the forged capsule, naming the symlink; there is no
				// recording to continue, and tail says so.
				if rec.code == 0 || !strings.Contains(rec.stderr, "refused") || !strings.Contains(rec.stderr, "symlink") {
					t.Fatalf("record exit %d: want a refusal naming the symlink\n%s%s", rec.code, rec.stdout, rec.stderr)
				}
				if tail.code == 0 || !strings.Contains(tail.stderr, "did not finish") {
					t.Fatalf("tail exit %d after a refused recording: want it to say the recording did not finish\n%s", tail.code, tail.stderr)
				}
			}
		})
	}
}
