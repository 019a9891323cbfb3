package capsule

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHookStep is one step of a recorded run as the agent waits for it: a file of the
// 10,000-file / 100 MB workspace changed, then the agent's after-tool hook run the way its
// settings run it (HookCommand through sh -c, the hook's JSON on stdin, a fresh shell per
// step, which asks over the watcher's FIFOs with builtins) against a snap-watch serving the
// workspace, as in a room. Each step also tars the
// whole workspace with tar(1), the per-step copy this replaces, so both are timed in the
// same run:
//
//	go test -run '^$' -bench HookStep -benchtime 20x ./capsule
//
// hook-ms and tar-ms are medians, hook-p90-ms the 90th percentile, tar/hook their ratio.
func BenchmarkHookStep(b *testing.B) {
	bin := buildHelper(b)
	ws, files := benchWorkspace(b)
	dir := b.TempDir()
	base, stage, sock := filepath.Join(dir, "store"), filepath.Join(dir, "stage"), filepath.Join(dir, "snap.sock")
	s, err := Open(base)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Snap(context.Background(), ws, "start"); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(stage, 0o755); err != nil {
		b.Fatal(err)
	}
	stopWatch := startWatch(b, bin, stage, base, ws, sock)
	hook := HookCommand(bin, stage, base, ws, sock)
	tarFile := filepath.Join(dir, "step.tar")
	var hooks, tars []time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		step := len(hooks)
		changeOne(b, ws, files, step)
		in := fmt.Sprintf(`{"hook_event_name":"PostToolUse","tool_use_id":"toolu_%d","tool_name":"Edit"}`, step)
		b.StartTimer()
		t0 := time.Now()
		cmd := exec.Command("/bin/sh", "-c", hook)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.CombinedOutput()
		hooks = append(hooks, time.Since(t0))
		b.StopTimer()
		if err != nil || len(out) > 0 {
			b.Fatalf("hook %s: %v: %s", hook, err, out)
		}
		// tar writes the step's archive as the per-step copy did (not fsynced, as tar does
		// not). Untimed, it is then removed and the disk synced, so none of its 100 MB is
		// written back during the next hook's fsyncs.
		t1 := time.Now()
		if out, err := exec.Command("tar", "-cf", tarFile, "-C", ws, ".").CombinedOutput(); err != nil {
			b.Fatalf("tar: %v: %s", err, out)
		}
		tars = append(tars, time.Since(t1))
		if err := os.Remove(tarFile); err != nil {
			b.Fatal(err)
		}
		syscall.Sync()
		b.StartTimer()
	}
	b.StopTimer()
	stopWatch()
	hookMS, tarMS := medianMS(hooks), medianMS(tars)
	b.ReportMetric(hookMS, "hook-ms")
	b.ReportMetric(tarMS, "tar-ms")
	b.ReportMetric(tarMS/hookMS, "tar/hook")
	slices.Sort(hooks)
	b.ReportMetric(float64(hooks[len(hooks)*9/10].Microseconds())/1000, "hook-p90-ms")
	checkHookCapsules(b, stage, base, ws, len(hooks))
}

// medianMS is the median of ds in milliseconds.
func medianMS(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(m.Microseconds()) / 1000
}

// startWatch starts bin's snap-watch over ws, as a room's command does, with a stand-in
// agent that says when it runs (so the socket is served) and lives until stop.
func startWatch(tb testing.TB, bin, stage, base, ws, sock string) (stop func()) {
	tb.Helper()
	cmd := exec.Command(bin, "snap-watch", "--store", stage, "--base", base, "--work", ws, "--socket", sock,
		"--", "/bin/sh", "-c", "echo ready; exec cat")
	agentIn, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	agentOut, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	if line, err := bufio.NewReader(agentOut).ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		tb.Fatalf("snap-watch: the agent did not start: %q %v", line, err)
	}
	return func() {
		agentIn.Close() // the stand-in agent ends, and snap-watch with it
		if err := cmd.Wait(); err != nil {
			tb.Errorf("snap-watch: %v", err)
		}
	}
}

// checkHookCapsules checks that the hook staged one capsule per step, each from the
// watcher's dirty paths (the fast path, not the fallback walk), and that the last one is
// the workspace as a full walk into a fresh store sees it.
func checkHookCapsules(tb testing.TB, stage, base, ws string, steps int) {
	tb.Helper()
	st, err := OpenStage(stage, base)
	if err != nil {
		tb.Fatal(err)
	}
	list, err := st.List()
	if err != nil {
		tb.Fatal(err)
	}
	var staged []Capsule
	for _, c := range list {
		if strings.HasPrefix(c.ID, "toolu_") {
			staged = append(staged, c)
		}
	}
	if len(staged) != steps {
		tb.Fatalf("%d capsules staged for %d steps", len(staged), steps)
	}
	for _, c := range staged {
		if c.Walk != "dirty" {
			tb.Fatalf("capsule %s: walk %q, want dirty (the watcher's paths)", c.Name(), c.Walk)
		}
	}
	fresh, err := Open(filepath.Join(tb.TempDir(), "verify"))
	if err != nil {
		tb.Fatal(err)
	}
	full, err := fresh.Snap(context.Background(), ws, "verify")
	if err != nil {
		tb.Fatal(err)
	}
	if last := staged[len(staged)-1]; last.Root != full.Root {
		tb.Fatalf("last capsule %s has root %s, a full walk gives %s", last.Name(), last.Root, full.Root)
	}
}

// buildHelper builds tare-room (./cmd/tare-room), the binary the hook runs in a room.
func buildHelper(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "tare-room")
	if out, err := exec.Command("go", "build", "-o", bin, "tare/cmd/tare-room").CombinedOutput(); err != nil {
		tb.Fatalf("build tare-room: %v\n%s", err, out)
	}
	return bin
}
