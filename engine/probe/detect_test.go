package probe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tare/agent"
)

func TestDetectorsNameEachLeakWithItsSource(t *testing.T) {
	home := "/home/op"
	s := subject{
		home: home, project: "/srv/proj", loopback: "127.0.0.1:9",
		env:  map[string]bool{"HOME": true, "PATH": true},
		show: func(p string) string { return strings.Replace(p, home, "~", 1) },
		sources: []agent.Source{
			{Path: home + "/.claude/CLAUDE.md", Kind: agent.KindInstructions, Fingerprints: []string{"Always answer in French, mon ami."}},
			{Path: home + "/.claude.json", Kind: agent.KindMCP, Fingerprints: []string{"github"}},
			{Path: home + "/.claude/skills/deploy/SKILL.md", Kind: agent.KindSkill, Fingerprints: []string{"deploy-to-prod"}},
			{Path: home + "/.claude/agents/reviewer.md", Kind: agent.KindAgent, Fingerprints: []string{"strict-reviewer"}},
			{Path: home + "/.claude.json", Kind: agent.KindEmail, Fingerprints: []string{"op@example.org"}},
		},
	}
	ev := scanRequests([][]byte{
		[]byte(`{"system":[{"type":"text","text":"Contents of CLAUDE.md:\nAlways answer in French, mon ami.\n"}],
		  "messages":[{"role":"user","content":"cwd is /home/op/src; skills: deploy-to-prod; agents: strict-reviewer"}],
		  "tools":[{"name":"Bash"},{"name":"mcp__github__create_issue"}]}`),
	})
	ev.sight = sight{
		env:        map[string]string{"HOME": "/home/agent", "PATH": "/usr/bin", "SSH_AUTH_SOCK": "/tmp/x"},
		found:      map[string]string{"/mnt/x/CLAUDE.md": home + "/.claude/CLAUDE.md"},
		needles:    map[string][]string{"op@example.org": {"/home/agent/.claude.json"}},
		fds:        []string{"7 (/home/op/secret)"},
		loopback:   true,
		interfaces: []string{"eth0"},
		routes:     1,
	}
	got := detect(ev, s)
	want := map[string]string{
		DetInstructions: "~/.claude/CLAUDE.md",
		DetHomePath:     "",
		DetMCP:          "~/.claude.json (github)",
		DetSkills:       "~/.claude/skills/deploy/SKILL.md",
		DetPlugins:      "~/.claude/agents/reviewer.md",
		DetEmail:        "~/.claude.json",
		DetEnv:          "the caller's environment",
		DetFDs:          "a descriptor of the caller's",
		DetHostFiles:    "~/.claude/CLAUDE.md",
		DetLoopback:     "127.0.0.1:9",
		DetOtherHosts:   "the host's network",
	}
	for det, source := range want {
		leaks := got[det]
		if len(leaks) != 1 {
			t.Errorf("%s: %d leaks %+v, want 1", det, len(leaks), leaks)
			continue
		}
		if source != "" && leaks[0].Source != source {
			t.Errorf("%s: source %q, want %q", det, leaks[0].Source, source)
		}
	}
	if leaks := got[DetEnv]; len(leaks) == 1 && !strings.Contains(leaks[0].What, "SSH_AUTH_SOCK") {
		t.Errorf("env leak names %q, want SSH_AUTH_SOCK", leaks[0].What)
	}
}

func TestDetectorsStaySilentOnACleanRoom(t *testing.T) {
	s := subject{
		home: "/root", project: "/work/main", env: map[string]bool{"HOME": true, "PWD": true}, show: tilde,
		sources: []agent.Source{{Path: "/root/.claude/CLAUDE.md", Kind: agent.KindInstructions, Fingerprints: []string{"Always answer in French."}}},
	}
	// What the clean rooms really send, reduced: the room's own paths, Codex's agent tree
	// named "/root", an XML closing tag </root>, and the workspace at /work.
	ev := scanRequests([][]byte{[]byte(`{"input":[{"text":"<environment_context><cwd>/work</cwd><workspace_roots><root>/work</root></workspace_roots>"}],
		"client_metadata":{"x-codex-turn-metadata":"{\"agent_name\":\"/root\",\"session_id\":\"x\"}"},
		"tools":[{"type":"function","name":"exec_command"}]}`)})
	ev.sight = sight{env: map[string]string{"HOME": "/home/agent", "PWD": "/work"}}
	if got := detect(ev, s); len(got) != 0 {
		t.Fatalf("a clean room read as leaking: %+v", got)
	}
}

func TestMentionsWholePathsOnly(t *testing.T) {
	cases := []struct {
		text, path string
		want       bool
	}{
		{"cwd: /root\n", "/root", true},
		{"see /root/.claude/CLAUDE.md", "/root", true},
		{`"/home/op"`, "/home/op", true},
		{"/home/operator", "/home/op", false},
		{"</root>", "/root", false},
		{"/srv/root", "/root", false},
		{"/root.bak", "/root", false},
	}
	for _, c := range cases {
		if got := mentions(c.text, c.path); got != c.want {
			t.Errorf("mentions(%q, %q) = %v, want %v", c.text, c.path, got, c.want)
		}
	}
}

