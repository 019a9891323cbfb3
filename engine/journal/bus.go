package journal

import (
	"context"
	"sync"
	"sync/atomic"
)

// Bus carries a process's events to its subscribers: the app, line printers, the ssh
// server's sessions. The journal is written before an event reaches the bus, so a subscriber
// that falls behind never costs the record anything.
//
// A subscriber has a buffer. Intermediate events (a tool call) are dropped, and counted, when
// its buffer is full; final events (a tail finished, a run finished) wait for room, so they
// always arrive while the subscriber lives.
type Bus struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// NewBus returns a bus with no subscribers.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscription is one subscriber's queue.
type Subscription struct {
	ch      chan Event
	done    chan struct{}
	once    sync.Once
	dropped atomic.Int64
}

// C is the subscriber's channel of events.
func (s *Subscription) C() <-chan Event { return s.ch }

// Dropped counts the intermediate events dropped because the buffer was full.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Subscribe adds a subscriber with a buffer of n events (at least 1). It ends when ctx does.
func (b *Bus) Subscribe(ctx context.Context, n int) *Subscription {
	if n < 1 {
		n = 1
	}
	s := &Subscription{ch: make(chan Event, n), done: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		b.unsubscribe(s)
	}()
	return s
}

func (b *Bus) unsubscribe(s *Subscription) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
	s.once.Do(func() { close(s.done) })
}

// Publish hands e to every subscriber: final events wait for room in each buffer (or for
// the subscriber to end), intermediate ones are dropped where there is none.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	subs := make([]*Subscription, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	for _, s := range subs {
		if e.Final() {
			select {
			case s.ch <- e:
			case <-s.done:
			}
			continue
		}
		select {
		case s.ch <- e:
		default:
			s.dropped.Add(1)
		}
	}
}
