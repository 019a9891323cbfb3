package modelserver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Gemini CLI against the server's Gemini dialect, run on the host as the
// offline report ran it: settings.json selecting API-key auth with usage
// statistics off, the base URL and key by env.

// geminiRun is Gemini CLI headless against url with the model named in args.
func geminiRun(bin, url string, args ...string) cliRun {
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`
	return cliRun{name: "gemini", bin: bin,
		args: append([]string{"-m", "gemini-2.5-pro", "--output-format", "stream-json", "--yolo", "--skip-trust"}, args...),
		env: append([]string{"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=tare-test-key", "GEMINI_CLI_NO_RELAUNCH=true",
			"GEMINI_CLI_SYSTEM_SETTINGS_PATH=/nonexistent/settings.json"}, baseEnv...),
		files: map[string]string{".gemini/settings.json": settings},
		usage: "gemini"}
}

// geminiUsage is the result event's token counts.
func geminiUsage(stdout string) (in, out float64) {
	for _, line := range strings.Split(stdout, "\n") {
		var ev struct {
			Type  string `json:"type"`
			Stats struct {
				In  float64 `json:"input_tokens"`
				Out float64 `json:"output_tokens"`
			} `json:"stats"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "result" {
			in, out = ev.Stats.In, ev.Stats.Out
		}
	}
	return in, out
}

// TestRealGeminiCLI runs the script of testdata/two-turns.toml (a shell command and a
// write in one turn, then the final text) and resumes the session for a second script turn: the
// dialect's tool mapping, SSE stream, usage and turn counting as Gemini CLI reads them.
func TestRealGeminiCLI(t *testing.T) {
	bin := agentBin(t, "gemini")
	sc := mustScript(t, `
[[turn]]
text = "I'll create the files."
shell = "echo tare-ok > made.txt"
write = { path = "notes/hello.txt", content = "hello from tare\n" }
[[turn]]
text = "All done."
[[turn]]
text = "Resumed."
shell = "echo again > again.txt"
[[turn]]
text = "Resumed and done."
`)
	var logBuf safeBuffer
	srv := startServer(t, Options{Script: sc, Log: &logBuf, Seed: 1})
	r := geminiRun(bin, srv.URL(), "--session-id", "11111111-2222-4333-8444-555555555555", "-p", cliPrompt)
	a := newAgentHome(t, r)
	stdout := a.run(t, "gemini", r.bin, r.args...)
	for rel, want := range map[string]string{"made.txt": "tare-ok\n", "notes/hello.txt": "hello from tare\n"} {
		got, err := os.ReadFile(filepath.Join(a.cwd, rel))
		if err != nil || string(got) != want {
			t.Fatalf("gemini: %s = %q (%v), want %q\nstdout:\n%s\nserver log:\n%s", rel, got, err, want, tail(stdout, 4000), tail(logBuf.String(), 4000))
		}
	}
	if !strings.Contains(stdout, "All done.") {
		t.Errorf("gemini output lacks the final scripted text:\n%s", tail(stdout, 4000))
	}
	if in, out := geminiUsage(stdout); in < 500 || out < 2 {
		t.Errorf("gemini reported usage input=%v output=%v; want the server's estimates", in, out)
	}
	r = geminiRun(bin, srv.URL(), "--resume", "11111111-2222-4333-8444-555555555555", "-p", "Continue.")
	stdout = a.run(t, "gemini resume", r.bin, r.args...)
	if _, err := os.Stat(filepath.Join(a.cwd, "again.txt")); err != nil || !strings.Contains(stdout, "Resumed and done.") {
		t.Fatalf("resume: again.txt: %v, final text: %v\n%s", err, strings.Contains(stdout, "Resumed and done."), tail(stdout, 4000))
	}
	served := map[string]int{}
	for _, q := range srv.Requests() {
		switch q.Outcome {
		case "unmapped", "bad_request", "not_found":
			t.Errorf("request %s %s answered %q: %s", q.Method, q.Path, q.Outcome, q.Note)
		case "turn":
			served[fmt.Sprintf("%s turn %d", q.API, q.Turn)]++
		}
	}
	for _, k := range []string{"gemini turn 1", "gemini turn 2", "gemini turn 3", "gemini turn 4"} {
		if served[k] != 1 {
			t.Errorf("server served %s %d times, want 1 (all: %v)", k, served[k], served)
		}
	}
}

// TestRealGeminiCLIErrors shows how Gemini CLI takes the injected provider failures in
// Gemini's own error shapes: a spent daily quota ends the run, an overloaded model is
// retried, a stream cut after its first text ends the run ("[API Error: terminated]").
func TestRealGeminiCLIErrors(t *testing.T) {
	bin := agentBin(t, "gemini")
	cases := []struct {
		kind string
		ok   bool
		want string
	}{
		{"quota", false, "exceeded your current quota"},
		{"overloaded", true, "Finished after the error"},
		{"drop", false, "API Error: terminated"},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, Options{Script: mustScript(t, fmt.Sprintf(`
[[turn]]
text = "Trying."
shell = "echo one > one.txt"
error = %q
error_times = 1
[[turn]]
text = "Finished after the error."
`, c.kind))})
			r := geminiRun(bin, srv.URL(), "-p", "go")
			a := newAgentHome(t, r)
			stdout, stderr, code := a.exec(t, "gemini-"+c.kind, r.bin, r.args...)
			_, statErr := os.Stat(filepath.Join(a.cwd, "one.txt"))
			if c.ok != (code == 0 && statErr == nil) {
				t.Errorf("%s: exit %d, one.txt: %v; want the run to %s", c.kind, code, statErr, map[bool]string{true: "recover", false: "fail"}[c.ok])
			}
			if !strings.Contains(stdout+stderr, c.want) {
				t.Errorf("%s: output lacks %q:\n%s\n%s", c.kind, c.want, tail(stdout, 3000), tail(stderr, 2000))
			}
			var kinds []string
			for _, q := range srv.Requests() {
				if q.API != "" {
					kinds = append(kinds, fmt.Sprintf("%s#%d", q.Outcome, q.Attempt))
				}
			}
			if len(kinds) == 0 || kinds[0] != c.kind+"#1" {
				t.Errorf("%s: server outcomes %v, want the first to be %s#1", c.kind, kinds, c.kind)
			}
			t.Logf("%s: exit %d, server outcomes %v", c.kind, code, kinds)
		})
	}
}
