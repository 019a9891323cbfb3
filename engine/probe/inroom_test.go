package probe

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"tare/engine/room"
	"tare/sandbox"
)

// TestInRoomTareIsNotDumpable: `tare snap-watch`, the agent's parent in a recorded run of an
// agent without hooks, is out of its tools' reach: a child of it cannot read its memory
// through /proc/PPID/mem, while the same read of a sibling (the control) works.
func TestInRoomTareIsNotDumpable(t *testing.T) {
	needRooms(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := `sleep 30 & s=$!
mem() { a=$(sed -n '1s/-.*//p' /proc/$1/maps 2>/dev/null); dd if=/proc/$1/mem bs=8 count=1 iflag=skip_bytes skip=$((0x${a:-400000})) 2>/dev/null | wc -c; }
echo "parent=$(tr '\0' ' ' </proc/$PPID/cmdline)"
echo "sibling=$(mem $s) parent-mem=$(mem $PPID)"
kill $s`
	var out strings.Builder
	r := sandbox.Room{Workspace: t.TempDir(), RunStore: t.TempDir(), Tare: exe, Stdout: &out, Stderr: &out,
		Argv: []string{sandbox.TareBin, "snap-watch", "--store", sandbox.RunDir, "--work", sandbox.WorkDir, "--", "/bin/sh", "-c", script}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, err := room.Run(ctx, r)
	got := out.String()
	if err != nil || code != 0 {
		t.Fatalf("room: exit %d, %v:\n%s", code, err, got)
	}
	if !strings.Contains(got, "parent="+sandbox.TareBin+" snap-watch ") || !strings.Contains(got, "sibling=8 ") {
		t.Fatalf("the shell's parent is not snap-watch, or the control read nothing from a sibling:\n%s", got)
	}
	if !strings.Contains(got, "parent-mem=0\n") {
		t.Fatalf("the agent's tools read the memory of tare snap-watch, their parent:\n%s", got)
	}
}
