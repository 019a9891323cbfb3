package agent

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// The *_trail_stream.jsonl files are the stdout of the runs whose sessions are the
// *_trail_session.jsonl files; the others are the offline report's samples and the refused
// proxy captures of stream_test.go.
func TestParseLine(t *testing.T) {
	tests := []struct {
		file   string
		agent  Agent
		counts string // tool_start tool_end text result
		first  Live   // the first tool_start
		errors int    // events with IsError
	}{
		{"claude_trail_stream.jsonl", Claude{}, "6 6 5 1", Live{Kind: LiveToolStart, Tool: "Bash", ID: "toolu_21c64d6c423a09695df8a043", Summary: "ls"}, 1},
		{"claude_stream_with_hook_events.jsonl", Claude{}, "1 1 2 1", Live{Kind: LiveToolStart, Tool: "Bash", ID: "toolu_7b03aaba8f5d4b33b0e2edfd",
			Summary: "echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd"}, 0},
		{"claude_stream_proxy_refused.jsonl", Claude{}, "0 0 1 1", Live{}, 1},
		{"codex_trail_stream.jsonl", Codex{}, "6 6 5 1", Live{Kind: LiveToolStart, Tool: "shell", ID: "item_2", Summary: "ls"}, 1},
		{"codex_exec_events.jsonl", Codex{}, "1 1 2 1", Live{Kind: LiveToolStart, Tool: "shell", ID: "item_2",
			Summary: "echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd"}, 0},
		{"codex_events_proxy_refused.jsonl", Codex{}, "0 0 5 0", Live{}, 5},
		{"pi_trail_stream.jsonl", Pi{}, "6 6 6 1", Live{Kind: LiveToolStart, Tool: "bash", ID: "toolu_a796431f0a5b3755bdb6ae7f", Summary: "ls"}, 1},
		{"pi_json_events.jsonl", Pi{}, "1 1 2 1", Live{Kind: LiveToolStart, Tool: "bash", ID: "toolu_6e8047eb56504686a6d07363",
			Summary: "echo 'hello from fake model (turn 1)' >> hello.txt && cat hello.txt && pwd"}, 0},
		{"pi_events_proxy_refused.jsonl", Pi{}, "0 0 3 3", Live{}, 3},
		// Gemini CLI's shell tool reports a failed command with status success.
		{"gemini_trail_stream.jsonl", Gemini{}, "6 6 5 1", Live{Kind: LiveToolStart, Tool: "run_shell_command",
			ID: "run_shell_command__run_shell_command_1796077517590_0", Summary: "ls"}, 0},
		{"gemini_stream_json.jsonl", Gemini{}, "1 1 4 1", Live{Kind: LiveToolStart, Tool: "run_shell_command",
			ID: "run_shell_command__run_shell_command_1796060432589_0", Summary: "echo 'hello from fake gemini turn 1' >> hello.txt && pwd && cat hello.txt"}, 0},
	}
	for _, tt := range tests {
		data := readTestdata(t, tt.file)
		n := map[string]int{}
		var first Live
		var sum Usage
		var last Live
		errs := 0
		var starts, ends []string
		for _, line := range bytes.Split(data, []byte("\n")) {
			l, ok := ParseLine(tt.agent, line)
			if !ok {
				continue
			}
			n[l.Kind]++
			if l.IsError {
				errs++
			}
			switch l.Kind {
			case LiveToolStart:
				if first.Kind == "" {
					first = l
				}
				starts = append(starts, l.ID)
			case LiveToolEnd:
				ends = append(ends, l.ID)
			case LiveText:
				sum.Input += l.Usage.Input
				sum.Output += l.Usage.Output
				sum.CostUSD += l.Usage.CostUSD
			case LiveResult:
				last = l
			}
		}
		counts := fmt.Sprintf("%d %d %d %d", n[LiveToolStart], n[LiveToolEnd], n[LiveText], n[LiveResult])
		if counts != tt.counts || first != tt.first || errs != tt.errors {
			t.Errorf("%s: counts %s, first %+v, %d errors; want %s, %+v, %d", tt.file, counts, first, errs, tt.counts, tt.first, tt.errors)
			continue
		}
		// Every started tool ends, by the same id.
		if strings.Join(sorted(starts), " ") != strings.Join(sorted(ends), " ") {
			t.Errorf("%s: started %v, ended %v", tt.file, starts, ends)
		}
		// The usage the lines report adds up to what ParseStream reads from the whole stream.
		res, err := tt.agent.ParseStream(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		got := last.Usage
		if tt.agent.Name() == "pi" {
			got = sum
		}
		if got.Input != res.Usage.Input || got.Output != res.Usage.Output || math.Abs(got.CostUSD-res.Usage.CostUSD) > 1e-9 {
			t.Errorf("%s: live usage %+v, stream usage %+v", tt.file, got, res.Usage)
		}
	}
}

// The tool calls the stream shows are the steps' calls in the session of the same run.
func TestParseLineMatchesTrail(t *testing.T) {
	for _, a := range []Agent{Claude{}, Pi{}} {
		tr, err := ReadTrail(a, readTestdata(t, a.Name()+"_trail_session.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var ids, started []string
		for _, s := range tr.Steps {
			ids = append(ids, s.IDs...)
		}
		for _, line := range bytes.Split(readTestdata(t, a.Name()+"_trail_stream.jsonl"), []byte("\n")) {
			if l, ok := ParseLine(a, line); ok && l.Kind == LiveToolStart {
				started = append(started, l.ID)
			}
		}
		if strings.Join(ids, " ") != strings.Join(started, " ") {
			t.Errorf("%s: trail calls %v, stream calls %v", a.Name(), ids, started)
		}
	}
}

func TestParseLineOdd(t *testing.T) {
	for _, line := range []string{"", "not json", "{broken", `{"type":"brand_new"}`} {
		for _, a := range All() {
			if l, ok := ParseLine(a, []byte(line)); ok {
				t.Errorf("%s %q: %+v", a.Name(), line, l)
			}
		}
	}
	// Codex file changes and failed commands; its shell wrapper is taken off.
	l, ok := ParseLine(Codex{}, []byte(`{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"/work/a.go","kind":"update"},{"path":"/work/b.go","kind":"add"}],"status":"completed"}}`))
	if !ok || l.Kind != LiveToolEnd || l.Tool != "apply_patch" || l.Summary != "update a.go, add b.go" || l.IsError {
		t.Errorf("codex file change: %+v", l)
	}
	l, ok = ParseLine(Codex{}, []byte(`{"type":"item.completed","item":{"id":"item_4","type":"command_execution","command":"/bin/bash -lc \"grep -n \\\"x\\\" a.go\"","aggregated_output":"","exit_code":1,"status":"failed"}}`))
	if !ok || l.Kind != LiveToolEnd || !l.IsError || l.ID != "item_4" {
		t.Errorf("codex failed command: %+v", l)
	}
	for in, want := range map[string]string{
		`/bin/bash -lc 'echo '\''hi'\'''`: `echo 'hi'`,
		`/bin/bash -lc "grep \"x\" a.go"`: `grep "x" a.go`,
		`ls -la`:                          `ls -la`,
	} {
		if got := unwrapShell(in); got != want {
			t.Errorf("unwrapShell(%q) = %q, want %q", in, got, want)
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
