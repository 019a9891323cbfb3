package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"golang.org/x/term"

	"tare/engine/journal"
)

// Options configure the app on a terminal: `tare` (a state directory) or `tare watch`
// (run directories).
type Options struct {
	// StateDir is followed whole: every run below it (<state>/<command>/<name>/) and the
	// probe readings (<state>/probes/). Empty with Dirs set.
	StateDir string
	// Dirs are run directories to follow instead (tare watch DIR...).
	Dirs []string
	// Engine carries out the app's actions; nil makes the app a watcher only.
	Engine Engine
	// Agents are listed in the probes pane even before their first reading.
	Agents []string
	// Project is the folder the app works in: the probes pane shows its readings only.
	Project string
	// Experiments are workshop experiments the Writers pane follows besides those below the
	// state directory's workshop folder (tare watch EXP).
	Experiments []string
	// In and Out default to the process's stdin and stdout.
	In  io.Reader
	Out io.Writer
	// LogFile receives the app's log while it runs (never stdout or stderr). Empty: tui.log
	// in the state directory, or no log when following run directories only.
	LogFile string
}

// Run runs the app on the terminal until the operator quits or ctx ends. Quitting the app
// never stops a run: the engine owns them.
func Run(ctx context.Context, o Options) error {
	if o.StateDir == "" && len(o.Dirs) == 0 {
		return errors.New("tui: no state directory and no run directories to follow; fix: set state_dir in the config or pass run directories to tare watch")
	}
	if o.StateDir != "" {
		if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
			return fmt.Errorf("state directory %s: %v; fix: set state_dir in the config to a folder you can write", o.StateDir, err)
		}
	}
	in, out := o.In, o.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	logger, closeLog, err := openLog(o.LogFile, o.StateDir)
	if err != nil {
		return err
	}
	defer closeLog()
	c := modelConfig{
		ctx: ctx, engine: o.Engine, styles: localStyles(out), log: logger,
		agents: o.Agents, probes: o.StateDir != "", project: o.Project,
		workshop: o.StateDir != "" || len(o.Experiments) > 0, stateDir: o.StateDir, exps: o.Experiments,
	}
	m := newModel(c)
	if len(o.Dirs) == 1 && o.StateDir == "" {
		m.openRun(absDir(o.Dirs[0]))
	}
	var alive func(string) bool
	if o.Engine != nil {
		alive = o.Engine.Alive
	}
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithInput(in), tea.WithOutput(out))
	if _, err = runProgram(ctx, p, m, newBridge(newWatcher(o.StateDir, o.Dirs, alive, logger), p.Send)); err != nil {
		return err
	}
	// Leaving the app stops nothing: say what goes on, on the terminal the app gives back.
	if s := m.goingOn(); s != "" {
		fmt.Fprintln(out, s)
	}
	return nil
}

// goingOn says which runs and writers go on after the app, each named as a command to follow
// it; empty when nothing does.
func (m *model) goingOn() string {
	var runs []string
	for _, dir := range m.env.store.order {
		if m.env.store.run(dir).status() == "live" {
			runs = append(runs, "tare watch "+shellWord(dir))
		}
	}
	var writers []string
	if m.home.writers != nil {
		for _, w := range m.home.writers.rows {
			if w.status == "running" || w.status == "by hand" {
				writers = append(writers, filepath.Base(w.exp)+" "+w.id)
			}
		}
		sort.Strings(writers)
	}
	var parts []string
	switch len(runs) {
	case 0:
	case 1:
		parts = append(parts, "1 run goes on in the background: "+runs[0])
	default:
		parts = append(parts, fmt.Sprintf("%d runs go on in the background: %s", len(runs), strings.Join(runs, "; ")))
	}
	switch len(writers) {
	case 0:
	case 1:
		parts = append(parts, "1 writer goes on: "+writers[0])
	default:
		parts = append(parts, fmt.Sprintf("%d writers go on: %s", len(writers), strings.Join(writers, ", ")))
	}
	switch {
	case len(parts) == 0:
		return ""
	case len(runs)+len(writers) == 1:
		return "tare: " + parts[0] + "; tare shows it again"
	}
	return "tare: " + strings.Join(parts, "; ") + "; tare shows them again"
}

// Watch runs the app on run directories written by any tare process (tare watch DIR...).
// Each must hold a journal; one directory opens straight on its run.
func Watch(ctx context.Context, dirs []string, o Options) error {
	if len(dirs) == 0 {
		return errors.New("tare watch: no run directory given; fix: pass one or more run directories (each holds a journal.jsonl)")
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, journal.JournalFile)); err != nil {
			return fmt.Errorf("tare watch %s: no %s there; fix: pass a run directory (below the state directory, <command>/<name>/)", d, journal.JournalFile)
		}
	}
	o.StateDir, o.Dirs = "", dirs
	return Run(ctx, o)
}

// runProgram runs p with its bridge, and stops the bridge and releases the model after.
func runProgram(ctx context.Context, p *tea.Program, m *model, b *bridge) (*model, error) {
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.run(bctx)
	}()
	m.clock.pace = newPacer(p)
	_, err := p.Run()
	cancel()
	<-done
	m.close()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return m, ctx.Err()
	}
	return m, err
}

// openLog opens the app's log file; without one the log is discarded.
func openLog(path, stateDir string) (*log.Logger, func(), error) {
	if path == "" && stateDir != "" {
		path = filepath.Join(stateDir, "tui.log")
	}
	if path == "" {
		return log.New(io.Discard, "", 0), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("log file %s: %v; fix: make its folder writable", path, err)
	}
	return log.New(f, "", log.LstdFlags), func() { f.Close() }, nil
}

