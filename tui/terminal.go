package tui

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// keyQueue is how many writes of keys wait for a program that is slow to read them; more
// are dropped, and said to be.
const keyQueue = 1024

// hangupGrace is how long a program gets to exit after its terminal hangs up before it is
// killed.
const hangupGrace = 2 * time.Second

// Terminal is a program on a pty, drawn inside the app through a VT emulator: an attached
// agent, a manual workshop writer. Three goroutines serve it: the pump feeds what the
// program writes to the emulator, the answerer copies the emulator's replies to terminal
// queries back to the program (without it the first query would hang the pump), and the
// typist writes the keys to the pty in the order they were typed. Keys are queued, never
// written from the UI goroutine: a program that stops reading its terminal fills the pty's
// buffer, and a write would then stall the whole app.
type Terminal struct {
	name string
	cmd  *exec.Cmd
	pty  *os.File
	emu  *vt.SafeEmulator

	mu   sync.Mutex // guards w, h and the pty's size together with the emulator's
	w, h int

	appCursor atomic.Bool // DECCKM: arrows send ESC O x
	bracketed atomic.Bool // bracketed paste

	keys  chan []byte   // typed, for the typist; full: the program is not reading
	typed chan struct{} // closed when the typist has stopped
	quit  chan struct{} // closed by Close: the typist stops

	changed chan struct{} // size 1: output arrived since the last frame
	exited  chan struct{} // closed when the program has exited
	pumped  chan struct{} // closed when the pump has stopped
	err     error         // the program's exit, once exited is closed
	closing sync.Once
}

// StartTerminal starts cmd on a new pty of w×h cells. The program runs in a session of its
// own (it is the pty's session leader), so closing the terminal reaches all it started.
func StartTerminal(name string, cmd *exec.Cmd, w, h int) (*Terminal, error) {
	w, h = max(w, 2), max(h, 1)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "TERM=xterm-256color", "COLORTERM=truecolor")
	started, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(w), Rows: uint16(h)})
	if err != nil {
		return nil, fmt.Errorf("terminal %s: starting %s on a pty: %v", name, cmd.Path, err)
	}
	f, err := pollable(started)
	if err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		return nil, fmt.Errorf("terminal %s: %v", name, err)
	}
	t := &Terminal{
		name: name, cmd: cmd, pty: f, emu: vt.NewSafeEmulator(w, h), w: w, h: h,
		changed: make(chan struct{}, 1), exited: make(chan struct{}), pumped: make(chan struct{}),
		keys: make(chan []byte, keyQueue), typed: make(chan struct{}), quit: make(chan struct{}),
	}
	t.emu.SetCallbacks(vt.Callbacks{
		EnableMode:  func(m ansi.Mode) { t.mode(m, true) },
		DisableMode: func(m ansi.Mode) { t.mode(m, false) },
	})
	go t.pump()
	go t.answer()
	go t.typist()
	go t.wait()
	return t, nil
}

// pollable gives the pty's master back to Go's poller. creack/pty sizes the pty through
// File.Fd, which turns the descriptor blocking for good; a blocking write to a program that
// reads nothing then never returns, and closing the file does not wake it (the close waits
// for the write). A non-blocking master is closed under a pending read or write at once.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the pty: %v", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("making the pty non-blocking: %v", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// setsize sizes the pty without File.Fd, so the master stays non-blocking.
func setsize(f *os.File, w, h int) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := sc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(w), Row: uint16(h)})
	}); err != nil {
		return err
	}
	return ioErr
}

func (t *Terminal) mode(m ansi.Mode, on bool) {
	switch m {
	case ansi.ModeCursorKeys:
		t.appCursor.Store(on)
	case ansi.ModeBracketedPaste:
		t.bracketed.Store(on)
	}
}

