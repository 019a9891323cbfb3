package agent

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata streams are real captures: the samples of the offline report
// (agents-offline/samples) and, *_proxy_refused, runs of this package's room
// setup against a proxy that refused every CONNECT.
func TestParseStream(t *testing.T) {
	tests := []struct {
		file       string
		agent      Agent
		session    string
		text       string // prefix
		isError    bool
		errText    string // substring
		in, out    int64
		cost       float64
		reported   bool
		model      string
		warnings   int
		threadSums bool
	}{
		{"claude_stream.jsonl", Claude{}, "8726f800-9ece-4cbe-a126-48846eefd648", "Done. The tool said: hello from fake model (turn 1)", false, "", 200, 50, 0.00225, true, "claude-opus-4-8", 0, false},
		{"claude_stream_resume.jsonl", Claude{}, "8d266725-c510-4244-a1bd-957d5d9446f3", "Done. The tool said: hello from fake model (turn 1)\nhello from fake model (turn 2)", false, "", 200, 50, 0.00225, true, "claude-opus-4-8", 0, false},
		{"claude_stream_with_hook_events.jsonl", Claude{}, "8d266725-c510-4244-a1bd-957d5d9446f3", "Done.", false, "", 200, 50, 0.00225, true, "claude-opus-4-8", 0, false},
		{"claude_room_stream.jsonl", Claude{}, "e96f9feb-d656-4b96-b5ef-1e76a5867a20", "Done. The tool said: hello from fake model (turn 1)\n/work", false, "", 200, 50, 0.00225, true, "claude-opus-4-8", 0, false},
		{"claude_room_stream_resume.jsonl", Claude{}, "e96f9feb-d656-4b96-b5ef-1e76a5867a20", "Done.", false, "", 200, 50, 0.00225, true, "claude-opus-4-8", 0, false},
		{"claude_room_unshare_net_stream.jsonl", Claude{}, "84947997-1703-4c7c-bf3b-2110f9768d08", "Done.", false, "", 200, 50, 0.00225, true, "claude-opus-4-8", 0, false},
		{"claude_stream_proxy_refused.jsonl", Claude{}, "f21b3958-db92-40a0-b438-bed1ac62b5b5", "Failed to authenticate", true, "API Error: 403", 0, 0, 0, true, "", 0, false},
		{"codex_exec_events.jsonl", Codex{}, "01a229f8-484e-7281-ad30-1c3ae3ac4aa6", "Done. The tool said: Chunk ID: f667c1", false, "", 200, 50, 0, false, "", 1, true},
		{"codex_exec_events_resume.jsonl", Codex{}, "01a229f8-9016-7710-b597-dad295f6ae3a", "Done.", false, "", 400, 100, 0, false, "", 1, true},
		{"codex_room_events.jsonl", Codex{}, "01a229f8-b255-77d2-a0e4-83cc784e2ef3", "Done.", false, "", 200, 50, 0, false, "", 1, true},
		{"codex_events_proxy_refused.jsonl", Codex{}, "01a22a14-cbbd-7403-917d-ff51c08402a2", "", true, "without a completed turn: Reconnecting", 0, 0, 0, false, "", 1, true},
		{"pi_json_events.jsonl", Pi{}, "01a229f9-1840-7759-b223-d21d88a45547", "Done. The tool said: hello from fake model (turn 1)\n/lab/pi1/ws", false, "", 200, 50, 0.00135, true, "claude-fake", 0, false},
		{"pi_json_events_resume.jsonl", Pi{}, "01a229f9-1840-7759-b223-d21d88a45547", "Done.", false, "", 200, 50, 0.0003, true, "fake-model", 0, false},
		{"pi_room_json_events.jsonl", Pi{}, "01a229f9-4d31-7637-8b88-a5422c8980f9", "Done. The tool said: hello from fake model (turn 1)\n/work", false, "", 200, 50, 0, false, "fake-model", 0, false},
		{"pi_events_proxy_refused.jsonl", Pi{}, "01a22a15-47c1-76ed-9fe2-6dcc13b49ef5", "", true, "Connection error", 0, 0, 0, false, "claude-opus-4-7", 0, false},
		{"gemini_stream_json.jsonl", Gemini{}, "e221ad69-9c7d-4738-b07f-804c01ca075f", "Done. The tool `run_shell_command` returned:", false, "", 404, 106, 0, false, "gemini-2.5-pro", 0, false},
		{"gemini_trail_stream.jsonl", Gemini{}, "037c4021-db59-43ee-bb58-70d0a37ea141", "All done: five steps.", false, "", 72214, 103, 0, false, "gemini-2.5-pro", 0, false},
		{"stop/gemini-quota.jsonl", Gemini{}, "4c015490-9266-4dd6-9139-eeacafefe756", "", true, "exhausted your daily quota", 0, 0, 0, false, "gemini-2.5-pro", 0, false},
	}
	for _, tt := range tests {
		f, err := os.Open(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		res, err := tt.agent.ParseStream(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		u := res.Usage
		switch {
		case res.SessionID != tt.session:
			t.Errorf("%s: session %q, want %q", tt.file, res.SessionID, tt.session)
		case !strings.HasPrefix(res.Text, tt.text):
			t.Errorf("%s: text %q, want prefix %q", tt.file, res.Text, tt.text)
		case res.IsError != tt.isError || !strings.Contains(res.Error, tt.errText):
			t.Errorf("%s: error %v %q, want %v %q", tt.file, res.IsError, res.Error, tt.isError, tt.errText)
		case u.Input != tt.in || u.Output != tt.out || u.CacheRead != 0 || u.CacheWrite != 0:
			t.Errorf("%s: usage %+v, want %d in %d out", tt.file, u, tt.in, tt.out)
		case math.Abs(u.CostUSD-tt.cost) > 1e-9 || u.CostReported != tt.reported:
			t.Errorf("%s: cost %v %v, want %v %v", tt.file, u.CostUSD, u.CostReported, tt.cost, tt.reported)
		case u.Model != tt.model || u.Thread != tt.threadSums:
			t.Errorf("%s: model %q thread %v, want %q %v", tt.file, u.Model, u.Thread, tt.model, tt.threadSums)
		case len(res.Warnings) != tt.warnings:
			t.Errorf("%s: warnings %q, want %d", tt.file, res.Warnings, tt.warnings)
		}
	}
}

func TestParseStreamOddInput(t *testing.T) {
	// Unknown events and non-JSON lines are skipped; a cut stream is an error.
	in := "not json\n{\"type\":\"brand_new_event\",\"x\":1}\n" +
		`{"type":"system","subtype":"init","session_id":"S"}` + "\n" +
		`{"type":"assistant","message":{"content":[{"type":"text","text":"half"}]}}` + "\n"
	res, err := Claude{}.ParseStream(strings.NewReader(in))
	if err != nil || res.SessionID != "S" || !res.IsError || res.Text != "half" {
		t.Errorf("claude cut stream: %+v, %v", res, err)
	}
	res, err = Codex{}.ParseStream(strings.NewReader(`{"type":"thread.started","thread_id":"T"}` + "\n" +
		`{"type":"turn.failed","error":{"message":"quota"}}` + "\n"))
	if err != nil || res.SessionID != "T" || !res.IsError || res.Error != "quota" {
		t.Errorf("codex failed turn: %+v, %v", res, err)
	}
	res, err = Pi{}.ParseStream(strings.NewReader(""))
	if err != nil || !res.IsError {
		t.Errorf("pi empty stream: %+v, %v", res, err)
	}
	res, err = Agy{}.ParseStream(strings.NewReader("just the answer\n"))
	if err != nil || res.IsError || res.Text != "just the answer" {
		t.Errorf("agy text output: %+v, %v", res, err)
	}
	res, err = Agy{}.ParseStream(strings.NewReader(`{"type":"init","conversation_id":"C"}` + "\n" +
		`{"type":"result","status":"success","result":"ok","usage":{"input_tokens":10,"output_tokens":3}}` + "\n"))
	if err != nil || res.IsError || res.SessionID != "C" || res.Text != "ok" || res.Usage.Input != 10 || res.Usage.Output != 3 {
		t.Errorf("agy stream-json: %+v, %v", res, err)
	}
}

func TestCodexSessionUsage(t *testing.T) {
	for file, want := range map[string]int64{"codex_rollout_session.jsonl": 200, "codex_rollout_after_resume.jsonl": 400} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if u := CodexSessionUsage(data); u.Input != want || u.Output != want/4 {
			t.Errorf("%s: %+v, want %d in", file, u, want)
		}
	}
	// A resumed run's own usage: the stream's running total minus the placed rollout's.
	stream, _ := os.Open(filepath.Join("testdata", "codex_exec_events_resume.jsonl"))
	defer stream.Close()
	res, _ := Codex{}.ParseStream(stream)
	placed, _ := os.ReadFile(filepath.Join("testdata", "codex_rollout_session.jsonl"))
	if own := OwnUsage(res.Usage, placed); own.Input != 200 || own.Output != 50 || own.Thread {
		t.Errorf("resumed run's own usage %+v, want 200/50", own)
	}
	if fresh := OwnUsage(res.Usage, nil); fresh != res.Usage {
		t.Errorf("a fresh run's usage changed: %+v, want %+v", fresh, res.Usage)
	}
}

// TestCodexSessionModel: Codex's stream names no model; its rollout's
// turn_context does, and tare prices the run by it.
func TestCodexSessionModel(t *testing.T) {
	for file, want := range map[string]string{"codex_rollout_session.jsonl": "gpt-5.1-codex", "codex_exec_events.jsonl": ""} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := (Codex{}).SessionModel(data); got != want {
			t.Errorf("%s: model %q, want %q", file, got, want)
		}
	}
}

