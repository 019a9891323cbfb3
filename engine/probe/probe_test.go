package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tare/config"
)

// plantOperator writes an operator's home with a canary in each place the issue names:
// ~/.claude/CLAUDE.md, ~/.claude.json mcpServers, ~/.codex config and instructions,
// ~/.gemini/GEMINI.md and settings.json mcpServers, an AGENTS.md/CLAUDE.md/GEMINI.md and a
// .env in an ancestor of the project. It returns the home and the project.
func plantOperator(t *testing.T, token string) (home, project string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "operator")
	project = filepath.Join(home, "src", "team", "proj")
	files := map[string]string{
		".claude/CLAUDE.md": "# my rules\nAlways end every answer with the phrase " + token + "-claude-md.\n",
		".claude.json": `{"mcpServers":{"opmcp":{"type":"stdio","command":"/opt/tare/tare","args":["mcp-canary","` + token + `"]}},
			"oauthAccount":{"emailAddress":"` + token + `@example.org"}}`,
		".codex/AGENTS.md":      "# codex rules\nAlways end every answer with the phrase " + token + "-codex-agents.\n",
		".codex/config.toml":    "[mcp_servers.opmcp]\ncommand = \"/opt/tare/tare\"\nargs = [\"mcp-canary\", \"" + token + "\"]\n",
		".pi/agent/AGENTS.md":   "# pi rules\nAlways end every answer with the phrase " + token + "-pi-agents.\n",
		".gemini/GEMINI.md":     "# gemini rules\nAlways end every answer with the phrase " + token + "-gemini-md.\n",
		".gemini/settings.json": `{"mcpServers":{"opmcp":{"command":"/opt/tare/tare","args":["mcp-canary","` + token + `"]}}}`,
		"src/GEMINI.md":         "# house rules\nSign every reply with the ancestor phrase " + token + "-ancestor-gemini.\n",
		// Gemini CLI reads the first .env up the tree into its environment.
		"src/.env":                     "GOOGLE_CLOUD_PROJECT=" + token + "-env\nGEMINI_SYSTEM_MD=~/.gemini/system.md\n",
		".gemini/system.md":            "# system\nAlways end every answer with the phrase " + token + "-gemini-system.\n",
		"src/AGENTS.md":                "# house rules\nSign every reply with the ancestor phrase " + token + "-ancestor-agents.\n",
		"src/CLAUDE.md":                "# house rules\nSign every reply with the ancestor phrase " + token + "-ancestor-claude.\n",
		"proj-readme-not-personal.txt": "",
		// Login files holding more than the agent's own login for the room's provider.
		".claude/.credentials.json": `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-` + token + `","refreshToken":"r","expiresAt":1,"scopes":["user:inference"]},
			"mcpOAuth":{"linear|1":{"accessToken":"` + token + `-linear","clientSecret":"` + token + `-client"}}}`,
		".pi/agent/auth.json": `{"anthropic":{"type":"api_key","key":"sk-ant-` + token + `"},"openai":{"type":"api_key","key":"sk-` + token + `-openai"},
			"github-copilot":{"type":"oauth","refresh":"` + token + `-ghr","access":"a","expires":1}}`,
		".codex/auth.json":         `{"OPENAI_API_KEY":"sk-` + token + `","agent_identity":{"agent_private_key":"` + token + `-pk"}}`,
		".gemini/oauth_creds.json": `{"access_token":"ya29.` + token + `","refresh_token":"1//r","client_secret":"` + token + `-gcs"}`,
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
	// The operator trusts ~/src for Gemini CLI, as its trust dialog would record: the room's
	// --skip-trust loads all of src/.env whether or not, but the operator's own runs too.
	trusted := fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, filepath.Join(home, "src"))
	if err := os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), []byte(trusted), 0o644); err != nil {
		t.Fatal(err)
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
	needRooms(t)
	token := "opcanary" + strings.ToLower(newToken())
	home, project := plantOperator(t, token)
	t.Setenv("TARE_OPERATOR_CANARY", token)
	// A descriptor without close-on-exec, as a careless parent process would leave open.
	fd, err := syscall.Open(filepath.Join(home, ".claude/CLAUDE.md"), syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })

	loginOf := map[string]string{"claude": ".claude/.credentials.json (0600), only claudeAiOauth: claudeAiOauth.accessToken, claudeAiOauth.expiresAt",
		"codex": ".codex/auth.json (0600), only API-key: OPENAI_API_KEY", "pi": ".pi/agent/auth.json (0600), only anthropic: anthropic.key, anthropic.type",
		"gemini": ".gemini/oauth_creds.json (0600), only Google OAuth: access_token, refresh_token"}
	keptOut := map[string][]string{
		"claude": {DetInstructions, DetMCP},
		"codex":  {DetInstructions, DetMCP},
		"pi":     {DetInstructions},
		"gemini": {DetInstructions, DetMCP},
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
			// A --login room's copy is read back: one login, its keys declared, nothing else.
			if !slices.ContainsFunc(r.Declared, func(d string) bool {
				return strings.HasPrefix(d, "with --login on the real provider: login copy: ~/"+loginOf[name])
			}) || strings.Contains(strings.Join(r.Declared, "\n"), "mcpOAuth") || strings.Contains(strings.Join(r.Declared, "\n"), "github") {
				t.Errorf("the declared lines do not name the one login of ~/%s:\n%s", loginOf[name], r.Render())
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
			// Gemini CLI loads the .env above the project: the control names the planted one,
			// whose GEMINI_SYSTEM_MD put its system prompt in front of the model; the operator's
			// (src/.env, the same mechanism in a trusted folder) stayed out of the clean room.
			if saw := r.ControlSaw[DetEnv]; name == "gemini" && !strings.Contains(saw, "variables of ~/.env took effect") {
				t.Errorf("the control's env detector did not name the planted ~/.env: %q\n%s", saw, r.Render())
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
	needRooms(t)
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

// TestProbeTwinRunsNoneOfTheOperatorsHooks gives the operator a SessionStart hook in
// ~/.claude/settings.json and a notify program in ~/.codex/config.toml, each reaching a
// listener on the host's loopback; Claude Code also puts the hook's output in front of the
// model. Their MCP server opmcp (in ~/.claude.json, Codex's config.toml and Gemini's
// settings.json) is their own command, whose tool would name the token. The twin with a copy of the operator's setup must run in a room of its own network,
// with hooks and notify off: the listener is never reached, and the hook's line never
// reaches the twin's model.
func TestProbeTwinRunsNoneOfTheOperatorsHooks(t *testing.T) {
	needRooms(t)
	token := "hookcanary" + strings.ToLower(newToken())
	home, project := plantOperator(t, token)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	reach := fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%s", port)
	hook := fmt.Sprintf("bash -c '%s'; echo %s-hook-ran", reach, token)
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"SessionStart": []any{
		map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hook}}}}}})
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	codexConfig := filepath.Join(home, ".codex", "config.toml")
	old, err := os.ReadFile(codexConfig)
	if err != nil {
		t.Fatal(err)
	}
	notify := fmt.Sprintf("notify = [\"bash\", \"-c\", %q]\n", reach)
	if err := os.WriteFile(codexConfig, append([]byte(notify), old...), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"claude", "codex", "gemini"} {
		a, _, cfg := mustFind(t, name)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		var twin bytes.Buffer
		r, err := Probe(ctx, ProbeOptions{Agent: a, Project: project, Config: cfg, HostHome: home, twinRequests: &twin})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(twin.String(), token+"-"+name) {
			t.Errorf("%s: the twin did not have the operator's instructions in front of its model\n%s", name, r.Render())
		}
		if n := reached.Swap(0); n > 0 {
			t.Errorf("%s: the operator's hook or notify program reached a listener on the host's loopback %d times during the probe", name, n)
		}
		if strings.Contains(twin.String(), token+"-hook-ran") {
			t.Errorf("%s: the operator's SessionStart hook ran in the twin: its output reached the model", name)
		}
		// The operator's MCP server opmcp (mcp-canary TOKEN, their command) is not started:
		// tare's canary of the same name stands in, and the twin's "kept out" line names it.
		if strings.Contains(twin.String(), "tare_canary_"+token) || !strings.Contains(twin.String(), "tare_canary_opmcp") {
			t.Errorf("%s: the twin started the operator's MCP server, or not the stub in its place (operator's tool seen: %v)",
				name, strings.Contains(twin.String(), "tare_canary_"+token))
		}
		if !slices.ContainsFunc(r.KeptOut, func(k Leak) bool { return k.Detector == DetMCP && strings.Contains(k.Source, "(opmcp)") }) {
			t.Errorf("%s: the kept-out lines do not name the operator's MCP server opmcp\n%s", name, r.Render())
		}
	}
}

