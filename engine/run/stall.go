package run

import (
	"slices"
	"sync"
	"time"

	"tare/engine/journal"
)

// stallPace is how many times its usual gap a tail may be silent: the usual gap is the
// median of its last stallGaps gaps (the median, so one slow start does not hide a stall).
const (
	stallPace = 3
	stallGaps = 5
)

// StallWatch follows one tail's agent: each line of its stream is a beat, and a silence
// past the tail's threshold is published once as Stalled, its end once as Stalled{Over}.
type StallWatch struct {
	run   *Run
	tail  string
	floor time.Duration

	mu      sync.Mutex
	last    time.Time
	gaps    []time.Duration
	stalled bool
	stop    chan struct{}
	done    chan struct{}
}

// WatchStall starts watching a tail from now, each silence of at least floor a stall; End
// ends the watch (when the agent ends).
func WatchStall(r *Run, tail string, floor time.Duration) *StallWatch {
	w := &StallWatch{run: r, tail: tail, floor: floor, last: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(min(max(floor/5, 50*time.Millisecond), 5*time.Second))
	return w
}

// threshold is the silence that is a stall for this tail now. Called with mu held.
func (w *StallWatch) threshold() time.Duration {
	if len(w.gaps) == 0 {
		return w.floor
	}
	g := slices.Clone(w.gaps)
	slices.Sort(g)
	return max(w.floor, stallPace*g[len(g)/2])
}

// Beat is a line of the agent's stream: the agent is working.
func (w *StallWatch) Beat() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if gap := now.Sub(w.last); gap > 0 {
		w.gaps = append(w.gaps, gap)
		if len(w.gaps) > stallGaps {
			w.gaps = w.gaps[1:]
		}
	}
	w.last = now
	if w.stalled {
		w.stalled = false
		_ = w.run.Emit(journal.Event{Stalled: &journal.Stalled{Tail: w.tail, Over: true}})
	}
}

func (w *StallWatch) loop(every time.Duration) {
	defer close(w.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case now := <-t.C:
			w.mu.Lock()
			silent, limit := now.Sub(w.last), w.threshold()
			if !w.stalled && silent > limit {
				w.stalled = true
				_ = w.run.Emit(journal.Event{Stalled: &journal.Stalled{Tail: w.tail, Silent: silent.Seconds(), Threshold: limit.Seconds()}})
			}
			w.mu.Unlock()
		}
	}
}

// End stops the watch and waits for it, so no Stalled follows the tail's end.
func (w *StallWatch) End() {
	close(w.stop)
	<-w.done
}