func absDir(d string) string {
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// LiveOptions configure the view a long command (tare calibrate...) shows of its own run.
type LiveOptions struct {
	// Dir is the run's directory; its journal is what is shown.
	Dir string
	// Bus, when the run is in this process, wakes the view as soon as an event is
	// published instead of at the next poll of the journal.
	Bus *journal.Bus
	// Out is where the view (on a terminal) or the lines (otherwise) go; stderr by default,
	// so the report can go to stdout.
	Out *os.File
	// In gives the view its keys; stdin by default.
	In *os.File
	// Engine carries out the view's actions (kill, retry); nil for a view only.
	Engine Engine
	// LogFile receives the view's log; empty: none.
	LogFile string
	// Done, when set, is closed once the command that writes the run has returned: the view
	// ends only then (and once the journal says the run finished), not at the first
	// run_finished in the journal. A cliff's recording finishes its own part of the run long
	// before the search does, and --run opens a recording that finished long ago.
	Done <-chan struct{}
	// Stay keeps the view open on the finished run, to browse it, until q.
	Stay bool
	// Lines prints plain lines even where Out is a terminal: the caller's own output (a
	// report on stdout) goes where no view can be drawn.
	Lines bool
	// After, in lines, starts them after the event with this Seq: a resumed run's earlier
	// events were printed when they happened, and a resume refused in one line prints no
	// more than that line.
	After int64
}

// LiveRun shows a run until it finishes or ctx ends: the live run view when Out (and In) is
// a terminal, one plain line per event otherwise. q leaves the view and prints lines from
// there on; ctrl+c returns ErrInterrupted for the caller to act on.
func LiveRun(ctx context.Context, o LiveOptions) error {
	if o.Out == nil {
		o.Out = os.Stderr
	}
	if o.In == nil {
		o.In = os.Stdin
	}
	o.Dir = absDir(o.Dir)
	var wake <-chan struct{}
	if o.Bus != nil {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		wake = wakeOn(sctx, o.Bus)
	}
	if o.Lines || !term.IsTerminal(int(o.Out.Fd())) || !term.IsTerminal(int(o.In.Fd())) {
		return printLines(ctx, o.Dir, wake, o.Out, o.After, o.Done)
	}
	logger, closeLog, err := openLog(o.LogFile, "")
	if err != nil {
		return err
	}
	defer closeLog()
	m := newModel(modelConfig{ctx: ctx, engine: o.Engine, styles: localStyles(o.Out), log: logger, live: o.Dir, liveDone: o.Done, stay: o.Stay})
	var alive func(string) bool
	if o.Engine != nil {
		alive = o.Engine.Alive
	}
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithAltScreen(), tea.WithInput(o.In), tea.WithOutput(o.Out))
	b := newBridge(newWatcher("", []string{o.Dir}, alive, logger), p.Send)
	b.wake = wake
	if _, err := runProgram(ctx, p, m, b); err != nil {
		return err
	}
	st := m.env.store.run(o.Dir).state
	switch {
	case m.interrupted:
		return ErrInterrupted
	case o.Done != nil && closed(o.Done):
		return nil
	case o.Done == nil && st.Finished:
		return nil
	}
	// q left the view while the run goes on: say so, then follow it in lines.
	fmt.Fprintf(o.Out, "tare: you left the view; the run goes on (ctrl+c stops it), one line per event from here; "+
		"reopen it with: tare watch %s\n", shellWord(o.Dir))
	return printLines(ctx, o.Dir, wake, o.Out, st.Seq, o.Done)
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// shellWord is a path as one word a shell takes as it is, quoted only where it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printLines prints one line per event of the run's journal after Seq from, until the run
// finishes (until closes, when given; see journalEvents) or ctx ends.
func printLines(ctx context.Context, dir string, wake <-chan struct{}, out io.Writer, from int64, until <-chan struct{}) error {
	events, ended := journalEvents(ctx, dir, wake, from, until)
	err := PrintLines(ctx, events, out)
	if rerr := ended(); rerr != nil {
		return rerr
	}
	return err
}

// journalEvents sends the events of the run's journal after Seq from as they are written,
// until the run finishes, the journal cannot be read, or ctx ends. ended waits for the end
// and says why, when it was not the run's. The run finishes at its RunFinished, or, when until
// is given, once until has closed and the journal has been read after it: the command writing
// the run has returned (a cliff's recording writes a RunFinished long before the search ends).
func journalEvents(ctx context.Context, dir string, wake <-chan struct{}, from int64, until <-chan struct{}) (events <-chan journal.Event, ended func() error) {
	ch := make(chan journal.Event)
	done := make(chan error, 1)
	go func() {
		defer close(ch)
		f := newFollower(dir)
		f.seq = from
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			last := until != nil && closed(until) // everything the command wrote is there now
			events, err := f.poll()
			if err != nil && !os.IsNotExist(err) {
				done <- err
				return
			}
			for _, e := range events {
				select {
				case ch <- e:
				case <-ctx.Done():
					done <- ctx.Err()
					return
				}
				if e.RunFinished != nil && until == nil {
					done <- nil
					return
				}
			}
			if last {
				done <- nil
				return
			}
			select {
			case <-ctx.Done():
				done <- ctx.Err()
				return
			case <-t.C:
			case <-wake:
			case <-until:
			}
		}
	}()
	return ch, func() error { return <-done }
}
