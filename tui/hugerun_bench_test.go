package tui

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// heapPeak samples the heap's live objects every millisecond until stop, and returns the
// highest it saw (runtime/metrics reads it without stopping the world).
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	var mu sync.Mutex
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak
	}
}

// threadCPU is the CPU time the calling thread has used (RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// openHuge starts the app on stateDir and opens the run as an operator would: the Runs
// list, enter on the run once it is listed, the bridge's polls until the run is in whole,
// and the first frame that shows it with its final counts. It returns the model and how
// long that took.
func openHuge(b *testing.B, stateDir, dir string, last int64, full bool) (*testModel, time.Duration) {
	runtime.GC()
	start := time.Now()
	stub := newStub()
	tm := &testModel{model: newModel(modelConfig{engine: stub, styles: asciiStyles(), now: func() time.Time { return t0 },
		agents: []string{"claude", "codex", "pi"}, probes: true, project: demoProject}), t: b, w: newWatcher(stateDir, nil, stub.Alive, nil), st: stub}
	tm.w.full = full
	tm.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tm.pollNow()
	selectRow(b, tm.home.runs.t, dir)
	tm.key("enter")
	for i := 0; i < 10000 && tm.env.store.run(dir).state.Seq != last; i++ {
		tm.pollNow()
	}
	view := tm.View()
	took := time.Since(start)
	done, running, _ := tm.env.store.run(dir).state.Counts()
	if tm.page() != runPage || !strings.Contains(view, fmt.Sprintf("%d done · %d running", done, running)) || done+running != 500 {
		b.Fatalf("the run is not shown whole (%d done, %d running):\n%s", done, running, view)
	}
	return tm, took
}

// BenchmarkOpenHugeRun writes a calibrate run of 1,000,951 events (500 tails of 2,000 tool
// calls, the last 50 still running) with the engine's journal writer, and opens it through
// the app's real Update and View: open-ms is from the app's start to the first frame showing
// the run whole (its counts final), as the skimming store does it, against base-open-ms, the
// same with every line decoded (the app before), in the same run. tail-open-ms is enter on a
// tail to the frame showing its 2,000 calls (and its detail read); full-read-ms is one
// engine.ReadJournal, which the tail view and its detail each did before. frame-p99-ms is
// the 99th percentile of Update+View per key while scrolling the tails and then the tail's
// steps (wall; frame-cpu-p99-ms the same in the thread's CPU time, which the machine's load
// does not stretch); heap-MB the peak of the heap's live objects while opening, base-heap-MB the same
// for the baseline, open-heap-MB what stays live with the run and its tail open.
//
//	go test ./tui -run '^$' -bench OpenHugeRun -benchtime 1x
func BenchmarkOpenHugeRun(b *testing.B) {
	stateDir := b.TempDir()
	began := time.Now()
	dir, size := writeHugeRun(b, stateDir, 500, 2000)
	b.Logf("journal: %.0f MB written in %s", float64(size)/(1<<20), time.Since(began).Round(time.Millisecond))
	const last = 1 + 500 + 500*2000 + 450
	var openMs, baseMs, tailMs, fullMs, p99, cpuP99, heapMB, baseHeapMB, tailHeapMB, liveMB float64
	for b.Loop() {
		runtime.GC()
		stop := heapPeak()
		_, took := openHuge(b, stateDir, dir, last, true)
		baseHeapMB = float64(stop()) / (1 << 20)
		baseMs = float64(took.Microseconds()) / 1000

		runtime.GC()
		t := time.Now()
		all, err := journal.ReadJournal(dir)
		if err != nil || len(all) != last {
			b.Fatalf("full read: %d events, %v", len(all), err)
		}
		fullMs = float64(time.Since(t).Microseconds()) / 1000
		all = nil

		runtime.GC()
		stop = heapPeak()
		tm, took := openHuge(b, stateDir, dir, last, false)
		openMs = float64(took.Microseconds()) / 1000
		heapMB = float64(stop()) / (1 << 20)
		stop = heapPeak()
		defer runtime.UnlockOSThread()
		var frames, cpus []time.Duration
		runtime.LockOSThread() // the thread's own CPU time is the frame's, whatever the load
		frame := func(k string) {
			t, c := time.Now(), threadCPU()
			tm.key(k)
			tm.View()
			frames, cpus = append(frames, time.Since(t)), append(cpus, threadCPU()-c)
		}
		r := rand.New(rand.NewPCG(1, 2))
		keys := []string{"j", "j", "j", "k", "pgdown", "pgup", "G", "g"}
		for range 500 {
			frame(keys[r.IntN(len(keys))])
		}
		selectRow(b, tm.run.tails.t, "a-226") // a tail of the last wave, still running
		t = time.Now()
		tm.key("enter")
		view := tm.View()
		tailMs = float64(time.Since(t).Microseconds()) / 1000
		if tm.tail.list.len() != 2000 || !strings.Contains(view, "Step2000") {
			b.Fatalf("the tail shows %d calls:\n%s", tm.tail.list.len(), view)
		}
		for range 500 {
			frame(keys[r.IntN(len(keys))])
		}
		tailHeapMB = float64(stop()) / (1 << 20)
		liveMB = float64(liveHeap()) / (1 << 20)
		p99 = float64(quantile(frames, 0.99).Microseconds()) / 1000
		cpuP99 = float64(quantile(cpus, 0.99).Microseconds()) / 1000
		b.Logf("frames: wall p50 %s p99 %s, CPU p50 %s p99 %s", quantile(frames, 0.5), quantile(frames, 0.99), quantile(cpus, 0.5), quantile(cpus, 0.99))

		// Still live: a call and an end appended now are shown.
		j, err := journal.OpenJournal(dir)
		if err != nil {
			b.Fatal(err)
		}
		j.Append(&journal.Event{ToolCall: &journal.ToolCall{Tail: "a-226", Tool: "Bash", Summary: "make test", Calls: 2001}})
		j.Append(&journal.Event{TailFinished: &journal.TailFinished{ID: "a-226", Status: journal.StatusPassed, Passed: true, Detail: "make test ok", Calls: 2001}})
		j.Close()
		tm.w.lastScan = time.Time{}
		tm.send(tm.w.poll(time.Now()))
		if n := tm.tail.list.len(); n != 2001 || !strings.Contains(tm.View(), "check: passed — make test ok") {
			b.Fatalf("the live tail did not follow its journal: %d calls", n)
		}
		runtime.KeepAlive(tm)
	}
	b.ReportMetric(openMs, "open-ms")
	b.ReportMetric(baseMs, "base-open-ms")
	b.ReportMetric(baseMs/openMs, "base/open")
	b.ReportMetric(tailMs, "tail-open-ms")
	b.ReportMetric(fullMs, "full-read-ms")
	b.ReportMetric(p99, "frame-p99-ms")
	b.ReportMetric(cpuP99, "frame-cpu-p99-ms")
	b.ReportMetric(heapMB, "heap-MB")
	b.ReportMetric(baseHeapMB, "base-heap-MB")
	b.ReportMetric(tailHeapMB, "tail-heap-MB")
	b.ReportMetric(liveMB, "open-heap-MB")
	b.ReportMetric(0, "ns/op")
}
