package tui

import (
	"reflect"
	"sync"
	"time"
	"unsafe"

	tea "github.com/charmbracelet/bubbletea"
)

// A Bubble Tea program's renderer wakes at its frame rate for as long as the program runs,
// to see whether the view changed: 20 times a second per ssh session, 60 in a terminal,
// whatever the app shows. That was most of an idle app's CPU (five idle sessions: ~1% of a
// core; at one frame a second, 0.12%). The view only changes after a message, and every
// message goes through the model's Update, so a pacer stops the renderer's ticker a few
// frames after the last message and starts it again on the next: an idle app does not wake.
//
// Bubble Tea (v1.3) offers no way to do this, so the pacer reaches the standard renderer's
// ticker by reflection. If the renderer is not the one it knows (another version, no
// renderer), the pacer does nothing and the renderer ticks as before;
// TestPacerStopsTheRendererWhenIdle fails then, so an upgrade cannot lose it unnoticed.

// idleFrames is how many frames the renderer keeps ticking after the last message: the
// view written after it is drawn on the first.
const idleFrames = 3

// pacer starts and stops one program's renderer.
type pacer struct {
	p *tea.Program

	mu      sync.Mutex
	looked  bool
	ticker  *time.Ticker // the renderer's; nil if it could not be found
	frame   time.Duration
	running bool
	idle    *time.Timer
}

func newPacer(p *tea.Program) *pacer { return &pacer{p: p, running: true} }

// wake makes the renderer tick (a message came: the view may change) and stop again
// idleFrames frames after the last wake. It runs on the program's event loop (in Update),
// after the program has started its renderer.
func (pc *pacer) wake() {
	if pc == nil {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !pc.looked {
		pc.looked = true
		pc.ticker, pc.frame = rendererTicker(pc.p)
	}
	if pc.ticker == nil {
		return
	}
	if !pc.running {
		pc.ticker.Reset(pc.frame)
		pc.running = true
	}
	d := idleFrames * pc.frame
	if pc.idle == nil {
		pc.idle = time.AfterFunc(d, pc.sleep)
	} else {
		pc.idle.Reset(d)
	}
}

// sleep stops the renderer's ticker.
func (pc *pacer) sleep() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.running {
		pc.ticker.Stop()
		pc.running = false
	}
}

// state reports whether the pacer has found the renderer's ticker and whether it runs.
func (pc *pacer) state() (found, ticking bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.ticker != nil, pc.ticker != nil && pc.running
}

// rendererTicker finds the ticker and frame period of p's standard renderer, or nil.
func rendererTicker(p *tea.Program) (*time.Ticker, time.Duration) {
	rv := reflect.ValueOf(p).Elem().FieldByName("renderer")
	if !rv.IsValid() || rv.Kind() != reflect.Interface || rv.IsNil() {
		return nil, 0
	}
	r := rv.Elem()
	if r.Kind() != reflect.Pointer || r.Elem().Kind() != reflect.Struct || r.Elem().Type().Name() != "standardRenderer" {
		return nil, 0
	}
	s := r.Elem()
	tf, ff := s.FieldByName("ticker"), s.FieldByName("framerate")
	if !tf.IsValid() || !ff.IsValid() || tf.Type() != reflect.TypeOf((*time.Ticker)(nil)) || ff.Type() != reflect.TypeOf(time.Duration(0)) {
		return nil, 0
	}
	ticker := *(**time.Ticker)(unsafe.Pointer(tf.UnsafeAddr()))
	frame := *(*time.Duration)(unsafe.Pointer(ff.UnsafeAddr()))
	if ticker == nil || frame <= 0 {
		return nil, 0
	}
	return ticker, frame
}