// pump feeds the program's output to the emulator until the pty closes.
func (t *Terminal) pump() {
	defer close(t.pumped)
	buf := make([]byte, 32<<10)
	for {
		n, err := t.pty.Read(buf)
		if n > 0 {
			t.emu.Write(buf[:n])
			select {
			case t.changed <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// answer copies the emulator's replies (cursor position, device attributes) to the program.
// Once the pty is gone it keeps draining them, so the pump never blocks on a reply.
func (t *Terminal) answer() {
	io.Copy(t.pty, t.emu)
	io.Copy(io.Discard, t.emu)
}

// typist writes the queued keys to the pty until Close. A write waits while the program
// does not read; Close ends it by closing the pty, which wakes the write (the master is
// non-blocking, see pollable).
func (t *Terminal) typist() {
	defer close(t.typed)
	for {
		select {
		case b := <-t.keys:
			_, _ = t.pty.Write(b) // fails only once the pty is closed, and Close then quits
		case <-t.quit:
			return
		}
	}
}

func (t *Terminal) wait() {
	t.err = t.cmd.Wait()
	close(t.exited)
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// Name is what the pane's title calls the program.
func (t *Terminal) Name() string { return t.name }

// Changed signals that the screen changed since it was last drawn.
func (t *Terminal) Changed() <-chan struct{} { return t.changed }

// Exited is closed once the program has exited; Err then says how.
func (t *Terminal) Exited() <-chan struct{} { return t.exited }

// Err is the program's exit (nil for status 0); only meaningful after Exited.
func (t *Terminal) Err() error { return t.err }

// Done reports whether the program has exited.
func (t *Terminal) Done() bool {
	select {
	case <-t.exited:
		return true
	default:
		return false
	}
}

// Write queues bytes for the program as typed input and returns at once; when the queue is
// full (the program has stopped reading) they are dropped with an error.
func (t *Terminal) Write(p []byte) (int, error) {
	if t.Done() {
		return 0, fmt.Errorf("terminal %s: the program has exited", t.name)
	}
	select {
	case t.keys <- append([]byte(nil), p...):
		return len(p), nil
	case <-t.quit:
		return 0, fmt.Errorf("terminal %s: closed", t.name)
	default:
		return 0, fmt.Errorf("terminal %s: the program is not reading its input; keys dropped (ctrl+] returns to tare)", t.name)
	}
}

// SendKey types one key, encoded as a VT terminal would send it.
func (t *Terminal) SendKey(k tea.KeyMsg) error {
	b := keyBytes(k, t.appCursor.Load(), t.bracketed.Load())
	if len(b) == 0 {
		return nil
	}
	_, err := t.Write(b)
	return err
}

// Resize gives the program a new size: the pty (which signals it) and the emulator change
// together, so what it draws next fits what the app shows.
func (t *Terminal) Resize(w, h int) error {
	w, h = max(w, 2), max(h, 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if w == t.w && h == t.h {
		return nil
	}
	t.emu.Resize(w, h)
	t.w, t.h = w, h
	if err := setsize(t.pty, w, h); err != nil && !t.Done() {
		return fmt.Errorf("terminal %s: resize to %dx%d: %v", t.name, w, h, err)
	}
	return nil
}

// Size is the terminal's size in cells.
func (t *Terminal) Size() (w, h int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w, t.h
}

// Screen is the screen's text, one line per row, without styles.
func (t *Terminal) Screen() string { return ansi.Strip(t.emu.Render()) }

// view draws the screen in w×h cells; plain drops styles (an ASCII session), cursor shows
// where the program's cursor is.
func (t *Terminal) view(s styles, cursor bool) string {
	out := t.emu.Render()
	if s.ascii {
		out = ansi.Strip(out)
	}
	lines := strings.Split(out, "\n")
	if cursor && !t.Done() && !t.emu.CursorHidden() {
		pos := t.emu.CursorPosition()
		if pos.Y >= 0 && pos.Y < len(lines) {
			l := lines[pos.Y]
			if pad := pos.X + 1 - ansi.StringWidth(l); pad > 0 {
				l += strings.Repeat(" ", pad)
			}
			under := ansi.Strip(ansi.Cut(l, pos.X, pos.X+1))
			if under == "" {
				under = " "
			}
			mark := s.cursor.Render(under)
			if s.ascii {
				mark = "█"
			}
			lines[pos.Y] = ansi.Cut(l, 0, pos.X) + mark + ansi.Cut(l, pos.X+1, ansi.StringWidth(l))
		}
	}
	return strings.Join(lines, "\n")
}

// Close hangs up: the pty closes (the kernel sends SIGHUP to the program's session), the
// program gets hangupGrace to exit, then its process group is killed. The goroutines end.
func (t *Terminal) Close() error {
	var err error
	t.closing.Do(func() {
		pid := t.cmd.Process.Pid
		if !t.Done() {
			syscall.Kill(-pid, syscall.SIGHUP)
		}
		t.pty.Close()
		close(t.quit)
		select {
		case <-t.exited:
		case <-time.After(hangupGrace):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-t.exited
		}
		<-t.pumped
		<-t.typed
		// End the answerer by closing the emulator's reply pipe. (Emulator.Close would do it
		// too, but it flips a flag that Read checks without a lock.)
		if c, ok := t.emu.InputPipe().(io.Closer); ok {
			c.Close()
		}
		var exit *exec.ExitError
		if t.err != nil && !errors.As(t.err, &exit) {
			err = t.err
		}
	})
	return err
}