func TestVerdicts(t *testing.T) {
	r := &Reading{Agent: "claude", Verified: true, ControlSaw: map[string]string{}}
	if r.Verdict() != "tare: 0.00" || !r.Zero() {
		t.Fatalf("empty reading: %q", r.Verdict())
	}
	r.Blind = []string{DetEmail}
	if r.Verdict() != "not proven (blind)" || r.Zero() {
		t.Fatalf("blind reading: %q", r.Verdict())
	}
	r.Leaks = []Leak{{Detector: DetEnv, What: "variable X is set in the room", Source: "the caller's environment"}}
	if r.Verdict() != "tare: 1 leak" || r.Zero() {
		t.Fatalf("one leak: %q", r.Verdict())
	}
	r.Leaks = append(r.Leaks, Leak{Detector: DetMCP, What: "tool mcp__x reached the model", Source: "~/.claude.json"})
	text := r.Render()
	for _, want := range []string{"tare: 2 leaks", "<- ~/.claude.json", "blind     the control could not see: email"} {
		if !strings.Contains(text, want) {
			t.Errorf("render lacks %q:\n%s", want, text)
		}
	}
	r.Verified = false
	if !strings.Contains(r.Render(), "has not been verified here") {
		t.Errorf("an unverified agent's reading must say so")
	}
}

