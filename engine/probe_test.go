package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plantOperator writes an operator's home with a canary in each place the issue names:
// ~/.claude/CLAUDE.md, ~/.claude.json mcpServers, ~/.codex config and instructions, and an
// AGENTS.md/CLAUDE.md in an ancestor of the project. It returns the home and the project.
func plantOperator(t *testing.T, token string) (home, project string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "operator")
	project = filepath.Join(home, "src", "team", "proj")
	files := map[string]string{
		".claude/CLAUDE.md": "# my rules\nAlways end every answer with the phrase " + token + "-claude-md.\n",
		".claude.json": `{"mcpServers":{"opmcp":{"type":"stdio","command":"/opt/tare/tare","args":["mcp-canary","` + token + `"]}},
			"oauthAccount":{"emailAddress":"` + token + `@example.org"}}`,
		".codex/AGENTS.md":             "# codex rules\nAlways end every answer with the phrase " + token + "-codex-agents.\n",
		".codex/config.toml":           "[mcp_servers.opmcp]\ncommand = \"/opt/tare/tare\"\nargs = [\"mcp-canary\", \"" + token + "\"]\n",
		".pi/agent/AGENTS.md":          "# pi rules\nAlways end every answer with the phrase " + token + "-pi-agents.\n",
		"src/AGENTS.md":                "# house rules\nSign every reply with the ancestor phrase " + token + "-ancestor-agents.\n",
		"src/CLAUDE.md":                "# house rules\nSign every reply with the ancestor phrase " + token + "-ancestor-claude.\n",
		"proj-readme-not-personal.txt": "",
	}
	for rel, text := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	return home, project
}

// TestProbeKeepsThePlantedOperatorSetupOut probes each real agent for an operator whose
// home, project ancestors, environment, descriptors and loopback all carry canaries: the
// reading is "tare: 0.00", no canary reaches the model, the control shows every detector
// can see, and the twin with a copy of the operator's setup shows what the room kept out.
func TestProbeKeepsThePlantedOperatorSetupOut(t *testing.T) {
	token := "opcanary" + strings.ToLower(newToken())
	home, project := plantOperator(t, token)
	t.Setenv("TARE_OPERATOR_CANARY", token)
	// A descriptor without close-on-exec, as a careless parent process would leave open.
	fd, err := syscall.Open(filepath.Join(home, ".claude/CLAUDE.md"), syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })

	keptOut := map[string][]string{
		"claude": {DetInstructions, DetMCP},
		"codex":  {DetInstructions, DetMCP},
		"pi":     {DetInstructions},
	}
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, _, cfg := mustFind(t, name)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			var requests bytes.Buffer
			r, err := Probe(ctx, ProbeOptions{Agent: a, Project: project, Config: cfg, HostHome: home, Requests: &requests})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Zero() {
				t.Fatalf("reading %q, want tare: 0.00\n%s", r.Verdict(), r.Render())
			}
			if r.Kernel != "seccomp filter · no kernel keys in sight" || !strings.Contains(r.Render(), "kernel    seccomp filter") {
				t.Errorf("the clean room's kernel line is %q\n%s", r.Kernel, r.Render())
			}
			if requests.Len() == 0 || strings.Contains(requests.String(), token) {
				t.Fatalf("a canary reached the model in the clean room (or nothing did: %d bytes)", requests.Len())
			}
			for _, d := range []string{DetInstructions, DetHomePath, DetEnv, DetFDs, DetHostFiles, DetLoopback, DetOtherHosts} {
				if r.ControlSaw[d] == "" {
					t.Errorf("the control twin did not show %s\n%s", d, r.Render())
				}
			}
			for _, d := range keptOut[name] {
				found := false
				for _, k := range r.KeptOut {
					found = found || k.Detector == d
				}
				if !found {
					t.Errorf("the twin with the operator's setup did not show %s kept out\n%s", d, r.Render())
				}
			}
		})
	}
}

// TestProbeWithoutControlIsBlind shows the verdict depends on the control: a probe whose
// detectors were never shown able to see proves nothing, however quiet the room.
func TestProbeWithoutControlIsBlind(t *testing.T) {
	a, _, cfg := mustFind(t, "pi")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Probe(ctx, ProbeOptions{Agent: a, Project: t.TempDir(), Config: cfg, HostHome: t.TempDir(), NoControl: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict() != "not proven (blind)" || r.Zero() || len(r.Leaks) != 0 {
		t.Fatalf("reading %q with %d leaks, want not proven (blind) and none", r.Verdict(), len(r.Leaks))
	}
}
