package probe

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine/room"
	"tare/modelserver"
	"tare/sandbox"
)

// runOnce is one offline agent run as tare makes it: find the agent's CLI (which asks it for
// its version), then run it in a clean room on the probe's prompt against a model server of
// its own. It is what the probe is measured against.
func runOnce(ctx context.Context, a agent.Agent, cfg *config.Config, project, helper string) error {
	inst, err := room.FindAgent(a, cfg, project)
	if err != nil {
		return err
	}
	srv, err := modelserver.New(modelserver.Options{})
	if err != nil {
		return err
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return err
	}
	defer srv.Close()
	p := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: project, ReadOnly: true, Helper: helper}
	box, setup, err := room.Build(p, srv.Addr())
	if err != nil {
		return err
	}
	_, err = askAgent(ctx, p, box, setup, func(argv []string) []string { return argv }, srv)
	return err
}

// buildHelper builds tare-room (static, as scripts/setup does) into a temporary folder.
func buildHelper(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), sandbox.HelperName)
	cmd := exec.Command("go", "build", "-o", bin, "tare/cmd/tare-room")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build tare-room: %v\n%s", err, out)
	}
	return bin
}

func medianSpread(x []float64) (med, lo, hi float64) {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

// BenchmarkProbe times a whole probe of each real agent (its clean room and its control
// twin, for an operator without a setup of their own, so no third twin) against one offline
// agent run in the same run, alternating the two: probe-ms and run-ms are medians, ratio is
// probe-ms over run-ms. Each probe must still read tare: 0.00.
//
//	go test ./engine -run '^$' -bench Probe -benchtime 5x
func BenchmarkProbe(b *testing.B) {
	// The rooms run their relay and the control's MCP server from tare-room, as an
	// install's do (scripts/setup builds it beside tare).
	helper := buildHelper(b)
	for _, name := range realAgents {
		b.Run(name, func(b *testing.B) {
			a, _, cfg := mustFind(b, name)
			project, home := b.TempDir(), b.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var probes, runs []float64
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := runOnce(ctx, a, cfg, project, helper); err != nil {
					b.Fatal(err)
				}
				runs = append(runs, float64(time.Since(start).Microseconds())/1000)
				start = time.Now()
				r, err := Probe(ctx, ProbeOptions{Agent: a, Project: project, Config: cfg, HostHome: home, helper: helper})
				if err != nil {
					b.Fatal(err)
				}
				probes = append(probes, float64(time.Since(start).Microseconds())/1000)
				if !r.Zero() {
					b.Fatalf("reading %q, want tare: 0.00\n%s", r.Verdict(), r.Render())
				}
			}
			pm, plo, phi := medianSpread(probes)
			rm, rlo, rhi := medianSpread(runs)
			b.ReportMetric(pm, "probe-ms")
			b.ReportMetric(rm, "run-ms")
			b.ReportMetric(pm/rm, "ratio")
			b.ReportMetric(0, "ns/op")
			b.Logf("%s: probe %.0f ms (%.0f-%.0f), one run %.0f ms (%.0f-%.0f), ratio %.2f over %d; probes %s",
				name, pm, plo, phi, rm, rlo, rhi, pm/rm, len(probes), strings.Trim(fmt.Sprint(probes), "[]"))
		})
	}
}
