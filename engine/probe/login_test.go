package probe

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/engine/room"
	"tare/sandbox"
)

// operatorLogins plants an operator home whose Claude login file holds remote MCP servers'
// tokens beside the login, and whose pi auth.json holds three providers' logins.
func operatorLogins(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for rel, text := range map[string]string{
		".claude/.credentials.json": `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-own","refreshToken":"sk-ant-ort01-own","expiresAt":4102444800000,"scopes":["user:inference"]},
			"mcpOAuth":{"linear|abc":{"serverName":"linear","accessToken":"lin-access-zq","refreshToken":"lin-refresh-zq","clientSecret":"lin-client-zq"}}}`,
		".pi/agent/auth.json": `{"anthropic":{"type":"oauth","access":"sk-ant-oat01-pi","refresh":"sk-ant-ort01-pi","expires":4102444800000},
			"openai":{"type":"api_key","key":"sk-openai-zq"},"github-copilot":{"type":"oauth","refresh":"ghu_copilot-zq","access":"tid-zq","expires":1}}`,
	} {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// TestLoginRoomHoldsOneLogin starts real-provider rooms with --login for Claude Code and pi
// (anthropic) from an operator whose login files hold other logins, and reads the copy inside
// the room: only the agent's own login is there; the MCP servers' and other providers'
// tokens are not. The probe's reading of the same plan declares the kept keys and no leak.
func TestLoginRoomHoldsOneLogin(t *testing.T) {
	needRooms(t)
	home := operatorLogins(t)
	for name, want := range map[string]struct{ rel, own string }{
		"claude": {".claude/.credentials.json", "sk-ant-oat01-own"},
		"pi":     {".pi/agent/auth.json", "sk-ant-oat01-pi"},
	} {
		a, inst, cfg := mustFind(t, name)
		p := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), ReadOnly: true, Login: true, HostHome: home}
		box, _, err := room.Build(p, "")
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut strings.Builder
		box.Argv = []string{"/bin/cat", agent.Home + "/" + want.rel}
		box.Stdout, box.Stderr = &out, &errOut
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		code, err := room.Run(ctx, box)
		cancel()
		if err != nil || code != 0 {
			t.Fatalf("%s: room: exit %d %v: %s", name, code, err, errOut.String())
		}
		if !strings.Contains(out.String(), want.own) || strings.Contains(out.String(), "zq") {
			t.Errorf("%s: the room's login copy holds other logins, or not its own:\n%s", name, out.String())
		}
		declared, leaks := loginReading(p, home, subject{sources: a.Personal(home, p.Workspace), show: tilde})
		if len(leaks) > 0 || len(declared) != 1 || !strings.Contains(declared[0], "~/"+want.rel+" (0600), only ") {
			t.Errorf("%s: the probe's login reading: declared %q, leaks %v", name, declared, leaks)
		}
	}
}

