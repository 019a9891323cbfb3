package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tare/engine/journal"
	"tare/engine/run"
)

// Launched is a tare process started by Launch: its log file, and whether it has exited.
type Launched struct {
	// Log is the file the process writes its output to.
	Log  string
	name string
	done chan struct{}
}

// Launch starts exe with args in dir, in a session of its own, so closing the app that
// started it or dropping an ssh session never ends it (a run started, resumed or retried
// outlives the app). Its output goes to a log file under <stateDir>/logs named after the
// time and args[0]. The process is reaped in the background.
func Launch(exe, stateDir, dir string, args ...string) (*Launched, error) {
	logs := filepath.Join(stateDir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(logs, fmt.Sprintf("%s-%s.log", time.Now().Format("20060102-150405.000"), args[0]))
	f, err := run.CreateFile(path)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	l := &Launched{Log: path, name: args[0], done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(l.done) }() // reaped here; the run outlives the app
	return l, nil
}

// Done is closed once the process has exited.
func (l *Launched) Done() <-chan struct{} { return l.done }

// Exited reports whether the process has exited.
func (l *Launched) Exited() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// LastLine is the last line the process wrote to its log: the reason, when it failed.
func (l *Launched) LastLine() string {
	data, _ := os.ReadFile(l.Log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return lines[len(lines)-1]
}

// WaitForJournal returns once the process has written the journal of runDir (the run has
// started), or an error with the last line of its log once it has exited, or after limit.
func (l *Launched) WaitForJournal(ctx context.Context, runDir string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(filepath.Join(runDir, journal.JournalFile)); err == nil {
			return nil
		}
		if l.Exited() || time.Now().After(deadline) {
			// The log's line is tare's own ("tare: --side ..."): one prefix is enough.
			return fmt.Errorf("tare %s did not start: %s", l.name, strings.TrimPrefix(l.LastLine(), "tare: "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
