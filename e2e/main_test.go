package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/engine/journal"
	enginerun "tare/engine/run"
)

// tareBin is the real binary, built once for these tests.
var tareBin string

// TestMain builds tare and tare-room once for every test here. Under -short it builds
// nothing and runs nothing: each test here drives the binary, and most start rooms.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped under -short")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "tare-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tareBin = filepath.Join(dir, "tare")
	build := exec.Command("go", "build", "-o", tareBin, ".")
	build.Dir = repoDir()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building tare: %v\n%s", err, out)
		os.Exit(1)
	}
	// tare-room beside it, as scripts/setup lays an install out: rooms run their relay and
	// the capsule hook from it.
	room := exec.Command("go", "build", "-o", filepath.Join(dir, "tare-room"), "./cmd/tare-room")
	room.Dir = repoDir()
	room.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as scripts/setup builds it
	if out, err := room.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building tare-room: %v\n%s", err, out)
		os.Exit(1)
	}
	// The agent CLIs sit next to the binary, as in an install (tare never looks in the
	// working dir): agents/ links to this checkout's pinned CLIs.
	if err := os.Symlink(filepath.Join(repoDir(), "agents"), filepath.Join(dir, "agents")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repoDir is this checkout: go test runs this package's tests in its folder, e2e/.
func repoDir() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Dir(wd)
}

// run is one tare command in a sandbox of its own: a fresh HOME, config folder and TMPDIR,
// so a test can check that the command leaves nothing behind.
type run struct {
	home, config, tmp string
	stdout, stderr    string
	code              int
}

func newRun(t *testing.T, configText string) *run {
	t.Helper()
	r := newRunIn(t.TempDir())
	if configText != "" {
		if err := os.WriteFile(filepath.Join(r.config, "tare", "config.toml"), []byte(configText), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// newRunIn is a run's sandbox below root, for a benchmark too.
func newRunIn(root string) *run {
	r := &run{home: filepath.Join(root, "home"), config: filepath.Join(root, "config"), tmp: filepath.Join(root, "tmp")}
	for _, d := range []string{r.home, filepath.Join(r.config, "tare"), r.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			panic(err)
		}
	}
	return r
}

func (r *run) tare(t testing.TB, args ...string) *run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tareBin, args...)
	cmd.Env = r.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r.stdout, r.stderr = out.String(), errb.String()
	r.code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// env is the environment of a command of this run.
func (r *run) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "XDG_CONFIG_HOME=" + r.config,
		"XDG_STATE_HOME=" + filepath.Join(r.home, ".local", "state"), "TMPDIR=" + r.tmp, "LANG=C.UTF-8"}
}

// leftovers lists what a finished command left: entries in its TMPDIR (room folders) and
// processes that still name that folder, in their command line or, for a room's processes
// (bwrap reads its options from a descriptor, so its argv names no host path), in their
// mounts: a room's socket folder is bound from there. mountinfo names a bind's source from
// the root of its file system, so there the folder is matched by its last three names
// (t.TempDir's unique ones).
func (r *run) leftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	entries, _ := os.ReadDir(r.tmp)
	for _, e := range entries {
		left = append(left, "temp "+e.Name())
	}
	parts := strings.Split(r.tmp, "/")
	tail := "/" + strings.Join(parts[max(0, len(parts)-3):], "/") + "/"
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		mounts, _ := os.ReadFile(filepath.Join(p, "mountinfo"))
		if bytes.Contains(cmdline, []byte(r.tmp)) || bytes.Contains(mounts, []byte(tail)) {
			left = append(left, "process "+p)
		}
	}
	return left
}

