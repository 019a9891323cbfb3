package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// Timings of the bridge. A journal is polled often enough to look live; a frame is the
// least time between two sends, so a burst of events costs one View, not thousands.
const (
	pollEvery = 100 * time.Millisecond
	frameTime = 16 * time.Millisecond
)

// bridge is the one goroutine per program that turns what the journals say into messages.
// It reads everything new since its last send and sends it as one feedMsg, so intermediate
// events are coalesced (never dropped) and final events always arrive. In v1 Send blocks
// until the program takes the message, so while the UI is busy the bridge waits and the
// next feed simply carries more.
type bridge struct {
	w    *watcher
	send func(tea.Msg)
	// wake, when set, says the journal grew (an in-process bus saw an event), so it is read
	// at once instead of at the next poll. See wakeOn.
	wake  <-chan struct{}
	poll  time.Duration
	frame time.Duration
}

func newBridge(w *watcher, send func(tea.Msg)) *bridge {
	return &bridge{w: w, send: send, poll: pollEvery, frame: frameTime}
}

// run reads and sends until ctx ends. Send returns by itself once the program has exited.
// A journal is read when inotify (or the bus) says it changed; the poll only reads what has
// no watch, so an idle app reads nothing.
func (b *bridge) run(ctx context.Context) {
	changes := b.w.follow()
	defer b.w.stop()
	period := b.poll
	tick := time.NewTicker(period)
	defer tick.Stop()
	var pending feedMsg
	var last time.Time
	var flush, rearm <-chan time.Time
	wake, changed := b.wake, changes
	pending.merge(b.w.poll(time.Now()))
	for {
		// An app whose journals all have watches wakes once a scan, not ten times a second.
		if p := b.w.every(b.poll); p != period {
			period = p
			tick.Reset(p)
		}
		if !pending.empty() && flush == nil {
			if wait := b.frame - time.Since(last); wait > 0 {
				flush = time.After(wait)
			} else {
				b.send(pending)
				pending, last = feedMsg{}, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			pending.merge(b.w.poll(time.Now()))
		case _, ok := <-wake:
			if !ok {
				b.wake, wake = nil, nil
				continue
			}
			pending.merge(b.w.poll(time.Now()))
			// At most one early read per frame: a busy bus must not turn into a busy loop.
			wake, changed, rearm = nil, nil, time.After(b.frame)
		case <-changed:
			pending.merge(b.w.poll(time.Now()))
			// As for the bus: a journal written fast is read once a frame, not per write.
			wake, changed, rearm = nil, nil, time.After(b.frame)
		case <-rearm:
			wake, changed, rearm = b.wake, changes, nil
		case <-flush:
			flush = nil
		}
	}
}

// wakeOn turns a bus subscription into a wake signal until ctx ends. The events themselves
// are not used: the journal has them, in order, written before the bus saw them. The
// subscription is drained at once whatever the UI is doing, because the bus makes a final
// event wait for room, and the engine must never wait for a view.
func wakeOn(ctx context.Context, bus *journal.Bus) <-chan struct{} {
	sub := bus.Subscribe(ctx, 64)
	wake := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-sub.C():
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	return wake
}