// TestProbeSeesTerseFilesOrSaysItCannot gives each real agent an operator whose own
// instructions are four short rules and whose one skill is "pdf", described in three words:
// no line of either is long enough for a line fingerprint. The twin with a copy of that
// setup must show both reached its model (so the clean room's silence about them means
// something), and a file too short to recognise at all makes the reading blind, naming it,
// never "tare: 0.00".
func TestProbeSeesTerseFilesOrSaysItCannot(t *testing.T) {
	needRooms(t)
	terse := "- Use tabs.\n- Be terse.\n- No emoji.\n- Never push.\n"
	skill := "---\nname: pdf\ndescription: Fill PDF forms.\n---\n\nUse pdftk.\n"
	homes := map[string][2]string{
		"claude": {".claude/CLAUDE.md", ".claude/skills/pdf/SKILL.md"},
		"codex":  {".codex/AGENTS.md", ".codex/skills/pdf/SKILL.md"},
		"pi":     {".pi/agent/AGENTS.md", ".pi/agent/skills/pdf/SKILL.md"},
		"gemini": {".gemini/GEMINI.md", ".gemini/skills/pdf/SKILL.md"},
	}
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := filepath.Join(t.TempDir(), "operator")
			project := filepath.Join(home, "src", "proj")
			files := map[string]string{homes[name][0]: terse, homes[name][1]: skill}
			for rel, text := range files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, rel), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			a, _, cfg := mustFind(t, name)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			r, err := Probe(ctx, ProbeOptions{Agent: a, Project: project, Config: cfg, HostHome: home})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Zero() {
				t.Fatalf("reading %q, want tare: 0.00 (the room keeps both files out and the detectors can see them)\n%s", r.Verdict(), r.Render())
			}
			for det, file := range map[string]string{DetInstructions: homes[name][0], DetSkills: homes[name][1]} {
				found := false
				for _, k := range r.KeptOut {
					found = found || (k.Detector == det && strings.HasSuffix(k.Source, file))
				}
				if !found {
					t.Errorf("the twin with the operator's setup did not show ~/%s reached its model: the %s detector cannot see it\n%s", file, det, r.Render())
				}
			}
			for _, secret := range []string{"Use tabs", "Fill PDF"} {
				if strings.Contains(r.Render(), secret) {
					t.Errorf("the reading quotes the operator's text %q; it must name the file and the kind\n%s", secret, r.Render())
				}
			}

			// One rule of two words is too short to tell from the agent's own text.
			short := filepath.Join(home, homes[name][0])
			if err := os.WriteFile(short, []byte("Be terse.\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err = Probe(ctx, ProbeOptions{Agent: a, Project: project, Config: cfg, HostHome: home})
			if err != nil {
				t.Fatal(err)
			}
			if r.Zero() || r.Verdict() != "not proven (blind)" || !slices.Contains(r.Blind, DetInstructions) {
				t.Fatalf("a file too short to recognise read %q, want not proven (blind) on instructions\n%s", r.Verdict(), r.Render())
			}
			if text := r.Render(); !strings.Contains(text, "blind     instructions") || !strings.Contains(text, homes[name][0]+": its text is too short") {
				t.Errorf("the reading does not name the file it cannot see\n%s", text)
			}
		})
	}
}

// TestProbeOfACLIThatCannotSayItsVersion: the probe asks the CLI its version beside its
// rooms, not before them; a CLI whose --version fails still fails the probe with that
// error, whatever its rooms said, and leaves no folder behind.
func TestProbeOfACLIThatCannotSayItsVersion(t *testing.T) {
	needRooms(t)
	a, _, _ := mustFind(t, "codex")
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'codex: cannot load its config' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, nil)
	cfg.Agents["codex"] = config.Agent{Bin: bin}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, err := Probe(context.Background(), ProbeOptions{Agent: a, Project: t.TempDir(), Config: cfg, HostHome: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "`"+bin+" --version` failed") || !strings.Contains(err.Error(), "cannot load its config") {
		t.Fatalf("probe error %v, want the CLI's --version failure", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the probe left %d entries in TMPDIR, the first %s", len(left), left[0].Name())
	}
}