// TestCodexSessionRequests: each model request of a Codex rollout, as its token_count events
// give it (one per response), and for a resumed run only those after the placed session's.
func TestCodexSessionRequests(t *testing.T) {
	placed, _ := os.ReadFile(filepath.Join("testdata", "codex_rollout_session.jsonl"))
	after, _ := os.ReadFile(filepath.Join("testdata", "codex_rollout_after_resume.jsonl"))
	fresh := Codex{}.SessionRequests(placed, nil)
	resumed := Codex{}.SessionRequests(after, placed)
	want := Request{Input: 100, Output: 25}
	if len(fresh) != 2 || len(resumed) != 2 {
		t.Fatalf("%d requests in the session, %d after its resume; want 2 and 2", len(fresh), len(resumed))
	}
	for _, r := range append(fresh, resumed...) {
		if r != want {
			t.Errorf("request %+v, want %+v", r, want)
		}
	}
	trail, _ := os.ReadFile(filepath.Join("testdata", "codex_trail_session.jsonl"))
	reqs := Codex{}.SessionRequests(trail, nil)
	var in, out int64
	for _, r := range reqs {
		in, out = in+r.Input+r.CacheRead, out+r.Output
	}
	if len(reqs) != 6 || in != 63210 || out != 104 {
		t.Errorf("%d requests of %d input and %d output tokens; the rollout's total is 6, 63210, 104", len(reqs), in, out)
	}
}
