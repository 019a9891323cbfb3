package main

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
