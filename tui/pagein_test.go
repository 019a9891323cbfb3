package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	enginerun "tare/engine/run"
)

// TestOpenLogsOverSSHIsTheAppsOwnPager: in an ssh session's app, o on a real run opens its
// report and journal in the app's own pager (the reader page), and o on its tail the tail's
// stream and stderr, escaped and wrapped: what $PAGER shows locally is readable remotely.
func TestOpenLogsOverSSHIsTheAppsOwnPager(t *testing.T) {
	needRooms(t)
	state, dir := realRun(t, quickScript, "true", 1)
	m := newModel(modelConfig{engine: newStub(), styles: asciiStyles(), now: time.Now, agents: []string{"claude"}, probes: true, remote: true})
	tm := &testModel{model: m, t: t, w: newWatcher(state, nil, enginerun.Alive, nil)}
	tm.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	tm.pollNow()
	tm.send(openRunMsg{dir})
	tm.key("o")
	if tm.page() != readerPage {
		t.Fatalf("o over ssh: page %v, status %q", tm.page(), tm.status)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(strings.TrimSpace(string(report)), "\n", 2)[0]
	if v := tm.reader.vp.View(); !strings.Contains(tm.reader.title, "report.txt, journal.jsonl") || !strings.Contains(v, "report.txt ──") || !strings.Contains(v, first[:min(len(first), 60)]) {
		t.Errorf("the app's pager on the run (%s):\n%s", tm.reader.title, v)
	}
	tm.key("esc")
	tm.send(openTailMsg{dir, "a-0"})
	tm.key("o")
	if tm.page() != readerPage || !strings.Contains(tm.reader.title, "stdout.jsonl") {
		t.Fatalf("o on the tail over ssh: page %v, status %q", tm.page(), tm.status)
	}
	tm.key("G")
	for _, l := range strings.Split(tm.reader.vp.View(), "\n") {
		if w := len([]rune(l)); w > tm.reader.vp.Width {
			t.Errorf("a line of %d cells in a page of %d: %q", w, tm.reader.vp.Width, l)
		}
	}
}
