package tui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"tare/workshop"
)

// TestWritersPaneNamesAnExpiredLogin: a writer whose own stream ends in the provider refusing
// its login (codex's 401 as captured against tare's model server) shows as "login expired",
// one ending at a quota wall as "quota wall", and the pane offers both to resume (u) rather
// than refusing before it asks.
func TestWritersPaneNamesAnExpiredLogin(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "exp")
	if _, err := workshop.Prepare(filepath.Join("..", "demo", "workshop", "plan.toml"), exp); err != nil {
		t.Fatal(err)
	}
	e, err := workshop.Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	const id = "codex-gpt-5.1-codex"
	for stream, want := range map[string]string{"codex-login.jsonl": "login expired", "codex-quota.jsonl": "quota wall"} {
		data, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "stop", stream))
		if err != nil {
			t.Fatal(err)
		}
		// A fresh stream file each time, as a resume's next attempt writes one.
		events := filepath.Join(e.Record(id), "events.jsonl")
		os.Remove(events)
		if err := os.WriteFile(events, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		statePath := filepath.Join(e.Record(id), "state.json")
		b, _ := os.ReadFile(statePath)
		json.Unmarshal(b, &raw)
		raw["status"] = "failed"
		b, _ = json.Marshal(raw)
		os.WriteFile(statePath, b, 0o644)
		s, err := e.State(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := writerStatus(e, id, s); got != want {
			t.Fatalf("%s: the pane shows %q, want %q", stream, got, want)
		}
		if err := refuseStart(writerMsg{act: actResume, exp: exp, id: id, status: want}); err != nil {
			t.Fatalf("%s: resume refused before asking: %v", stream, err)
		}
	}
}