// recordedRunWithoutCapsule is a recorded run's folder whose step 2 left no capsule of its
// own (record.json lists it as inherited from step 1), as tare record writes it.
func recordedRunWithoutCapsule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		enginerun.RecipeFile: `{"format": "tare-recipe 1", "kind": "record", "sides": [{"key": "a", "agent": "pi"}], "runs": 1, "jobs": 1}`,
		"original/record.json": `{"agent": "pi", "task": "t", "session_id": "s", "exit": "agent exit 0", "snapshots": "hook",
			"steps": [{"N": 1, "Tool": "bash echo one", "IDs": ["c1"], "Events": 1}, {"N": 2, "Tool": "bash sed -i", "IDs": ["c2"], "Events": 2}],
			"capsules": [{}, {}, {}], "inherited": [{"step": 2, "from": 1}], "events": [{}, {}]}`,
		"original/session.jsonl": "{}\n",
		journal.JournalFile:      "",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBadInputIsOneLineAndLeavesNothing: each bad input gets one line naming what is wrong
// and the fix, a non-zero exit, and no room folder or process left behind.
func TestBadInputIsOneLineAndLeavesNothing(t *testing.T) {
	brokenBwrap := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(brokenBwrap, []byte("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	inherited := recordedRunWithoutCapsule(t)
	cases := []struct {
		name   string
		config string
		args   []string
		want   []string
	}{
		{"unknown agent", "", []string{"probe", "nosuch"}, []string{`unknown agent "nosuch"`, "claude"}},
		{"unknown attach command", "", []string{"nosuch"}, []string{`unknown command "nosuch"`}},
		{"project missing", "", []string{"probe", "claude", "--project", "/nonexistent/proj"}, []string{"--project /nonexistent/proj", "fix:"}},
		{"project is a file", "", []string{"claude", "--project", "/etc/hostname"}, []string{"not a folder", "fix:"}},
		{"missing CLI", "[agents.claude]\nbin = \"/nonexistent/claude\"\n", []string{"probe", "claude", "--project", project}, []string{"/nonexistent/claude", "agents.claude.bin"}},
		{"missing bwrap", "bwrap = \"/nonexistent/bwrap\"\n", []string{"probe", "pi", "--project", project}, []string{"/nonexistent/bwrap", "bubblewrap"}},
		{"unusable bwrap", "bwrap = \"" + brokenBwrap + "\"\n", []string{"probe", "pi", "--project", project}, []string{"namespace"}},
		{"config wrong type", "[agents.claude]\nbin = 3\n", []string{"probe", "claude", "--project", project}, []string{"config.toml:2: key agents.claude.bin", "fix:"}},
		{"config unknown key", "[network]\nalow = []\n", []string{"doctor"}, []string{`config.toml:2: unknown key "network.alow"`}},
		{"bad script", "", []string{"model-server", "--script", "/nonexistent/script.toml"}, []string{"/nonexistent/script.toml"}},
		{"prompt file missing", "", []string{"calibrate", "--prompt-file", "/nonexistent/task.txt", "--side", "pi", "--project", project}, []string{"--prompt-file /nonexistent/task.txt", "fix:"}},
		{"check bind missing", "[check]\nread_only = [\"/nonexistent/go\"]\n", []string{"calibrate", "x", "--side", "pi", "--check", "true", "--project", project}, []string{"key check.read_only: /nonexistent/go", "fix:"}},
		{"unknown side agent", "", []string{"calibrate", "x", "--side", "nosuch --fast", "--project", project}, []string{`--side "nosuch --fast"`, `unknown agent "nosuch"`}},
		{"resume of a folder that is not a run", "", []string{"resume", project}, []string{"not a tare run", "fix:"}},
		{"tail of a folder that is not a run", "", []string{"tail", project, "--step", "1"}, []string{"not a tare run", "fix:"}},
		{"watch of a folder that is not a run", "", []string{"watch", project}, []string{"not a tare run directory", "fix:"}},
		{"tail from a step without a capsule", "", []string{"tail", inherited, "--step", "2", "--handoff", "pi"},
			[]string{"--step 2: the step has no capsule of its own", "step 1's", "fix: add --from-nearest"}},
		{"serve without an address", "", []string{"serve"}, []string{"--ssh ADDR"}},
		{"cost cap on agy's real provider", "", []string{"calibrate", "x", "--side", "agy", "--max-cost", "1", "--project", project}, []string{"--max-cost", "Code Assist", "fix: drop the cap for agy"}},
		{"cliff budget below the start and end", "", []string{"cliff", "pi", "x", "--check", "true", "--budget", "5", "--project", project}, []string{"--budget 5", "raise --budget"}},
		{"cliff without a check", "", []string{"cliff", "pi", "x", "--project", project}, []string{"--check", "cliff needs a check"}},
		{"cliff of a folder that is not a run", "", []string{"cliff", "--run", project}, []string{"not a tare run", "fix:"}},
		{"cliff with an agent and --run", "", []string{"cliff", "pi", "x", "--run", project}, []string{"--run DIR", "no AGENT or PROMPT"}},
		{"swap cut outside [0,1]", "", []string{"swap", "x", "--check", "true", "--cuts", "0,1.5", "--project", project}, []string{"--cuts", "outside [0, 1]"}},
		{"swap cuts not increasing", "", []string{"swap", "x", "--check", "true", "--cuts", "0.5,0.2", "--project", project}, []string{"--cuts", "increasing order"}},
		{"swap detect and tails", "", []string{"swap", "x", "--check", "true", "--detect", "0.5", "--tails", "4", "--project", project}, []string{"--detect", "--tails", "not both"}},
		{"swap detect out of range", "", []string{"swap", "x", "--check", "true", "--detect", "1.5", "--project", project}, []string{"--detect 1.5", "(0, 1]"}},
		{"swap detect too small", "", []string{"swap", "x", "--check", "true", "--detect", "0.02", "--project", project}, []string{"--detect 0.02", "more than 40 tails"}},
		{"swap detect with originals", "", []string{"swap", "x", "--check", "true", "--detect", "0.5", "--originals", "3", "--project", project}, []string{"--detect with --originals 3", "--tails"}},
		{"swap no originals", "", []string{"swap", "x", "--check", "true", "--originals", "0", "--project", project}, []string{"--originals 0", "at least 1"}},
		{"swap too many originals", "", []string{"swap", "x", "--check", "true", "--originals", "99", "--project", project}, []string{"--originals 99", "30"}},
		{"swap handoff unknown", "", []string{"swap", "x", "--check", "true", "--handoff", "email", "--project", project}, []string{"--handoff", "trail"}},
		{"swap agent not installed", "[agents.codex]\nbin = \"/nonexistent/codex\"\n", []string{"swap", "x", "--check", "true", "--project", project}, []string{"/nonexistent/codex", "agents.codex.bin"}},
		{"cliff agent not installed", "[agents.codex]\nbin = \"/nonexistent/codex\"\n", []string{"cliff", "codex", "x", "--check", "true", "--project", project}, []string{"/nonexistent/codex", "agents.codex.bin"}},
		{"env folder missing", "", []string{"calibrate", "x", "--side", "pi", "--env", "/nonexistent/env"}, []string{"--env /nonexistent/env: not a folder", "fix:"}},
		{"env folder without a Dockerfile", "", []string{"record", "x", "--side", "pi", "--env", project}, []string{"--env " + project + ": no Dockerfile in it", "fix:"}},
		{"cliff gap outside [0,1]", "", []string{"cliff", "pi", "x", "--check", "true", "--gap-below", "2", "--project", project}, []string{"--gap-below 2", "between 0 and 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, c.config).tare(t, c.args...)
			if r.code == 0 {
				t.Fatalf("exit 0, want non-zero; stderr %q", r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "probe ") { // progress lines of a probe that got going
					t.Errorf("stderr has more than one error line: %q", r.stderr)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(last, w) {
					t.Errorf("error line %q lacks %q", last, w)
				}
			}
			if left := r.leftovers(t); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestProbeWithTheRealBinary runs the shipped binary end to end: its own relay and
// inspection inside the room, its own model server, the reading on stdout.
func TestProbeWithTheRealBinary(t *testing.T) {
	r := newRun(t, "").tare(t, "probe", "pi", "--project", t.TempDir())
	if r.code != 0 || !strings.Contains(r.stdout, "\ntare: 0.00\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestDoctor(t *testing.T) {
	r := newRun(t, "").tare(t, "doctor")
	for _, want := range []string{"ok    bwrap    0.", "ok    claude   2.1.197", "ok    codex    0.171.0", "ok    pi       0.73.1", "ok    gemini   0.61.0", "none  agy", "ok    chromium /usr/lib/chromium/chromium-headless-shell"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	// agy is not installed here: that is a "none" line, not a failure, so a fresh machine
	// set up by scripts/setup passes.
	if r.code != 0 {
		t.Errorf("doctor exited %d with every installed part working, want 0:\n%s", r.code, r.stdout)
	}
	// An agent the config names that is not there is a FAIL, and the exit says so.
	r = newRun(t, "[agents.agy]\nbin = \"/nonexistent/agy\"\n").tare(t, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL  agy") {
		t.Errorf("doctor with a configured agy that is missing: exit %d, want 1 and a FAIL line:\n%s", r.code, r.stdout)
	}
}

// TestProjectThatHoldsTheHomeIsRefused: probe, an attached run, calibrate, cliff and record
// on a project that is the home, holds it, or is / are refused with one line naming the fix,
// exit 2, and nothing started or left behind (no room folder, no run directory).
func TestProjectThatHoldsTheHomeIsRefused(t *testing.T) {
	cases := []struct {
		name string
		args func(r *run) []string
		want string
	}{
		{"probe of the home", func(r *run) []string { return []string{"probe", "pi", "--project", r.home} }, "is your home folder"},
		{"attached run in the home", func(r *run) []string { return []string{"pi", "--project", r.home, "--offline"} }, "is your home folder"},
		{"calibrate of /", func(r *run) []string { return []string{"calibrate", "x", "--side", "pi", "--project", "/"} }, "is the host's root folder"},
		{"cliff in the home", func(r *run) []string { return []string{"cliff", "pi", "x", "--check", "true", "--project", r.home} }, "is your home folder"},
		{"record of the home's parent", func(r *run) []string {
			return []string{"record", "x", "--side", "pi", "--project", filepath.Dir(r.home)}
		}, "is a folder holding your home"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, "")
			r.tare(t, c.args(r)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) || !strings.Contains(lines[0], "fix:") {
				t.Fatalf("exit %d, stderr %q: want exit 2 and one line saying %q and the fix", r.code, r.stderr, c.want)
			}
			if left := r.leftovers(t); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if runs, _ := filepath.Glob(filepath.Join(r.home, ".local", "state", "tare", "*", "*")); len(runs) > 0 {
				t.Errorf("run directories left behind: %v", runs)
			}
		})
	}
}

// TestAllowDirtyProbesTheHomeAndNamesItsSecrets: with --allow-dirty the probe of the home
// runs, and its reading names each secret file the room holds.
func TestAllowDirtyProbesTheHomeAndNamesItsSecrets(t *testing.T) {
	r := newRun(t, "")
	for rel, text := range map[string]string{".ssh/id_ed25519": "key\n", ".aws/credentials": "[default]\n"} {
		p := filepath.Join(r.home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.tare(t, "probe", "pi", "--project", r.home, "--allow-dirty")
	for _, want := range []string{"tare: 2 leaks", "secret file in the room at /work/.ssh/id_ed25519", "secret file in the room at /work/.aws/credentials"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("reading lacks %q (exit %d)\nstdout:\n%s\nstderr:\n%s", want, r.code, r.stdout, r.stderr)
		}
	}
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (not 0.00)", r.code)
	}
}

// TestTareRoomServesTheMCPCanary: the probe's control plants its MCP server as tare-room's
// (what a room with tare-room runs, started in a fraction of tare's time); that binary
// answers as the server, and refuses a bad command line with exit 2.
func TestTareRoomServesTheMCPCanary(t *testing.T) {
	room := filepath.Join(filepath.Dir(tareBin), "tare-room")
	cmd := exec.Command(room, "mcp-canary", "tok9")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"name":"tare_canary_tok9"`) {
		t.Fatalf("tare-room mcp-canary: %v: %s", err, out)
	}
	err = exec.Command(room, "mcp-canary").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("tare-room mcp-canary without a token: %v, want exit 2", err)
	}
}
