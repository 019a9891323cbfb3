package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlaceSession(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tests := []struct {
		agent Agent
		data  []byte
		id    string
		want  string
	}{
		{Claude{}, read("claude_transcript.jsonl"), "8726f800-9ece-4cbe-a126-48846eefd648",
			"/home/agent/.claude/projects/-work/8726f800-9ece-4cbe-a126-48846eefd648.jsonl"},
		{Codex{}, read("codex_rollout_session.jsonl"), "01a229f8-484e-7281-ad30-1c3ae3ac4aa6",
			"/home/agent/.codex/sessions/2026/11/30/rollout-2026-11-30T01-01-07-01a229f8-484e-7281-ad30-1c3ae3ac4aa6.jsonl"},
		{Codex{}, []byte("cut\n"), "T", "/home/agent/.codex/sessions/2000/01/01/rollout-2000-01-01T00-00-00-T.jsonl"},
		{Pi{}, read("pi_session.jsonl"), "01a229f9-1840-7759-b223-d21d88a45547",
			"/home/agent/.pi/agent/sessions/--work--/2026-11-30T01-02-00-259Z_01a229f9-1840-7759-b223-d21d88a45547.jsonl"},
		{Agy{}, []byte{1, 2}, "C", "/home/agent/.gemini/antigravity-cli/conversations/C.pb"},
	}
	for _, tt := range tests {
		files := tt.agent.PlaceSession(tt.data, tt.id)
		if len(files) != 1 || files[0].Path != tt.want || string(files[0].Data) != string(tt.data) || files[0].Mode != 0o600 {
			t.Errorf("%s: %+v, want one file at %s", tt.agent.Name(), files, tt.want)
			continue
		}
		// The placed file is where the agent's own glob looks, and FindSession finds it below
		// the folder bound at SessionRoot.
		if ok, _ := filepath.Match(tt.agent.SessionGlob(), files[0].Path); !ok {
			t.Errorf("%s: %s does not match SessionGlob %s", tt.agent.Name(), files[0].Path, tt.agent.SessionGlob())
		}
		home := t.TempDir() // the host folder bound at SessionRoot
		p := filepath.Join(home, strings.TrimPrefix(files[0].Path, "/"+SessionRoot(tt.agent)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, tt.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := FindSession(tt.agent, home, tt.id); err != nil || got != p {
			t.Errorf("%s: FindSession = %q, %v; want %q", tt.agent.Name(), got, err, p)
		}
		if _, err := FindSession(tt.agent, home, "missing-id"); err == nil {
			t.Errorf("%s: FindSession found a missing id", tt.agent.Name())
		}
	}
}
