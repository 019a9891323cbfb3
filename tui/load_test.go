package tui

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

var loadFor = flag.Duration("tui.load", 0, "run the load test this long (the issue asks 60s) and print its figures; default a 3s run")

// timedModel times every View of the root model, on the program's own goroutine.
type timedModel struct {
	*model
	views   []time.Duration
	updates []time.Duration
}

// countMsg asks the UI goroutine for the tails it shows as finished.
type countMsg struct{ reply chan [2]int }

func (m *timedModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if c, ok := msg.(countMsg); ok {
		done, running := 0, 0
		for _, r := range m.env.store.runs {
			d, n, _ := r.state.Counts()
			done, running = done+d, running+n
		}
		c.reply <- [2]int{done, running}
		return m, nil
	}
	start := time.Now()
	_, cmd := m.model.Update(msg)
	if _, ok := msg.(feedMsg); ok {
		m.updates = append(m.updates, time.Since(start))
	}
	return m, cmd
}

func (m *timedModel) View() string {
	start := time.Now()
	s := m.model.View()
	m.views = append(m.views, time.Since(start))
	return s
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// The app under load: 200 live tails of one run emitting 2,000 events a second in all,
// written to a real journal by another goroutine and followed by the real bridge into a
// real program showing the run view at 160x48. It reports View's p50/p99, CPU and the live
// heap over time, and checks that every tail that finished shows as finished.
//
//	go test ./tui -run TestLoad -v -tui.load=60s
func TestLoad(t *testing.T) {
	d := *loadFor
	if d == 0 {
		d = 3 * time.Second
	}
	const tails, rate = 200, 2000
	stateDir := t.TempDir()
	r := openRun(t, stateDir, "calibrate", "load")
	sides := []journal.Side{{Key: "a", Agent: "claude"}, {Key: "b", Agent: "codex"}}
	r.j.Append(&journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 100000, Jobs: tails, Sides: sides, Prompt: "load"}})

	m := &timedModel{model: newModel(modelConfig{styles: asciiStyles(), probes: true})}
	m.openRun(r.dir)
	p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithoutSignals())
	ctx, cancel := contextWithCancel()
	bridgeDone := make(chan struct{})
	go func() {
		defer close(bridgeDone)
		newBridge(newWatcher(stateDir, nil, nil, nil), p.Send).run(ctx)
	}()
	ran := make(chan error, 1)
	go func() { _, err := p.Run(); ran <- err }()
	p.Send(tea.WindowSizeMsg{Width: 160, Height: 48})

	// The writer: each slot holds a live tail that makes tool calls and, after 20 to 80 of
	// them (2 to 8 s), finishes (a final event) and gives its slot to a new tail.
	var finals, written int
	var wmu sync.Mutex
	stop := make(chan struct{})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		rnd := rand.New(rand.NewSource(1))
		type slot struct {
			id          string
			calls, life int
		}
		next := 0
		start := func() slot {
			next++
			s := slot{id: fmt.Sprintf("%s-%d", sides[next%2].Key, next), life: 20 + rnd.Intn(60)}
			r.j.Append(&journal.Event{TailStarted: &journal.TailStarted{ID: s.id, Side: sides[next%2].Key, How: "fresh"}})
			return s
		}
		slots := make([]slot, tails)
		for i := range slots {
			slots[i] = start()
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		begin, n := time.Now(), 0
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// Keep to the rate by the clock, whatever the ticker's jitter.
			want := int(time.Since(begin).Seconds() * rate)
			for ; n < want; n++ {
				s := &slots[rnd.Intn(tails)]
				s.calls++
				u := journal.Usage{Input: int64(900 * s.calls), Output: int64(200 * s.calls), Cost: 0.001 * float64(s.calls)}
				if s.calls >= s.life {
					r.j.Append(&journal.Event{TailFinished: &journal.TailFinished{ID: s.id, Status: []journal.Status{"passed", "failed"}[rnd.Intn(2)], Calls: s.calls, Usage: u}})
					wmu.Lock()
					finals++
					wmu.Unlock()
					*s = start()
					continue
				}
				r.j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: s.id, Tool: "Bash", Summary: fmt.Sprintf("go test ./pkg%d/...", s.calls%17), Seconds: 0.5, Calls: s.calls, Usage: u}})
			}
			wmu.Lock()
			written = n
			wmu.Unlock()
		}
	}()

	cpu0, wall0 := cpuTime(), time.Now()
	var heaps []uint64
	sample := time.NewTicker(d / 6)
	for i := 0; i < 6; i++ {
		<-sample.C
		heaps = append(heaps, liveHeap())
	}
	sample.Stop()
	close(stop)
	<-wrote
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)

	// Every final event must show: ask the UI until its count matches what was written.
	want := finals
	var shown [2]int
	until(t, 10*time.Second, fmt.Sprintf("the app shows %d finished tails, %d were written", shown[0], want), func() bool {
		reply := make(chan [2]int, 1)
		p.Send(countMsg{reply})
		shown = <-reply
		return shown[0] == want
	})
	p.Quit()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	cancel()
	<-bridgeDone

	p50, p99, worst := quantile(m.views, 0.5), quantile(m.views, 0.99), quantile(m.views, 1)
	u99 := quantile(m.updates, 0.99)
	report := fmt.Sprintf("load %s: %d events written (%.0f/s), %d tails finished (all shown), %d live at the end\n"+
		"View: %d frames (%.0f/s), p50 %s, p99 %s, max %s; feed Update p50 %s p99 %s\n"+
		"CPU: %.2fs over %.1fs (%.0f%% of one core; writer, JSON, fsyncs of finals and the app together)\n"+
		"live heap (MB) every %s: %s",
		d, written, float64(written)/wall.Seconds(), want, shown[1],
		len(m.views), float64(len(m.views))/wall.Seconds(), p50, p99, worst, quantile(m.updates, 0.5), u99,
		cpu.Seconds(), wall.Seconds(), 100*cpu.Seconds()/wall.Seconds(), d/6, mb(heaps))
	t.Log("\n" + report)
	// The target is a p99 under 16 ms, asserted on the measured run
	// (-tui.load). The short run in `go test ./...` shares two cores with
	// real agents in rooms, where any frame can be preempted for tens of
	// milliseconds; it asserts the median against the same target, which
	// only a slower View can miss.
	const target = 16 * time.Millisecond
	switch {
	case raceOn:
	case *loadFor != 0 && p99 > target:
		t.Errorf("View p99 %s is over %s", p99, target)
	case *loadFor == 0 && p50 > target:
		t.Errorf("View p50 %s is over %s", p50, target)
	}
	if len(heaps) >= 4 && heaps[len(heaps)-1] > 2*heaps[1]+8<<20 {
		t.Errorf("the live heap grew: %s", mb(heaps))
	}
}

func mb(h []uint64) string {
	s := ""
	for i, b := range h {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.1f", float64(b)/(1<<20))
	}
	return s
}

// BenchmarkView draws the run view of 200 live tails at 160x48, the load test's frame.
func BenchmarkView(b *testing.B) {
	stateDir := b.TempDir()
	r := openRun(b, stateDir, "calibrate", "bench")
	r.at(0, journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 400, Jobs: 200, Sides: []journal.Side{{Key: "a", Agent: "claude"}, {Key: "b", Agent: "codex"}}}})
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("t-%d", i)
		r.at(sec(i), journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: []string{"a", "b"}[i%2], How: "fresh"}})
		for c := 1; c <= 20; c++ {
			r.at(sec(i+c), journal.Event{ToolCall: &journal.ToolCall{Tail: id, Tool: "Bash", Summary: "go test ./...", Calls: c, Usage: usage(int64(1000*c), 100, 0.01)}})
		}
	}
	tm := newTestModel(b, stateDir, newStub(), 160, 48)
	tm.send(openRunMsg{r.dir})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = tm.View()
	}
}
