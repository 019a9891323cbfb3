package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tare/agent"
)

// CallDetail is one tool call of a tail as its agent's stream tells it: what it was given,
// what it returned (both clipped as the live view clips them), and what the agent wrote
// before it. Every text is agent output: Printable.
type CallDetail struct {
	Tool, Input, Output string
	IsError             bool
	// Before is the agent's text between the previous call and this one.
	Before string
}

// TailDetail is what a tail did, for the app's detail pane: each call, the agent's last
// words, its stderr's end, and how the agent and the check ended.
type TailDetail struct {
	Calls []CallDetail
	// After is the agent's text after its last call (its final answer).
	After string
	// Stderr is the end of the agent's stderr (at most stderrTail bytes).
	Stderr string
	// AgentExit and Check are result.json's lines, once the tail has ended.
	AgentExit, Check string
	// CheckLog is the end of what the check printed (check.log), Printable.
	CheckLog string
}

// stderrTail is how much of the end of a tail's stderr the detail keeps.
const stderrTail = 4 << 10

// TailFiles are a tail's own files, for a pager: its result, the agent's stderr and stream.
func TailFiles(runDir, tailID string) []string {
	dir := filepath.Join(runDir, "tails", tailID)
	var out []string
	for _, name := range []string{"result.json", "check.log", "stderr.log", "stdout.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

// ReadTailDetail reads a tail's stream, stderr and result from its folder. A live tail's
// files are read as far as they are written.
func ReadTailDetail(runDir, tailID string) (*TailDetail, error) {
	events, err := ReadJournalOutline(runDir)
	if err != nil {
		return nil, err
	}
	return readTailDetail(runDir, Replay(filepath.Base(runDir), events), tailID)
}

// readTailDetail is ReadTailDetail with the run's state read already.
func readTailDetail(runDir string, st *RunState, tailID string) (*TailDetail, error) {
	t := st.Tails[tailID]
	if t == nil {
		return nil, fmt.Errorf("%s has no tail %s", runDir, tailID)
	}
	name := ""
	for _, s := range st.Sides {
		if s.Key == t.Side {
			name = s.Agent
		}
	}
	a, err := agent.ByName(name)
	if err != nil {
		return nil, fmt.Errorf("tail %s: side %s: %v", tailID, t.Side, err)
	}
	dir := filepath.Join(runDir, "tails", tailID)
	d := &TailDetail{}
	if f, err := os.Open(filepath.Join(dir, "stdout.jsonl")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		byID := map[string]int{}
		var text []string
		for sc.Scan() {
			l, ok := agent.ParseLine(a, sc.Bytes())
			if !ok {
				continue
			}
			switch l.Kind {
			case agent.LiveToolStart:
				if i, seen := byID[l.ID]; seen && l.ID != "" { // Codex repeats a call when it completes
					d.Calls[i].Input = Printable(l.Summary)
					continue
				}
				byID[l.ID] = len(d.Calls)
				d.Calls = append(d.Calls, CallDetail{Tool: Printable(l.Tool), Input: Printable(l.Summary), Before: Printable(strings.Join(text, "\n"))})
				text = nil
			case agent.LiveToolEnd:
				i, seen := byID[l.ID]
				if !seen {
					continue
				}
				d.Calls[i].Output, d.Calls[i].IsError = Printable(l.Summary), l.IsError
			case agent.LiveText, agent.LiveResult:
				if s := strings.TrimSpace(l.Summary); s != "" {
					text = append(text, s)
				}
			}
		}
		d.After = Printable(strings.Join(text, "\n"))
	}
	if data, cut, err := readEnd(filepath.Join(dir, "stderr.log"), stderrTail); err == nil {
		if cut {
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				data = data[i+1:]
			}
		}
		d.Stderr = Printable(strings.TrimRight(string(data), "\n"))
	}
	if data, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil {
		var res TailResult
		if json.Unmarshal(data, &res) == nil {
			d.AgentExit, d.Check = Printable(res.AgentExit), Printable(res.Check)
		}
	}
	if data, _, err := readEnd(filepath.Join(dir, "check.log"), stderrTail); err == nil {
		d.CheckLog = strings.Join(LastLines(data, 12), "\n")
	}
	return d, nil
}

// LastLines is the last n non-blank lines of out, each made Printable (what a check or an
// agent printed reaches the operator's terminal).
func LastLines(out []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			keep = append(keep, Printable(strings.TrimRight(lines[i], "\r")))
		}
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return keep
}

// readEnd reads at most the last n bytes of path, and says whether it cut the front: an
// agent decides how big its stderr grows, and the detail (and search, for every tail) must
// not read all of it to keep its end.
func readEnd(path string, n int64) ([]byte, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	off := max(st.Size()-n, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, n))
	return data, off > 0, err
}