// TestLoginLeaksNamesWhatTheCopyHoldsBeyondTheLogin is the probe's check with the rewrite
// removed: a copy placed whole, as tare placed it before, is read as a leak of each of the
// MCP server's tokens, naming the file they came from.
func TestLoginLeaksNamesWhatTheCopyHoldsBeyondTheLogin(t *testing.T) {
	home := operatorLogins(t)
	s, err := agent.Claude{}.Room(agent.RoomOptions{HostHome: home, Login: true, Proxy: "http://127.0.0.1:3128"})
	if err != nil || len(s.Logins) != 1 {
		t.Fatalf("room: %v, logins %+v", err, s.Logins)
	}
	l := s.Logins[0]
	whole, err := os.ReadFile(l.Source)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, leak := range loginLeaks([]sandbox.File{{Path: l.Path, Data: whole}}, l, tilde) {
		got = append(got, leak.Detector+": "+leak.What+" <- "+leak.Source)
	}
	at := " <- " + filepath.Join(home, ".claude/.credentials.json")
	want := []string{}
	for _, k := range []string{"accessToken", "clientSecret", "refreshToken", "serverName"} {
		want = append(want, DetSecrets+": the login copy /home/agent/.claude/.credentials.json holds mcpOAuth.linear|abc."+k+" beyond the declared login"+at)
	}
	if !slices.Equal(got, want) {
		t.Errorf("leaks of a whole copy:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The copy the adapter places holds nothing beyond its login.
	var placed []sandbox.File
	for _, f := range s.Files {
		placed = append(placed, sandbox.File{Path: f.Path, Data: f.Data})
	}
	if leaks := loginLeaks(placed, l, tilde); len(leaks) > 0 {
		t.Errorf("the adapter's copy reads as leaking: %v", leaks)
	}
}

// TestProbeOfAShutFolderIsBlind: a mode-000 folder of the project holding a hard link of the
// operator's instructions and a private key does not read 0.00: the agent owns it and can
// open it up, so the host-file and secret detectors are blind, naming the folder.
func TestProbeOfAShutFolderIsBlind(t *testing.T) {
	needRooms(t)
	home, project := t.TempDir(), t.TempDir()
	writeFiles(t, home, ".pi/agent/AGENTS.md")
	writeFiles(t, project, "src/main.py", "locked/.ssh/id_rsa")
	if err := os.Link(filepath.Join(home, ".pi/agent/AGENTS.md"), filepath.Join(project, "locked", "notes.md")); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(project, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	r := probeOf(t, ProbeOptions{Project: project, HostHome: home})
	why := "the walk could not enter /work/locked, which the agent owns and can open up (chmod)"
	for _, d := range []string{DetHostFiles, DetSecrets} {
		if !slices.ContainsFunc(r.Unseen, func(u Leak) bool { return u.Detector == d && strings.HasPrefix(u.What, why) && u.Source == locked }) {
			t.Errorf("%s is not blind naming %s", d, locked)
		}
	}
	if r.Zero() || !strings.Contains(r.Render(), "blind     host files    "+locked+": "+why) {
		t.Fatalf("reading %q of a project with a shut folder, want blind naming it\n%s", r.Verdict(), r.Render())
	}
}

// TestAnUnenteredFolderIsBlindNotClean: a walk that could not enter folders the agent can
// open up reads blind for host files and secrets, naming each folder by its host path and
// counting those beyond the list, never 0.00.
func TestAnUnenteredFolderIsBlindNotClean(t *testing.T) {
	r := &Reading{Agent: "pi", ControlSaw: map[string]string{}}
	s := subject{project: "/src/proj", show: tilde}
	markBlind(r, roomSightOf(&sandbox.View{Unentered: []string{sandbox.WorkDir + "/locked"}, UnenteredMore: 3}), s)
	if r.Zero() || !slices.Equal(r.Blind, []string{DetHostFiles, DetSecrets}) {
		t.Fatalf("verdict %q, blind %v after a walk that could not enter /work/locked", r.Verdict(), r.Blind)
	}
	text := r.Render()
	for _, want := range []string{
		"blind     host files    /src/proj/locked: the walk could not enter /work/locked, which the agent owns",
		"blind     secrets       the clean room's walk: the walk could not enter 3 more folders",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("reading lacks %q:\n%s", want, text)
		}
	}
}

// TestStubMCPKeepsNamesNotCommands: the twin's copy of each MCP config names the same
// servers, wherever the file declares them, each tare's canary; nothing of the operator's
// commands, URLs, env or headers is left.
func TestStubMCPKeepsNamesNotCommands(t *testing.T) {
	for _, c := range []struct {
		path, data string
		names      []string
	}{
		{"/h/.claude.json", `{"mcpServers":{"a":{"command":"/opbin/run-a","env":{"TOKEN":"op-secret"}}},
			"projects":{"/p":{"mcpServers":{"b":{"type":"http","url":"https://op.example/mcp","headers":{"Authorization":"op-secret"}}}}},"oauthAccount":{"emailAddress":"me@x"}}`,
			[]string{"a", "b"}},
		{"/h/.gemini/settings.json", `{"mcpServers":{"g":{"command":"python3","args":["/opbin/server.py"],"cwd":"/opbin"}}}`, []string{"g"}},
		{"/h/.codex/config.toml", "model = \"m\"\n[mcp_servers.c]\ncommand = \"/opbin/run-c\"\n[mcp_servers.c.env]\nTOKEN = \"op-secret\"\n[profiles.p.mcp_servers.d]\nurl = \"https://op.example\"\n",
			[]string{"c", "d"}},
	} {
		out, names, err := stubMCP(c.path, []byte(c.data), agent.TareBin)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if !slices.Equal(names, c.names) || strings.Contains(string(out), "/opbin") || strings.Contains(string(out), "op-secret") || strings.Contains(string(out), "op.example") {
			t.Errorf("%s: servers %v (want %v), copy:\n%s", c.path, names, c.names, out)
		}
		for _, n := range c.names {
			if !strings.Contains(string(out), "mcp-canary") || !strings.Contains(string(out), `"`+n+`"`) {
				t.Errorf("%s: server %s is not tare's canary under its name:\n%s", c.path, n, out)
			}
		}
	}
	if _, _, err := stubMCP("/h/.claude.json", []byte("{"), agent.TareBin); err == nil {
		t.Error("a config that is not JSON was rewritten")
	}
}
