package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentsDir is the project's agents/ folder (npm ci --prefix agents/NAME for each agent).
func agentsDir(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", "agents"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// needCLIs skips t under -short: it runs the real agent CLIs (a node start each, seconds on a
// busy machine). Without -short a missing CLI still fails the test.
func needCLIs(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real agent CLIs; skipped under -short")
	}
}

// Find against the real CLIs the project pins in agents/package.json.
// A missing CLI fails the test with the fix.
func TestFindInstalled(t *testing.T) {
	needCLIs(t)
	dir := agentsDir(t)
	// The version check must leave the operator's HOME alone (codex creates $CODEX_HOME/tmp).
	home := t.TempDir()
	t.Setenv("HOME", home)
	pins := map[string]string{"claude": "2.1.197", "codex": "0.171.0", "pi": "0.73.1", "gemini": "0.61.0"}
	for _, a := range []Agent{Claude{}, Codex{}, Pi{}, Gemini{}} {
		inst, err := a.Find(FindOptions{Search: []string{filepath.Join(t.TempDir(), "empty"), dir}, PATH: "/usr/local/bin:/usr/bin:/bin"})
		if err != nil {
			t.Errorf("%v\n(install the pinned CLIs with scripts/setup in the project root)", err)
			continue
		}
		want := Install{Name: a.Name(), Bin: filepath.Join(dir, a.Name(), "node_modules", ".bin", a.Name()), Version: pins[a.Name()],
			Runtime: filepath.Join(dir, a.Name(), "node_modules"), Command: "/opt/agent/node_modules/.bin/" + a.Name()}
		if a.Name() != "claude" {
			want.Node = "/usr/bin/node" // codex's launcher, pi and gemini are node scripts; claude is a native binary
		}
		if inst != want {
			t.Errorf("%s:\n got %+v\nwant %+v", a.Name(), inst, want)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("the version checks wrote to HOME: %v", entries)
	}
}

func TestFindOverrideAndMissing(t *testing.T) {
	needCLIs(t)
	dir := agentsDir(t)
	empty := t.TempDir()
	// The config override wins over the search list.
	bin := filepath.Join(dir, "pi", "node_modules", ".bin", "pi")
	inst, err := Pi{}.Find(FindOptions{Bins: map[string]string{"pi": bin}, Search: []string{empty}, PATH: empty})
	if err != nil || inst.Bin != bin {
		t.Errorf("override: %+v, %v", inst, err)
	}
	_, err = Claude{}.Find(FindOptions{Bins: map[string]string{"claude": filepath.Join(empty, "nope")}})
	if err == nil || !strings.Contains(err.Error(), "agents.claude.bin") {
		t.Errorf("bad override: %v", err)
	}
	// Nothing anywhere: the error names the agent and both fixes.
	for _, a := range All() {
		_, err := a.Find(FindOptions{Search: []string{empty}, PATH: empty, Home: empty})
		if err == nil {
			t.Errorf("%s: found in an empty world", a.Name())
			continue
		}
		msg := err.Error()
		fix := "npm ci --prefix agents"
		if a.Name() == "agy" {
			fix = "antigravity.google/cli/install.sh"
		}
		if !strings.HasPrefix(msg, a.Name()+":") || !strings.Contains(msg, fix) || !strings.Contains(msg, "agents."+a.Name()+".bin") {
			t.Errorf("%s: missing-CLI error %q lacks the fix", a.Name(), msg)
		}
	}
}

func TestRuntimeOf(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
		return p
	}
	global := mk("lib/node_modules/@openai/codex/bin/codex.js")
	link := filepath.Join(root, "bin", "codex")
	os.MkdirAll(filepath.Dir(link), 0o755)
	os.Symlink(global, link)
	inst, err := runtimeOf("codex", link)
	if err != nil || inst.Runtime != filepath.Join(root, "lib", "node_modules") || inst.Command != "/opt/agent/node_modules/@openai/codex/bin/codex.js" {
		t.Errorf("global npm install: %+v, %v", inst, err)
	}
	// A binary in its version folder brings that folder, nothing above it.
	versioned := mk("share/agy/1.2.3/agy")
	inst, err = runtimeOf("agy", versioned)
	if err != nil || inst.Runtime != filepath.Dir(versioned) || inst.Command != "/opt/agent/1.2.3/agy" {
		t.Errorf("versioned binary: %+v, %v", inst, err)
	}
	// A binary among other files (~/.local/bin) comes alone.
	native := mk(".local/bin/claude")
	mk(".local/bin/deploy.sh")
	inst, err = runtimeOf("claude", native)
	if err != nil || inst.Runtime != native || inst.Command != "/opt/agent/claude" {
		t.Errorf("standalone binary: %+v, %v", inst, err)
	}
}

// TestFindPrefersTheAgentsOwnInstall: in a search folder, agents/NAME/node_modules (the CLI
// installed alone, what scripts/setup makes) wins over a node_modules shared by every agent,
// which is still found; the runtime bound is the node_modules the CLI came from.
func TestFindPrefersTheAgentsOwnInstall(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 0.73.1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shared := mk("node_modules/.bin/codex")
	o := FindOptions{Search: []string{dir}, PATH: t.TempDir(), VersionLater: true}
	inst, err := Codex{}.Find(o)
	if err != nil || inst.Bin != shared || inst.Runtime != filepath.Join(dir, "node_modules") || inst.Version != "" {
		t.Fatalf("shared install: %+v, %v", inst, err)
	}
	own := mk("codex/node_modules/.bin/codex")
	inst, err = Codex{}.Find(o)
	if err != nil || inst.Bin != own || inst.Runtime != filepath.Join(dir, "codex", "node_modules") {
		t.Fatalf("own install: %+v, %v", inst, err)
	}
	if v, err := inst.AskVersion(context.Background()); err != nil || v != "0.73.1" {
		t.Errorf("AskVersion: %q, %v", v, err)
	}
}

// A binary's version is asked once: a second Find of the same CLI (a probe, then each side and
// tail of a run) takes the answer kept for that file, and a changed file is asked again. The
// real pi CLI's script is copied so that it can be changed; its node start is what a probe
// under load waited on, once per probe.
func TestVersionIsAskedOncePerBinary(t *testing.T) {
	needCLIs(t)
	dir := agentsDir(t)
	t.Setenv("HOME", t.TempDir())
	src, err := filepath.EvalSymlinks(filepath.Join(dir, "pi", "node_modules", ".bin", "pi"))
	if err != nil {
		t.Fatal(err)
	}
	// A wrapper beside the real script that counts its starts, then runs pi.
	count := filepath.Join(t.TempDir(), "starts")
	wrap := filepath.Join(t.TempDir(), "pi")
	script := "#!/bin/sh\necho x >> " + count + "\nexec /usr/bin/node " + src + " \"$@\"\n"
	if err := os.WriteFile(wrap, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	starts := func() int {
		data, _ := os.ReadFile(count)
		return strings.Count(string(data), "x")
	}
	inst := Install{Name: "pi", Bin: wrap}
	for i := range 3 {
		v, err := inst.AskVersion(context.Background())
		if err != nil || v != "0.73.1" {
			t.Fatalf("ask %d: %q, %v", i, v, err)
		}
	}
	if n := starts(); n != 1 {
		t.Errorf("three asks of one binary started it %d times, want once", n)
	}
	// The binary changes (an upgrade in place): asked again.
	if err := os.WriteFile(wrap, []byte(script+"# upgraded\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.AskVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := starts(); n != 2 {
		t.Errorf("after the binary changed it was started %d times in all, want twice", n)
	}
}
