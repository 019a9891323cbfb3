package agent

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// seedStreams adds every line of the recorded streams and sessions in testdata to f, each
// with the index of an agent to read it as.
func seedStreams(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 0; sc.Scan() && n < 40; n++ {
			f.Add(uint8(i), append([]byte(nil), sc.Bytes()...))
		}
	}
	f.Add(uint8(0), []byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":null}]}}`))
	f.Add(uint8(1), []byte(`{"type":"item.completed","item":{"type":"command_execution","command":7}}`))
}

// FuzzParseLine: a line of an agent's stdout is the agent's (and its tools') to write;
// whatever it holds, every adapter reads it without a panic, and a whole stream of such
// lines parses or fails with an error, never a crash.
func FuzzParseLine(f *testing.F) {
	seedStreams(f)
	all := All()
	f.Fuzz(func(t *testing.T, which uint8, line []byte) {
		a := all[int(which)%len(all)]
		ParseLine(a, line)
		a.ParseStream(bytes.NewReader(line))
	})
}

// FuzzReadTrail: a session file is written in the room, by the agent; reading it as a trail,
// or cutting it at a step, never panics whatever it holds.
func FuzzReadTrail(f *testing.F) {
	seedStreams(f)
	paths, _ := filepath.Glob(filepath.Join("testdata", "*session*.jsonl"))
	for i, p := range paths {
		if data, err := os.ReadFile(p); err == nil && len(data) < 64<<10 {
			f.Add(uint8(i), data)
		}
	}
	all := All()
	f.Fuzz(func(t *testing.T, which uint8, session []byte) {
		a := all[int(which)%len(all)]
		tr, err := ReadTrail(a, session)
		if err != nil {
			return
		}
		for _, s := range tr.Steps {
			CutSession(a, session, s)
		}
	})
}