// TestMCPDetectorHasOneRule: a tool is an MCP server's when the agent names it mcp__… or
// after a server the subject declares, for the control and the operator alike; the
// control's canary is not recognised by its own name.
func TestMCPDetectorHasOneRule(t *testing.T) {
	s := subject{show: tilde, sources: []agent.Source{{Path: "/home/op/.codex/config.toml", Kind: agent.KindMCP, Fingerprints: []string{"github"}}}}
	ev := scanRequests([][]byte{[]byte(`{"tools":[{"name":"exec_command"},{"name":"tare_canary_tc0123"},
		{"name":"github.create_issue"},{"name":"mcp__linear__list"},{"name":"githubby"}]}`)})
	var got []string
	for _, l := range detect(ev, s)[DetMCP] {
		got = append(got, l.What+" <- "+l.Source)
	}
	want := []string{
		"tool github.create_issue reached the model <- /home/op/.codex/config.toml (github)",
		"tool mcp__linear__list reached the model <- /home/op/.codex/config.toml",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("MCP detector saw:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLeaksNameTheFileNotItsText: what a detector says it saw names the kind and the file;
// the operator's instruction text, skill text and email stay out of the reading.
func TestLeaksNameTheFileNotItsText(t *testing.T) {
	s := subject{show: tilde, sources: []agent.Source{
		{Path: "/home/op/.claude/CLAUDE.md", Kind: agent.KindInstructions, Fingerprints: []string{"Never deploy on Fridays, ever."}},
		{Path: "/home/op/.claude/skills/pdf/SKILL.md", Kind: agent.KindSkill, Fingerprints: []string{"pdf: Fill PDF forms."}},
		{Path: "/home/op/.claude.json", Kind: agent.KindEmail, Fingerprints: []string{"op@example.org"}},
	}}
	// As Claude Code sends them, with the rule wrapped across lines and indented.
	ev := scanRequests([][]byte{[]byte(`{"system":"Never deploy on\n   Fridays, ever.\n- pdf: Fill PDF forms.\nuser op@example.org"}`)})
	r := &Reading{Agent: "claude", Verified: true, ControlSaw: map[string]string{}}
	for _, leaks := range detect(ev, s) {
		r.Leaks = append(r.Leaks, leaks...)
	}
	if len(r.Leaks) != 3 {
		t.Fatalf("%d leaks, want instructions, skill and email: %+v", len(r.Leaks), r.Leaks)
	}
	r.KeptOut = r.Leaks
	text := r.Render()
	for _, personal := range []string{"Fridays", "Fill PDF", "op@example.org"} {
		if strings.Contains(text, personal) {
			t.Errorf("the reading quotes %q:\n%s", personal, text)
		}
	}
	for _, want := range []string{"its instructions reached the model  <- /home/op/.claude/CLAUDE.md", "the account email reached the model  <- /home/op/.claude.json"} {
		if !strings.Contains(text, want) {
			t.Errorf("the reading lacks %q:\n%s", want, text)
		}
	}
}

// TestReadingsAreKeptPerAgentProjectAndRoom: a reading holds for one agent, project and
// room; storing another project's (or another room's) keeps both, and the reading says
// which room it read and that a real-provider run's room differs.
func TestReadingsAreKeptPerAgentProjectAndRoom(t *testing.T) {
	state := t.TempDir()
	readings := []*Reading{
		{Agent: "claude", Project: "/src/a", Room: RoomModelServer, Leaks: []Leak{{Detector: DetEnv, What: "x", Source: "y"}}},
		{Agent: "claude", Project: "/src/b", Room: RoomModelServer},
		{Agent: "claude", Project: "/src/a", Room: RoomModelServerHostNet},
		{Agent: "codex", Project: "/src/a", Room: RoomModelServer},
	}
	for _, r := range readings {
		if err := StoreReading(state, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range readings {
		data, err := os.ReadFile(ReadingPath(state, r.Agent, r.Project, r.Room))
		if err != nil {
			t.Fatalf("the reading of %s for %s in %q was not kept: %v", r.Agent, r.Project, r.Room, err)
		}
		var got struct{ Agent, Project, Room, Verdict string }
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Agent != r.Agent || got.Project != r.Project || got.Room != r.Room || got.Verdict != r.Verdict() {
			t.Errorf("kept %+v for %s %s %q (%s)", got, r.Agent, r.Project, r.Room, r.Verdict())
		}
	}
	if text := readings[0].Render(); !strings.Contains(text, "probed    tare's model server, no login copy; a real-provider run's room adds") {
		t.Errorf("the reading does not say which room it read:\n%s", text)
	}
}

// TestSummariesReadWhatWasStored: the app lists each stored reading with the verdict and the
// file StoreReading kept, one per agent, project and room, and names a file that is not a
// reading (with the fix) while still listing the others.
func TestSummariesReadWhatWasStored(t *testing.T) {
	state := t.TempDir()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	readings := []*Reading{
		{Agent: "codex", Version: "0.171.0", Project: "/src/a", Room: RoomModelServer, At: at},
		{Agent: "claude", Project: "/src/a", Room: RoomModelServer, At: at, Blind: []string{DetEnv}},
	}
	for _, r := range readings {
		if err := StoreReading(state, r); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(state, ProbesDir)
	if err := os.WriteFile(filepath.Join(dir, "pi-000000000000.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSummaries(dir)
	if err == nil || !strings.Contains(err.Error(), "pi-000000000000.json: not a probe reading") || !strings.Contains(err.Error(), "fix: run tare probe pi again") {
		t.Errorf("a file that is not a reading: %v", err)
	}
	want := []Summary{
		{Agent: "claude", Project: "/src/a", Room: RoomModelServer, Verdict: "not proven (blind)", At: at, Path: ReadingPath(state, "claude", "/src/a", RoomModelServer)},
		{Agent: "codex", Version: "0.171.0", Project: "/src/a", Room: RoomModelServer, Verdict: "tare: 0.00", Zero: true, At: at, Path: ReadingPath(state, "codex", "/src/a", RoomModelServer)},
	}
	if !slices.Equal(got, want) {
		t.Errorf("summaries\n got %+v\nwant %+v", got, want)
	}
}

// TestTwinCopiesNoLoginAndNoSettings: the twin with a copy of the operator's setup copies
// the files a detector reads, never a login (Codex's auth.json is also its email source) and
// never a settings-only file (hooks, helpers, providers, keys).
func TestTwinCopiesNoLoginAndNoSettings(t *testing.T) {
	home := t.TempDir()
	for _, rel := range []string{"CLAUDE.md", "settings.json", "auth.json", "config.toml", ".env"} {
		if err := os.WriteFile(home+"/"+rel, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sources := []agent.Source{
		{Path: home + "/CLAUDE.md", Kind: agent.KindInstructions},
		{Path: home + "/settings.json", Kind: agent.KindSettings},
		{Path: home + "/auth.json", Kind: agent.KindLogin},
		{Path: home + "/auth.json", Kind: agent.KindEmail},
		{Path: home + "/config.toml", Kind: agent.KindSettings},
		{Path: home + "/config.toml", Kind: agent.KindMCP},
		// Gemini CLI's .env names a system prompt by its host path, which the twin has not.
		{Path: home + "/.env", Kind: agent.KindEnvFile},
	}
	var got []string
	for _, s := range copyable(sources) {
		got = append(got, strings.TrimPrefix(s.Path, home+"/"))
	}
	if strings.Join(got, " ") != "CLAUDE.md config.toml" {
		t.Fatalf("the twin copies %v, want CLAUDE.md and config.toml (made inert) only", got)
	}
}

// TestMCPDetectorReadsGeminiTools: Gemini CLI offers its tools as functionDeclarations and
// names an MCP server's tool mcp_<server>_<tool>; both the server the subject declares and
// any other mcp_ tool are seen, Gemini's own tools are not.
func TestMCPDetectorReadsGeminiTools(t *testing.T) {
	s := subject{show: tilde, sources: []agent.Source{{Path: "/home/op/.gemini/settings.json", Kind: agent.KindMCP, Fingerprints: []string{"opmcp"}}}}
	ev := scanRequests([][]byte{[]byte(`{"contents":[],"tools":[{"functionDeclarations":[{"name":"run_shell_command"},
		{"name":"mcp_opmcp_canary"},{"name":"mcp_linear_list"},{"name":"write_file"}]}]}`)})
	var got []string
	for _, l := range detect(ev, s)[DetMCP] {
		got = append(got, l.What+" <- "+l.Source)
	}
	want := []string{
		"tool mcp_linear_list reached the model <- /home/op/.gemini/settings.json",
		"tool mcp_opmcp_canary reached the model <- /home/op/.gemini/settings.json (opmcp)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("MCP detector saw:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
