package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tare/config"
	"tare/engine"
	"tare/engine/journal"
	"tare/tui"

	"golang.org/x/term"
)

// printReport prints a run's report on stdout: its text, or report.json with asJSON.
func printReport(dir, text string, asJSON bool) error {
	if !asJSON {
		fmt.Print(journal.Printable(text))
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, engine.ReportFile))
	if os.IsNotExist(err) {
		// A judge-noise run's JSON report is its judgements.json.
		if judged, jerr := os.ReadFile(filepath.Join(dir, "judgements.json")); jerr == nil {
			data, err = judged, nil
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %v; the run has no JSON report (a run from an older tare): read report.txt", dir, err)
	}
	_, err = os.Stdout.Write(data)
	return err
}

// showRun runs a long command and shows the run it writes: the live run view when stdout
// and stdin are a terminal (quitting it with ctrl+c stops the run, which tare resume finishes
// later; q leaves it running with plain lines), one line per event on stderr otherwise. run
// is told which, so it can print its own progress lines only where they do not break the
// view, and calls started with the run's folder once it exists: nothing is shown before, so
// bad input is one line, not a view that opens and closes.
func showRun(ctx context.Context, cfg *config.Config, bus *journal.Bus, run func(ctx context.Context, lines bool, started func(dir string)) error) error {
	return showRunAfter(ctx, cfg, bus, 0, run)
}

// showRunAfter is showRun whose lines (without a terminal) start after the journal's event
// after: tare resume prints only what the resume adds.
func showRunAfter(ctx context.Context, cfg *config.Config, bus *journal.Bus, after int64, run func(ctx context.Context, lines bool, started func(dir string)) error) error {
	lines := !term.IsTerminal(int(os.Stdout.Fd())) || !term.IsTerminal(int(os.Stdin.Fd()))
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	viewCtx, stopView := context.WithCancel(ctx)
	defer stopView()
	dirs := make(chan string, 1)
	started := func(dir string) {
		select {
		case dirs <- dir:
		default: // the run's folder is the first one named
		}
	}
	done := make(chan error, 1)
	returned := make(chan struct{}) // the view ends once the command has, not at the journal's first run_finished
	go func() {
		err := run(runCtx, lines, started)
		if err != nil && !lines {
			stopView()
		}
		close(returned)
		done <- err
	}()
	var dir string
	select {
	case dir = <-dirs:
	case <-returned:
		select {
		case dir = <-dirs:
		default:
			return stopped(ctx, "", <-done) // it ended before its run had a folder
		}
	}
	if lines {
		printLines(ctx, dir, bus, returned, after)
		return stopped(ctx, dir, <-done)
	}
	eng, err := newAppEngine(cfg)
	if err != nil {
		stopRun()
		<-done
		return err
	}
	switch err := tui.LiveRun(viewCtx, tui.LiveOptions{Dir: dir, Bus: bus, Engine: eng, Done: returned, Stay: stayInView}); {
	case errors.Is(err, tui.ErrInterrupted):
		stopRun()
		<-done // whatever it ended with (a room "stopped: context canceled"), the operator stopped it
		return stoppedRun{dir}
	case err != nil && viewCtx.Err() == nil:
		// The view failed while the run goes on: say so, and follow the run in lines.
		fmt.Fprintf(os.Stderr, "tare: the live view ended: %v; the run goes on, one line per event\n", err)
		printLines(ctx, dir, bus, returned, after)
	}
	return stopped(ctx, dir, <-done)
}

// printLines prints the run's journal in dir as lines on stderr until the command writing it
// has returned (returned closes) and its last events are printed. A signal does not cut them
// short: the stop's own events (tails stopped, the run's end) are the lines that say what
// happened.
func printLines(ctx context.Context, dir string, bus *journal.Bus, returned <-chan struct{}, after int64) {
	// stderr gone, or a journal that cannot be read: the run goes on, and its error is the
	// command's to report.
	_ = tui.LiveRun(context.WithoutCancel(ctx), tui.LiveOptions{Dir: dir, Bus: bus, Done: returned, Lines: true, After: after})
}

// stoppedRun is a run the operator stopped (ctrl+c, or a signal): not an error of the
// command's, and its message says how to finish it, as a command to paste.
type stoppedRun struct{ dir string }

func (s stoppedRun) Error() string {
	if s.dir == "" {
		return "stopped; a run it stopped is finished with tare resume DIR"
	}
	return "stopped; what finished is kept, and the rest is finished with: tare resume " + quoteArgs([]string{s.dir})
}

// stopped is err, or stoppedRun when a signal ended ctx: the command's error is then the
// stop's doing (a room "stopped: context canceled", a tail cut short).
func stopped(ctx context.Context, dir string, err error) error {
	if err != nil && ctx.Err() != nil {
		return stoppedRun{dir}
	}
	return err
}

// analysis runs one analysis under showRun and prints what it found: the report.txt it
// wrote, or its result as JSON.
func analysis(ctx context.Context, cfg *config.Config, bus *journal.Bus, asJSON bool,
	run func(ctx context.Context, progress io.Writer, started func(dir string)) (string, any, error)) error {
	var dir string
	var res any
	err := showRun(ctx, cfg, bus, func(ctx context.Context, lines bool, started func(string)) error {
		var progress io.Writer
		if lines {
			progress = os.Stderr
		}
		var err error
		dir, res, err = run(ctx, progress, started)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	fmt.Print(journal.Printable(string(report)))
	return err
}
