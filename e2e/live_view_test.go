package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoCliffLiveViewStaysUntilTheReport: tare demo cliff on a real terminal (tmux) with the
// real codex CLI on tare's model server. The recording is the cliff's first part and writes
// its own run_finished into the run's journal; the live view must not end there (it did: the
// rest of the search ran behind a blank screen). While the cliff's own report is not yet in
// the journal the view is on the screen (tmux's alternate screen, with the run's view on it);
// once the command ends its report is printed.
func TestDemoCliffLiveViewStaysUntilTheReport(t *testing.T) {
	r := newRun(t, "")
	x := startTmux(t, r.home, append(append([]string{"env", "-i"}, append(r.env(), "TERM=tmux-256color")...), tareBin, "demo", "cliff", "--side", "codex", "--budget", "9")...)
	journalOf := func() string {
		dirs, _ := filepath.Glob(filepath.Join(r.stateDir(), "cliff", "*", "journal.jsonl"))
		if len(dirs) != 1 {
			return ""
		}
		data, _ := os.ReadFile(dirs[0])
		return string(data)
	}
	searched := false // a cliff tail has started: the recording's part is over
	deadline := time.Now().Add(20 * time.Minute)
	for {
		// The screen first, then the journal: a view found gone while the journal (read after)
		// still lacks the cliff's report was gone before the report.
		alt, err := x.cmd("display-message", "-p", "-t", "e2e", "#{alternate_on}").Output()
		if err != nil {
			t.Fatalf("tmux display-message: %v", err)
		}
		screen := x.capture()
		j := journalOf()
		finished := strings.Count(j, `"run_finished"`)
		if strings.Contains(j, `"tail_started"`) && strings.Contains(j, `"cliff-`) {
			searched = true
		}
		if exitLine.MatchString(x.captureFrom("-")) {
			break
		}
		if searched && finished < 2 && strings.TrimSpace(string(alt)) != "1" {
			t.Fatalf("the cliff's search is running (journal: %d run_finished) but the live view is gone; the screen:\n%s", finished, screen)
		}
		if time.Now().After(deadline) {
			t.Fatalf("tare demo cliff has not ended in 20 minutes; the screen:\n%s", screen)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !searched {
		t.Fatalf("the cliff ended without starting a tail; its journal:\n%s", journalOf())
	}
	if code := x.exited(time.Minute); code != 0 {
		t.Errorf("tare demo cliff exited %d", code)
	}
	if out := x.captureFrom("-"); !strings.Contains(out, "of a budget of 9") {
		t.Errorf("the cliff's report was not printed after the view:\n%s", out)
	}
}

// alternate says whether the pane shows a full-screen program (the live view) now.
func (x *tmuxPane) alternate() bool {
	x.t.Helper()
	out, err := x.cmd("display-message", "-p", "-t", "e2e", "#{alternate_on}").Output()
	if err != nil {
		x.t.Fatalf("tmux display-message: %v", err)
	}
	return strings.TrimSpace(string(out)) == "1"
}

// waitAlternate waits until the pane shows the live view.
func (x *tmuxPane) waitAlternate(within time.Duration) {
	x.t.Helper()
	x.waitFor("the live view", within, func(string) bool { return x.alternate() })
}

// TestLeavingTheLiveViewSaysWhatGoesOn: tare demo on a real terminal with the real codex CLI.
// q leaves the view and says the run goes on, that ctrl+c stops it and how to reopen it, then
// follows the run in lines to its report; ctrl+c in the view stops the run with the command
// that finishes it (exit 130, not "context canceled" and 2); --stay keeps the view on the
// finished run until q.
func TestLeavingTheLiveViewSaysWhatGoesOn(t *testing.T) {
	demo := func(r *run, extra ...string) *tmuxPane {
		argv := append(append([]string{"env", "-i"}, append(r.env(), "TERM=tmux-256color")...), tareBin)
		argv = append(append(argv, extra...), "demo", "--runs", "2", "--sides", "codex,codex")
		return startTmux(t, r.home, argv...)
	}
	t.Run("q", func(t *testing.T) {
		r := newRun(t, "")
		x := demo(r)
		x.waitAlternate(5 * time.Minute)
		x.keys("q")
		x.waitText(time.Minute, "you left the view; the run goes on (ctrl+c stops it)", "reopen it with: tare watch ")
		if code := x.exited(20 * time.Minute); code != 0 {
			t.Errorf("tare demo exited %d after q", code)
		}
		if out := x.captureFrom("-"); !strings.Contains(out, "tare calibrate") && !strings.Contains(out, "passed") {
			t.Errorf("no report after the lines:\n%s", out)
		}
	})
	t.Run("ctrl+c", func(t *testing.T) {
		r := newRun(t, "")
		x := demo(r)
		x.waitAlternate(5 * time.Minute)
		x.keys("C-c")
		code := x.exited(5 * time.Minute)
		out := strings.ReplaceAll(x.captureFrom("-"), "\n", "") // the line wraps at the pane's width
		if code != 130 || !strings.Contains(out, "tare: stopped; what finished is kept, and the rest is finished with: tare resume "+r.stateDir()) {
			t.Errorf("ctrl+c in the view: exit %d, want 130 and the resume command:\n%s", code, out)
		}
		if strings.Contains(out, "context canceled") {
			t.Errorf("ctrl+c in the view printed a context error:\n%s", out)
		}
	})
	t.Run("stay", func(t *testing.T) {
		r := newRun(t, "")
		x := demo(r, "--stay")
		x.waitAlternate(5 * time.Minute)
		x.waitText(20*time.Minute, "the run is over; browse it, q leaves")
		if !x.alternate() {
			t.Fatal("--stay: the view closed when the run ended")
		}
		x.keys("q")
		if code := x.exited(time.Minute); code != 0 {
			t.Errorf("--stay: exit %d after q", code)
		}
	})
}
