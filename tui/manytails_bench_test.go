package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/config"
	"tare/demo"
	"tare/engine"
	"tare/engine/journal"
	enginerun "tare/engine/run"
)

// treeMemory is the proportional memory (PSS: a shared page counts once, split among its
// users) of this process and every process below it (the rooms and their agents), from /proc.
func treeMemory() int64 {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command is in parentheses and may hold spaces: the fields start after it.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		if f := bytes.Fields(data[i+1:]); len(f) > 1 {
			parent[pid], _ = strconv.Atoi(string(f[1]))
		}
	}
	self := os.Getpid()
	var total int64
	for pid := range parent {
		for p := pid; p > 1; p = parent[p] {
			if p == self {
				total += pss(pid)
				break
			}
		}
	}
	return total
}

// pss is a process's proportional set size in bytes (0 once it is gone).
func pss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Pss:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// maxRSS is this process's peak resident memory (tare's engine and app, no room).
func maxRSS() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss << 10
}

// BenchmarkManyTails runs a calibrate of 50 tails at once (codex, on tare's model server
// replaying the demo's script, each checked in its room) while the app follows the state
// directory in a real program, as `tare` beside a running calibrate does. It asserts that
// every tail's events are in the journal and that the app shows every one of them, and
// reports the wall, the journal's events per second, the peak memory of the process tree
// (tare, rooms, agents; PSS sampled every 250 ms), tare's own peak RSS and the app's frame
// times.
//
//	go test ./tui -run '^$' -bench ManyTails -benchtime 1x
func BenchmarkManyTails(b *testing.B) {
	const tails = 50
	root, _ := filepath.Abs("..")
	cfg, err := config.Parse(nil, "none")
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(root, "agents", "codex", "node_modules", ".bin", "codex")
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%v (run scripts/setup to install the pinned agent CLIs)", err)
	}
	cfg.Agents["codex"] = config.Agent{Bin: bin}
	sides, err := engine.ParseSides([]string{"codex"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var walls, rates, peaks, views []float64
	for i := 0; i < b.N; i++ {
		stateDir := b.TempDir()
		cfg.StateDir = stateDir
		paths, err := demo.Extract(filepath.Join(b.TempDir(), "demo"))
		if err != nil {
			b.Fatal(err)
		}
		m := &manyModel{&timedModel{model: newModel(modelConfig{styles: asciiStyles(), probes: true})}}
		p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithoutSignals())
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		bridgeDone := make(chan struct{})
		go func() {
			defer close(bridgeDone)
			newBridge(newWatcher(stateDir, nil, enginerun.Alive, nil), p.Send).run(ctx)
		}()
		ran := make(chan error, 1)
		go func() { _, err := p.Run(); ran <- err }()
		p.Send(tea.WindowSizeMsg{Width: 160, Height: 48})

		var peak int64
		var mu sync.Mutex
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				r := treeMemory()
				mu.Lock()
				peak = max(peak, r)
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		out := filepath.Join(stateDir, "calibrate", "many")
		began := time.Now()
		_, _, err = engine.Calibrate(ctx, engine.CalibrateOptions{Prompt: demo.Task, Sides: sides, Check: demo.Check, CheckTimeout: time.Minute,
			Runs: tails, Jobs: tails, Project: paths.Project, Out: out, Config: cfg, Script: paths.Script, Seed: 7})
		wall := time.Since(began)
		close(stop)
		<-sampled
		if err != nil {
			b.Fatal(err)
		}

		events, err := journal.ReadJournal(out)
		if err != nil {
			b.Fatal(err)
		}
		st := journal.Replay("many", events)
		if done, running, _ := st.Counts(); done != tails || running != 0 || !st.Finished {
			b.Fatalf("the journal holds %d finished tails and %d running (finished %v), want %d finished", done, running, st.Finished, tails)
		}
		calls := 0
		for _, tl := range st.Tails {
			if tl.Calls == 0 {
				b.Errorf("tail %s: no tool call in the journal", tl.ID)
			}
			calls += tl.Calls
		}
		last := events[len(events)-1].Seq
		// The app must show the run as the journal has it: every event, to the last.
		var shown int64
		until(b, 10*time.Second, fmt.Sprintf("the app shows the run up to event %d, the journal has %d", shown, last), func() bool {
			reply := make(chan int64, 1)
			p.Send(seqMsg{dir: out, reply: reply})
			shown = <-reply
			return shown == last
		})
		p.Quit()
		if err := <-ran; err != nil {
			b.Fatal(err)
		}
		cancel()
		<-bridgeDone

		walls, rates, peaks = append(walls, wall.Seconds()), append(rates, float64(len(events))/wall.Seconds()), append(peaks, float64(peak)/(1<<20))
		views = append(views, float64(quantile(m.views, 0.99).Microseconds())/1000)
		b.Logf("%d tails at once: %s, %d events (%d tool calls), %.1f events/s, peak memory %.0f MB (PSS of tare, rooms and agents), "+
			"app: %d frames, View p50 %s p99 %s, feed Update p99 %s; the app showed every event",
			tails, wall.Round(time.Millisecond), len(events), calls, float64(len(events))/wall.Seconds(), float64(peak)/(1<<20),
			len(m.views), quantile(m.views, 0.5), quantile(m.views, 0.99), quantile(m.updates, 0.99))
	}
	b.ReportMetric(median(walls), "wall-s")
	b.ReportMetric(median(rates), "events/s")
	b.ReportMetric(median(peaks), "peak-MB")
	b.ReportMetric(float64(maxRSS())/(1<<20), "tare-MB")
	b.ReportMetric(median(views), "view-p99-ms")
	b.ReportMetric(0, "ns/op")
	b.Logf("over %d runs: wall %s s, events/s %s, peak MB %s; tare's own peak RSS %.0f MB", b.N, pcts(walls), pcts(rates), pcts(peaks), float64(maxRSS())/(1<<20))
}

// seqMsg asks the UI goroutine for the last event of a run it holds.
type seqMsg struct {
	dir   string
	reply chan int64
}

// manyModel is the timed model that also answers seqMsg.
type manyModel struct{ *timedModel }

func (m *manyModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if q, ok := msg.(seqMsg); ok {
		q.reply <- m.env.store.run(q.dir).state.Seq
		return m, nil
	}
	_, cmd := m.timedModel.Update(msg)
	return m, cmd
}
