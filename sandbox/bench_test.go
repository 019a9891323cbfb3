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

// BenchmarkInterleaved runs the three in turn each iteration, so a busy
// machine slows them alike and the ratios stay readable.
func BenchmarkInterleaved(b *testing.B) {
	requireBwrap(b)
	bw, _ := FindBwrap("")
	// The relay runs from tare-room, as in an install where scripts/setup built it.
	r := Room{Workspace: b.TempDir(), Tare: testBinary(b), Helper: buildHelper(b), Argv: []string{"/bin/true"},
		Files: []File{{Path: HomeDir + "/.claude/.credentials.json", Data: []byte("{}")}}}
	var exe, floor, room []time.Duration
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
		p, err := Start(context.Background(), r)
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("room: %d %v", code, err)
		}
		t3 := time.Now()
		exe, floor, room = append(exe, t1.Sub(t0)), append(floor, t2.Sub(t1)), append(room, t3.Sub(t2))
	}
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"exec-ms", exe}, {"floor-ms", floor}, {"room-ms", room}} {
		slices.Sort(m.ds)
		b.ReportMetric(float64(m.ds[len(m.ds)/2].Microseconds())/1000, m.name)
	}
}
