package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tare/engine/room"
	"tare/sandbox"
)

// TestProxyAllowsExactlyTheDeclaredHosts: a Claude Code room on its real provider (a login
// copy) reaches, through tare's proxy, exactly the hosts its reading declares: the Anthropic
// API and platform.claude.com (the login's token refresh) go through, while another
// provider's API, which a global list once let through, is refused. The CONNECTs come from
// inside the real room, through the real relay.
func TestProxyAllowsExactlyTheDeclaredHosts(t *testing.T) {
	needRooms(t)
	a, inst, cfg := mustFind(t, "claude")
	home := t.TempDir()
	t.Setenv("HOME", home)
	login := filepath.Join(home, ".claude", ".credentials.json")
	if err := os.MkdirAll(filepath.Dir(login), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(login, []byte(`{"claudeAiOauth":{"accessToken":"dummy"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	box, setup, err := room.Build(room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), Login: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	declared := []string{"api.anthropic.com:443", "platform.claude.com:443"}
	refused := []string{"api.openai.com:443", "chatgpt.com:443", "generativelanguage.googleapis.com:443"}
	lines := 0
	for _, line := range setup.Declared {
		if strings.Contains(line, "allow") {
			lines++
			if !strings.HasSuffix(strings.TrimSuffix(line, ")"), strings.Join(declared, ", ")) {
				t.Errorf("declared line %q does not name exactly %v", line, declared)
			}
		}
	}
	if lines != 2 {
		t.Errorf("%d declared lines name the proxy's hosts, want 2 (the room's and the agent's): %q", lines, setup.Declared)
	}
	var fetch []string
	for _, h := range append(slices.Clone(declared), refused...) {
		fetch = append(fetch, "http://"+h+"/ via 127.0.0.1:4001")
	}
	box.Argv = append([]string{sandbox.TareBin}, sandbox.InspectOptions{Fetch: fetch, Timeout: 5 * time.Second}.Args()...)
	var out, errb strings.Builder
	box.Stdin, box.Stdout, box.Stderr = nil, &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proc, err := sandbox.Start(ctx, box)
	if err != nil {
		t.Fatal(err)
	}
	if code, err := proc.Wait(); code != 0 || err != nil {
		t.Fatalf("inspection exited %d, %v: %s", code, err, errb.String())
	}
	var view sandbox.View
	if err := json.Unmarshal([]byte(out.String()), &view); err != nil {
		t.Fatal(err)
	}
	gone := proc.Refused()
	for i, f := range view.Fetch {
		host := strings.TrimSuffix(strings.TrimPrefix(strings.Fields(f.Spec)[0], "http://"), "/")
		wantRefused := i >= len(declared)
		if got := f.Status == 403 && slices.Contains(gone, host); got != wantRefused {
			t.Errorf("CONNECT %s: status %d (%s), refused list %v; want refused=%v", host, f.Status, f.Err, gone, wantRefused)
		}
	}
}
