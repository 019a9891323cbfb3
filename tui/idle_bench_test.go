package tui

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	charmlog "github.com/charmbracelet/log"
	gossh "golang.org/x/crypto/ssh"

	"tare/engine/journal"
)

// finishedState writes runs finished runs of tails tails each, as calibrate leaves them.
func finishedState(b testing.TB, runs, tails int) string {
	stateDir := b.TempDir()
	for r := 0; r < runs; r++ {
		j := openRun(b, stateDir, "calibrate", fmt.Sprintf("done-%03d", r))
		at := -time.Duration(runs-r) * time.Hour
		j.at(at, journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Project: demoProject, Prompt: "fix the failing test",
			Budget: tails, Jobs: 2, Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
		for i := 0; i < tails; i++ {
			id := fmt.Sprintf("a-%d", i)
			j.at(at, journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: "a", How: "fresh"}})
			for c := 1; c <= 10; c++ {
				j.at(at, journal.Event{ToolCall: &journal.ToolCall{Tail: id, Tool: "Bash", Summary: "go test ./...", Calls: c}})
			}
			j.at(at, journal.Event{TailFinished: &journal.TailFinished{ID: id, Status: journal.StatusPassed, Passed: true, Calls: 10}})
		}
		j.at(at, journal.Event{RunFinished: &journal.RunFinished{Report: "a 4/4"}})
	}
	return stateDir
}

// idleCPU serves stateDir over ssh to sessions sessions, waits until each shows its home
// screen and the first reads are done, then returns the process's CPU over each of windows
// windows of length d, as a percentage of one core.
func idleCPU(b *testing.B, stateDir string, sessions, windows int, d time.Duration, pollOnly bool) []float64 {
	key := newKey(b)
	keys := filepath.Join(b.TempDir(), "authorized_keys")
	os.WriteFile(keys, gossh.MarshalAuthorizedKey(key.PublicKey()), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	hostDir := b.TempDir()
	go func() {
		served <- serve(ctx, ln, ServeOptions{AuthorizedKeys: keys, StateDir: stateDir, HostKey: filepath.Join(hostDir, "host"),
			Engine: newStub(), Agents: []string{"claude"}, Project: demoProject, Log: log.New(io.Discard, "", 0), pollOnly: pollOnly})
	}()
	defer func() { cancel(); <-served }()
	until(b, 10*time.Second, "no host key", func() bool { _, err := os.Stat(filepath.Join(hostDir, "host.pub")); return err == nil })
	pub, _ := os.ReadFile(filepath.Join(hostDir, "host.pub"))
	hostKey, _, _, _, err := gossh.ParseAuthorizedKey(pub)
	if err != nil {
		b.Fatal(err)
	}
	var clients []*sshClient
	for i := 0; i < sessions; i++ {
		c := openSession(b, ln.Addr().String(), key, hostKey, "xterm-256color")
		defer c.client.Close()
		clients = append(clients, c)
	}
	for _, c := range clients {
		until(b, 30*time.Second, "a session did not show the runs", func() bool { return strings.Contains(c.screen(), "done-") })
	}
	// Let the first reads and draws settle: idle is what follows.
	time.Sleep(2 * time.Second)
	pct := make([]float64, windows)
	for i := range pct {
		cpu0, wall0 := cpuTime(), time.Now()
		time.Sleep(d)
		pct[i] = 100 * (cpuTime() - cpu0).Seconds() / time.Since(wall0).Seconds()
	}
	return pct
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkIdleWatch measures the CPU of an idle `tare serve` following 200 finished runs
// with 5 ssh sessions open, with inotify (cpu-pct) and, in the same run, polling every
// journal as the fallback does (poll-cpu-pct); each b.N is one 5 s window of each.
//
//	go test ./tui -run '^$' -bench IdleWatch -benchtime 5x
func BenchmarkIdleWatch(b *testing.B) {
	charmlog.SetOutput(io.Discard)
	defer charmlog.SetOutput(os.Stderr)
	stateDir := finishedState(b, 200, 4)
	const sessions, window = 5, 5 * time.Second
	watched := idleCPU(b, stateDir, sessions, b.N, window, false)
	polled := idleCPU(b, stateDir, sessions, b.N, window, true)
	b.ReportMetric(median(watched), "cpu-pct")
	b.ReportMetric(median(polled), "poll-cpu-pct")
	b.ReportMetric(0, "ns/op")
	b.Logf("idle, 200 finished runs, %d ssh sessions, %s windows: inotify %.2f%% of a core (windows %s), polling %.2f%% (windows %s)",
		sessions, window, median(watched), pcts(watched), median(polled), pcts(polled))
}

func pcts(x []float64) string {
	var s []string
	for _, v := range x {
		s = append(s, fmt.Sprintf("%.2f", v))
	}
	return strings.Join(s, " ")
}
