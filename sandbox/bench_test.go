package sandbox

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// Room start latency, read side by side: run with
//   go test -run '^$' -bench . -benchtime 20x ./sandbox
// median-ms is the median of the iterations (20 with -benchtime 20x).

func medianMS(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	if len(ds) == 0 {
		return
	}
	m := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		m = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	b.ReportMetric(float64(m.Microseconds())/1000, "median-ms")
}

// BenchmarkRoomStart: Start and Wait of a full room running /bin/true.
func BenchmarkRoomStart(b *testing.B) {
	requireBwrap(b)
	r := Room{Workspace: b.TempDir(), Tare: testBinary(b), Argv: []string{"/bin/true"},
		Files: []File{{Path: HomeDir + "/.claude/.credentials.json", Data: []byte("{}")}}}
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := Start(context.Background(), r)
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("room: %d %v", code, err)
		}
		ds = append(ds, time.Since(t0))
	}
	medianMS(b, ds)
}

// BenchmarkBwrapFloor: the least bwrap can do, `bwrap --ro-bind / / true`.
func BenchmarkBwrapFloor(b *testing.B) {
	bw, err := FindBwrap("")
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command(bw, "--ro-bind", "/", "/", "true")
		cmd.Env = minimalEnv
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	medianMS(b, ds)
}

// BenchmarkExec: a plain exec of /bin/true.
func BenchmarkExec(b *testing.B) {
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	medianMS(b, ds)
}

// BenchmarkInterleaved runs them in turn each iteration, so a busy machine slows them alike
// and the ratios stay readable: a plain exec, the bwrap floor (floor-ms, `bwrap --ro-bind / /
// true`), the floor with the room's namespaces (floor-ns-ms), a room whose relay runs from
// tare-room (room-ms, as an install runs it) and the same room with its relay run from the
// tare binary (room-tare-relay-ms, as before tare-room).
func BenchmarkInterleaved(b *testing.B) {
	requireBwrap(b)
	bw, _ := FindBwrap("")
	// The relay runs from tare-room, as in an install where scripts/setup built it.
	r := Room{Workspace: b.TempDir(), Tare: testBinary(b), Helper: buildHelper(b), Argv: []string{"/bin/true"},
		Files: []File{{Path: HomeDir + "/.claude/.credentials.json", Data: []byte("{}")}}}
	withTare := r
	withTare.Helper = "" // Start finds no tare-room beside the test binary
	// The floor with the room's namespaces: bwrap's flags before --hostname in the room's
	// own argv (its user, pid, ipc, uts, cgroup and network namespaces, --die-with-parent,
	// --new-session), so it follows what a room unshares.
	args, err := r.Args(SequentialFDs(len(r.Files)))
	if err != nil {
		b.Fatal(err)
	}
	nsFloor := append(slices.Clone(args[:slices.Index(args, "--hostname")]), "--ro-bind", "/", "/", "true")
	var exe, floor, floorNS, room, roomTare []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		cmd := exec.Command(bw, "--ro-bind", "/", "/", "true")
		cmd.Env = minimalEnv
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		cmd = exec.Command(bw, nsFloor...)
		cmd.Env = minimalEnv
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		t2ns := time.Now()
		// floor-ms is t1 to t2, the bare floor alone; the room is timed from t2ns.
		floor, floorNS = append(floor, t2.Sub(t1)), append(floorNS, t2ns.Sub(t2))
		p, err := Start(context.Background(), r)
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("room: %d %v", code, err)
		}
		t3 := time.Now()
		// The same room with its relay run from the tare binary (here the test binary), as
		// before tare-room: the baseline of the relay's own cost.
		p, err = Start(context.Background(), withTare)
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("room: %d %v", code, err)
		}
		t4 := time.Now()
		exe, room = append(exe, t1.Sub(t0)), append(room, t3.Sub(t2ns))
		roomTare = append(roomTare, t4.Sub(t3))
	}
	medians := map[string]float64{}
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"exec-ms", exe}, {"floor-ms", floor}, {"floor-ns-ms", floorNS}, {"room-ms", room}, {"room-tare-relay-ms", roomTare}} {
		slices.Sort(m.ds)
		medians[m.name] = float64(m.ds[len(m.ds)/2].Microseconds()) / 1000
		b.ReportMetric(medians[m.name], m.name)
	}
	b.ReportMetric(medians["room-ms"]/medians["floor-ms"], "room/floor")
	b.ReportMetric(medians["room-ms"]/medians["floor-ns-ms"], "room/floor-ns")
}
