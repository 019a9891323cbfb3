package tui

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"tare/engine"
	"tare/engine/journal"
	"tare/sandbox"
)

// tailDetailMsg is a tail's detail (its calls as the agent's stream tells them, its stderr,
// its check), read off the UI goroutine.
type tailDetailMsg struct {
	dir, tail string
	detail    *journal.TailDetail
	err       error
	// stream is the agent's stream file as it was read (its size and last write).
	stream streamMark
	// same says the stream had not grown since the last read: detail is nil, nothing changed.
	same bool
}

// streamMark is a tail's stream file's size and last write: the last write of a stream whose
// last line starts a tool call is when that call began.
type streamMark struct {
	size int64
	at   time.Time
}

// streamFile is the file a tail's agent streams to.
func streamFile(dir, id string) string { return filepath.Join(dir, "tails", id, "stdout.jsonl") }

func loadDetail(dir, id string) tea.Cmd { return loadDetailSince(dir, id, streamMark{size: -1}) }

// loadDetailSince reads the detail again only if the agent's stream moved past last: the
// clock asks once a second while a tail runs, and a call in flight writes nothing.
func loadDetailSince(dir, id string, last streamMark) tea.Cmd {
	return func() tea.Msg {
		var mark streamMark
		if fi, err := os.Stat(streamFile(dir, id)); err == nil {
			mark = streamMark{fi.Size(), fi.ModTime()}
		}
		if last.size >= 0 && mark == last {
			return tailDetailMsg{dir: dir, tail: id, stream: mark, same: true}
		}
		d, err := journal.ReadTailDetail(dir, id)
		return tailDetailMsg{dir: dir, tail: id, detail: d, err: err, stream: mark}
	}
}

