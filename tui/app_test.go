package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"tare/engine/journal"
)

// screenOn is a terminal for an entry point: a pty whose far side is drawn by a VT emulator
// that answers the app's queries, as a terminal window would.
type screenOn struct {
	tty  *os.File
	ptmx *os.File
	emu  *vt.SafeEmulator
	done chan struct{}
}

func newScreen(t *testing.T, w, h int) *screenOn {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(w), Rows: uint16(h)})
	s := &screenOn{tty: tty, ptmx: ptmx, emu: vt.NewSafeEmulator(w, h), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			s.emu.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go io.Copy(ptmx, s.emu)
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-s.done
		if c, ok := s.emu.InputPipe().(io.Closer); ok {
			c.Close()
		}
	})
	return s
}

func (s *screenOn) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		text := s.emu.Render() // under the emulator's lock, so the screen is whole
		ok := true
		for _, w := range want {
			if !strings.Contains(text, w) {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q:\n%s", want, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *screenOn) press(t *testing.T, keys string) {
	if _, err := s.ptmx.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
}

// tare: Run on a real terminal shows the home screen from the state directory and quits on q.
func TestRunOnATerminal(t *testing.T) {
	stateDir, _, _ := demoState(t)
	scr := newScreen(t, 120, 32)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{StateDir: stateDir, Engine: newStub(), Agents: []string{"claude"}, Project: demoProject, In: scr.tty, Out: scr.tty})
	}()
	scr.waitFor(t, "Probes", "calibrate-demo", "tare: 0.00")
	scr.press(t, "q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end the app")
	}
	if _, err := os.Stat(stateDir + "/tui.log"); err != nil {
		t.Errorf("no log file in the state directory: %v", err)
	}
}

// tare watch DIR: the app opens straight on the run and has no probes pane.
func TestWatchOneRunDirectory(t *testing.T) {
	_, cal, _ := demoState(t)
	scr := newScreen(t, 120, 32)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, []string{cal}, Options{In: scr.tty, Out: scr.tty}) }()
	scr.waitFor(t, "Tails of calibrate-demo", "Pass rate")
	scr.press(t, "\x1b") // esc: back to the runs, without probes
	scr.waitFor(t, "Runs", "calibrate-demo")
	if strings.Contains(scr.emu.Render(), "Probes") {
		t.Error("tare watch shows a probes pane")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("watch ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end with its context")
	}
	if err := Watch(context.Background(), []string{t.TempDir()}, Options{}); err == nil || !strings.Contains(err.Error(), "fix:") {
		t.Errorf("a folder without a journal: %v", err)
	}
}

// tare calibrate on a terminal: the live view follows the run and ends when it finishes.
func TestLiveRunOnATerminal(t *testing.T) {
	stateDir := t.TempDir()
	r := openRun(t, stateDir, "calibrate", "live")
	r.at(0, journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Budget: 2, Jobs: 1, Sides: []journal.Side{{Key: "a", Agent: "claude"}}}})
	scr := newScreen(t, 100, 30)
	bus := journal.NewBus()
	done := make(chan error, 1)
	go func() {
		done <- LiveRun(context.Background(), LiveOptions{Dir: r.dir, Bus: bus, In: scr.tty, Out: scr.tty})
	}()
	scr.waitFor(t, "Tails of live", "Pass rate")
	for _, e := range []journal.Event{
		{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}},
		{ToolCall: &journal.ToolCall{Tail: "a-0", Tool: "Bash", Summary: "make live-test", Calls: 1}},
	} {
		r.j.Append(&e)
		bus.Publish(e)
	}
	scr.waitFor(t, "a-0", "Bash make live-test")
	e := journal.Event{RunFinished: &journal.RunFinished{Report: "ok"}}
	r.j.Append(&e)
	bus.Publish(e)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the live view did not end with its run")
	}
}
