package room

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/agent"
)

// TestSessionReadFollowsNoSymlink: the session folder is the room's to write. A session
// file the room replaced with a symlink to a host file (or one below a symlinked folder) is
// refused, never read: its content would be copied into the run and parsed into handoffs and
// prices.
func TestSessionReadFollowsNoSymlink(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("CANARY_HOST_FILE_7f3a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const id = "0b5e8a0e-1111-4222-8333-944455556666"
	codexFile := "2026/11/30/rollout-2026-11-30T00-00-00-" + id + ".jsonl"
	for _, tc := range []struct {
		name, agent string
		plant       func(sessions string) error
	}{
		{"file", "claude", func(sessions string) error {
			return os.Symlink(secret, filepath.Join(sessions, id+".jsonl"))
		}},
		{"folder", "codex", func(sessions string) error {
			// The date folders of a rollout: 2026 -> a host folder holding 11/30/<rollout>.
			outside := t.TempDir()
			if err := os.MkdirAll(filepath.Join(outside, "11", "30"), 0o755); err != nil {
				return err
			}
			if err := os.Link(secret, filepath.Join(outside, "11", "30", filepath.Base(codexFile))); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(sessions, "2026"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := agent.ByName(tc.agent)
			sessions := t.TempDir()
			if err := tc.plant(sessions); err != nil {
				t.Fatal(err)
			}
			if _, err := agent.FindSession(a, sessions, id); err != nil {
				t.Fatalf("the planted session is not where the adapter looks: %v", err)
			}
			data, err := ReadSession(a, sessions, id)
			if err == nil || strings.Contains(string(data), "CANARY") {
				t.Fatalf("a planted symlink was followed: %q, %v", data, err)
			}
			if !strings.Contains(err.Error(), "symlink") {
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
	// The file the room really wrote reads as it is.
	a, _ := agent.ByName("claude")
	sessions := t.TempDir()
	os.WriteFile(filepath.Join(sessions, id+".jsonl"), []byte("{}\n"), 0o644)
	if data, err := ReadSession(a, sessions, id); err != nil || string(data) != "{}\n" {
		t.Fatalf("a plain session file: %q, %v", data, err)
	}
}