// detailText is what the detail pane shows for step (1-based), wrapped to w cells: the call
// (its input, its output, the agent's text before it), then the tail (how the agent and the
// check ended, the agent's last words and the end of its stderr).
func detailText(s styles, d *journal.TailDetail, step, w int) string {
	if d == nil {
		return s.tone(dim, "reading the tail's stream…")
	}
	w = max(w, 20)
	var b strings.Builder
	field := func(label, text string) {
		if strings.TrimSpace(text) == "" {
			return
		}
		body := ansi.Wrap(text, w-9, " ")
		for i, l := range strings.Split(body, "\n") {
			if i == 0 {
				b.WriteString(s.tone(dim, fmt.Sprintf("%-8s ", label)) + l + "\n")
			} else {
				b.WriteString("         " + l + "\n")
			}
		}
	}
	if step >= 1 && step <= len(d.Calls) {
		c := d.Calls[step-1]
		b.WriteString(s.tone(accent, fmt.Sprintf("step %d · %s", step, c.Tool)) + "\n")
		field("before", c.Before)
		field("input", c.Input)
		out := c.Output
		if c.IsError {
			out = s.tone(bad, "error: ") + out
		}
		if out == "" {
			out = s.tone(dim, "(no output yet)")
		}
		field("output", out)
	} else if step > 0 {
		b.WriteString(s.tone(dim, fmt.Sprintf("step %d is not in the agent's stream yet", step)) + "\n")
	}
	b.WriteString("\n" + s.tone(accent, "the tail") + "\n")
	field("agent", d.AgentExit)
	field("check", d.Check)
	field("printed", d.CheckLog)
	field("after", d.After)
	field("stderr", d.Stderr)
	if d.AgentExit == "" && d.Check == "" && d.CheckLog == "" && d.After == "" && d.Stderr == "" {
		b.WriteString(s.tone(dim, "nothing yet: the agent has not ended") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// pagerMsg asks to open files in the operator's $PAGER.
type pagerMsg struct{ files []string }

// pagerDoneMsg is the pager's end.
type pagerDoneMsg struct{ err error }

// openPager runs $PAGER (less when unset) on files, giving it the terminal until it ends.
func (m *model) openPager(files []string) tea.Cmd {
	if len(files) == 0 {
		m.note("no files to show yet")
		return nil
	}
	if m.remote {
		// $PAGER would run on the server, not on the operator's terminal: the app's own
		// pager shows the files instead, wrapped to the page.
		return pageFiles(files, max(m.scr.body.W-2, 20))
	}
	// The files hold what the agent wrote (its stderr, its stream): paged as they are, an
	// escape sequence in them reaches the terminal raw with `less -R` or PAGER=cat. The pager
	// gets escaped copies, removed when it ends.
	dir, copies, err := printableCopies(files)
	if err != nil {
		m.fail(fmt.Errorf("pager: %v", err))
		return nil
	}
	argv := strings.Fields(os.Getenv("PAGER"))
	if len(argv) == 0 {
		argv = []string{"less"}
	}
	bin, err := pagerBin(argv[0])
	if err != nil {
		os.RemoveAll(dir)
		m.fail(fmt.Errorf("pager: %v", err))
		return nil
	}
	cmd := exec.Command(bin, append(argv[1:], copies...)...)
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		os.RemoveAll(dir)
		return pagerDoneMsg{err}
	})
}

// pagerBin is the pager to run for name, $PAGER's first word: never a program from a PATH
// entry an agent can write (engine.HostProgram), nor a path given in $PAGER that lies in one.
func pagerBin(name string) (string, error) {
	if !strings.Contains(name, "/") {
		return engine.HostProgram(nil, name)
	}
	if !filepath.IsAbs(name) {
		return "", fmt.Errorf("PAGER=%s is a relative path, which names a program in the working folder; fix: give the pager's name or its full path", name)
	}
	return sandbox.LookHost(sandbox.HostProgram{Name: filepath.Base(name), Path: name, From: "$PAGER"})
}

// pagerMax is how much of each file the pager is given: an agent decides how big its
// stream and stderr grow.
const pagerMax = 32 << 20

// printableCopies writes each file, made printable (engine.Printable) and cut at pagerMax,
// into a new temporary folder under its own name, and returns the folder and the copies.
func printableCopies(files []string) (string, []string, error) {
	dir, err := os.MkdirTemp("", "tare-pager-")
	if err != nil {
		return "", nil, err
	}
	var out []string
	for i, f := range files {
		data, err := readCapped(f, pagerMax)
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		// A number in front keeps two files of the same name (a run's and a tail's) apart.
		c := filepath.Join(dir, fmt.Sprintf("%d-%s", i+1, filepath.Base(f)))
		if err := os.WriteFile(c, []byte(journal.Printable(string(data))), 0o600); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		out = append(out, c)
	}
	return dir, out, nil
}

// inAppMax is how much of each file the app's own pager shows: it holds the text in memory.
const inAppMax = 4 << 20

// pageFiles reads files off the UI goroutine for the app's own pager (the reader page), each
// under a line naming it, escaped and wrapped to w cells.
func pageFiles(files []string, w int) tea.Cmd {
	return func() tea.Msg {
		var b strings.Builder
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = filepath.Base(f)
			data, err := readCapped(f, inAppMax+1)
			if err != nil {
				return readerMsg{err: fmt.Errorf("open logs: %v", err)}
			}
			cut := len(data) > inAppMax
			if cut {
				data = data[:inAppMax]
			}
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "── %s ──\n", tildePath(f))
			b.WriteString(ansi.Hardwrap(journal.Printable(strings.TrimRight(string(data), "\n")), w, true))
			b.WriteString("\n")
			if cut {
				fmt.Fprintf(&b, "(the first %d MB of it; the whole file is %s on the server)\n", inAppMax>>20, tildePath(f))
			}
		}
		return readerMsg{title: "Logs · " + strings.Join(names, ", "), text: b.String()}
	}
}

// readCapped reads at most max bytes of path.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// runFiles are a run's report and journal, for a pager.
func runFiles(dir string) []string {
	var out []string
	for _, name := range []string{"report.txt", journal.JournalFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

// newDetailPane is the detail pane's viewport.
func newDetailPane() *viewport.Model {
	vp := viewport.New(0, 0)
	return &vp
}
