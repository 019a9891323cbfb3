package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tare/config"
	"tare/demo"
	"tare/engine/journal"
	"tare/engine/run"
	"tare/modelserver"
)

// loopbackListener is a host 127.0.0.1 listener that counts the connections it accepts.
func loopbackListener(t *testing.T) (port int, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = &atomic.Int32{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// TestCheckRunsInItsOwnRoom: the agent (the real Codex CLI on tare's model server) writes a
// check.sh into its workspace, as an agent that games its check would, and the operator's
// check runs it. In its room it finds no host file outside the workspace, none of the
// operator's variables, no host loopback listener and nothing of the host to write to. The
// same tail with --check-on-host reaches all of them and says so in the journal: that is
// what the room case would show if the check ran outside the room (the old code), so this
// test is also the mutation test of the check's room.
func TestCheckRunsInItsOwnRoom(t *testing.T) {
	needRooms(t)
	hostDir := t.TempDir()
	canary := filepath.Join(hostDir, "id_ed25519")
	if err := os.WriteFile(canary, []byte("CANARY-FILE-5c1e"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TARE_CHECK_TEST_API_KEY", "CANARY-ENV-77aa")
	port, accepted := loopbackListener(t)
	checkSh := fmt.Sprintf(`echo "home=$HOME"
echo "file=$(cat %[1]s 2>&1)"
echo "env=$TARE_CHECK_TEST_API_KEY"
if bash -c 'echo hi > /dev/tcp/127.0.0.1/%[2]d' 2>/dev/null; then echo loopback=reached; else echo loopback=refused; fi
if echo pwned > %[3]s/pwned 2>/dev/null; then echo write=done; else echo write=refused; fi
`, canary, port, hostDir)
	script, err := modelserver.ParseScript([]byte(fmt.Sprintf(`
[[turn]]
text = "Writing the check helper."
write = { path = "check.sh", content = '''%s''' }

[[turn]]
text = "Done."
`, checkSh)), "check-escape.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptServer(t, script)

	cases := []struct {
		name   string
		room   run.CheckRoom
		want   []string
		reach  bool
		detail string
		report string
	}{
		{"in its room", run.CheckRoom{}, []string{"home=/home/agent", "env=\n", "loopback=refused", "write=refused"}, false, "check exit 0",
			"in a room of its own: the workspace at /work read-write, a fresh home, none of your variables, no network"},
		{"on the host", run.CheckRoom{OnHost: true}, []string{"file=CANARY-FILE-5c1e", "env=CANARY-ENV-77aa", "loopback=reached", "write=done"}, true, "check exit 0 (ON THE HOST)",
			"ON THE HOST (--check-on-host)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(hostDir, "pwned"))
			before := accepted.Load()
			env, start := newTestRun(t, "codex", srv.Addr(), "sh check.sh > findings.txt 2>&1")
			env.recipe.Keep, env.recipe.CheckRoom = true, c.room
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			spec := tailSpec{ID: "t", Side: journal.Side{Key: "a", Agent: "codex"}, How: "fresh", Prompt: "Write check.sh.", Start: start}
			if err := runTail(ctx, env, spec); err != nil {
				t.Fatal(err)
			}
			tl := journal.Replay("run", mustJournal(t, env.run.Dir())).Tails["t"]
			if tl == nil || !strings.HasSuffix(tl.Detail, "; "+c.detail) {
				t.Fatalf("journaled tail %+v, want its detail to end %q", tl, c.detail)
			}
			if report := calibrateReport(env.recipe, env.run.Snapshot()); !strings.Contains(report, c.report) {
				t.Errorf("the report lacks %q:\n%s", c.report, report)
			}
			findings := readFile(t, filepath.Join(env.run.Dir(), "tails", "t", "work", "findings.txt"))
			for _, w := range c.want {
				if !strings.Contains(findings, w) {
					t.Errorf("the check's findings lack %q:\n%s", w, findings)
				}
			}
			if !c.reach {
				for _, leak := range []string{"CANARY-FILE-5c1e", "CANARY-ENV-77aa"} {
					if strings.Contains(findings, leak) {
						t.Errorf("the agent's check.sh saw %s from its room:\n%s", leak, findings)
					}
				}
				if n := accepted.Load() - before; n != 0 {
					t.Errorf("the host loopback listener accepted %d connections from the check's room", n)
				}
				if fileExists(filepath.Join(hostDir, "pwned")) {
					t.Error("the agent's check.sh wrote into a host folder outside the workspace")
				}
			}
		})
	}
}

// TestCheckRoomGivesOnlyWhatConfigNames: config [check] brings a toolchain read-only, a cache
// read-write at a path of the room's choosing (a toolchain under /usr, already in the room, is
// accepted), a PATH entry, the named variables and no
// others, and, with network = true, the host's network, which the tail's detail and the
// report then say.
func TestCheckRoomGivesOnlyWhatConfigNames(t *testing.T) {
	needRooms(t)
	tool, cache, work := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(tool, "toolver"), []byte("#!/bin/sh\necho tool 1.2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TARE_CHECK_PASSED", "passed-in")
	t.Setenv("TARE_CHECK_KEPT_OUT", "CANARY-KEPT-OUT")
	port, accepted := loopbackListener(t)
	// /usr/share is in every room already (under /usr): declaring it is accepted, not refused.
	cr := run.CheckRoom{ReadOnly: []string{tool, "/usr/share"}, Caches: []string{cache + ":/home/agent/.cache/tool"}, Path: []string{tool},
		Env: []string{"TARE_CHECK_PASSED"}, Network: true}
	check := fmt.Sprintf(`{
echo "tool=$(toolver)"
if echo x > %[1]s/toolver; then echo tool-write=done; else echo tool-write=refused; fi
echo filled > /home/agent/.cache/tool/out
echo "passed=$TARE_CHECK_PASSED kept=$TARE_CHECK_KEPT_OUT"
if bash -c 'echo hi > /dev/tcp/127.0.0.1/%[2]d'; then echo loopback=reached; else echo loopback=refused; fi
} > findings.txt 2>&1; echo score 7`, tool, port)
	if err := cr.Validate("config"); err != nil {
		t.Fatal(err)
	}
	c := runCheck(context.Background(), check, work, time.Minute, cr, &config.Config{})
	findings := readFile(t, filepath.Join(work, "findings.txt"))
	for _, w := range []string{"tool=tool 1.2", "tool-write=refused", "passed=passed-in kept=\n", "loopback=reached"} {
		if !strings.Contains(findings, w) {
			t.Errorf("the check's findings lack %q:\n%s", w, findings)
		}
	}
	if got := readFile(t, filepath.Join(cache, "out")); got != "filled\n" {
		t.Errorf("the cache bind holds %q, want what the check wrote", got)
	}
	if !c.Passed || c.Score == nil || *c.Score != 7 || c.Detail != "check exit 0 (host network): score 7" {
		t.Errorf("check result %+v (score %v)", c, c.Score)
	}
	if accepted.Load() == 0 {
		t.Error("with network = true the host loopback listener saw no connection")
	}
	report := calibrateReport(&run.Recipe{Project: work, Check: check, CheckRoom: cr}, journal.Replay("run", nil))
	for _, w := range []string{"network: HOST (check.network = true)", tool + " (read-only)", cache + " at /home/agent/.cache/tool (read-write)", "env: TARE_CHECK_PASSED"} {
		if !strings.Contains(report, w) {
			t.Errorf("the report lacks %q:\n%s", w, report)
		}
	}
}

// TestCheckRoomKeepsTimeoutKillAndVerdict: a check in its room keeps what the host check had:
// its timeout (the room killed, everything in it), no background child left after it ends,
// the exit, the last line and the judge's score; and the demo's check still passes there.
func TestCheckRoomKeepsTimeoutKillAndVerdict(t *testing.T) {
	needRooms(t)
	work := t.TempDir()
	began := time.Now()
	c := runCheck(context.Background(), "sleep 611.5 & sleep 612.5", work, time.Second, run.CheckRoom{}, &config.Config{})
	if c.Passed || c.Detail != "check timed out after 1s" {
		t.Errorf("timed-out check: %+v", c)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the timed-out check took %s to stop", took)
	}
	// The demo's own check passes on a workspace the agent got right.
	if err := os.WriteFile(filepath.Join(work, "greet.sh"), []byte("#!/bin/sh\necho \"hello, tare\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c := runCheck(context.Background(), demo.Check, work, time.Minute, run.CheckRoom{}, &config.Config{}); !c.Passed || c.Detail != "check exit 0" {
		t.Errorf("the demo's check on a right greet.sh: %+v", c)
	}
	c = runCheck(context.Background(), "(sleep 613.5 &); echo judged; echo score 3; exit 4", work, time.Minute, run.CheckRoom{}, &config.Config{})
	if c.Passed || c.Detail != "check exit 4: score 3" || c.Score == nil || *c.Score != 3 {
		t.Errorf("failing check: %+v", c)
	}
	for _, arg := range []string{"611.5", "612.5", "613.5"} {
		if pids := processesWithArg(arg); len(pids) > 0 {
			t.Errorf("sleep %s outlived its check: pids %v", arg, pids)
		}
	}
}

// processesWithArg lists the host processes with arg in their command line.
func processesWithArg(arg string) []int {
	var out []int
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(data), "\x00") {
			if a == arg {
				n, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				out = append(out, n)
			}
		}
	}
	return out
}

// TestCheckRoomRefusedBeforeAnythingStarts: a [check] bind that does not exist, one at a path
// the room keeps for itself, and --check-on-host without a check are each refused in one line
// naming the fix, before the run directory exists.
func TestCheckRoomRefusedBeforeAnythingStarts(t *testing.T) {
	sides, err := ParseSides([]string{"pi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		readOnly []string
		caches   []string
		check    string
		onHost   bool
		want     string
	}{
		{"missing bind", []string{"/nonexistent/go"}, nil, "true", false, "key check.read_only: /nonexistent/go: no such file or directory; fix: create it, or remove"},
		{"bind over the workspace", nil, []string{t.TempDir() + ":/work/cache"}, "true", false, "key check.caches"},
		{"on host without a check", nil, nil, "", true, "--check-on-host: the run has no check (it was started without --check); fix: drop --check-on-host"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, []string{"pi"})
			cfg.Path = "/etc/tare/config.toml"
			cfg.Check.ReadOnly, cfg.Check.Caches = c.readOnly, c.caches
			out := filepath.Join(t.TempDir(), "run")
			_, _, err := Calibrate(context.Background(), CalibrateOptions{Prompt: "x", Sides: sides, Check: c.check, CheckOnHost: c.onHost,
				Runs: 1, Jobs: 1, Project: t.TempDir(), Out: out, Config: cfg})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "fix") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line with %q and a fix", err, c.want)
			}
			if fileExists(out) {
				t.Errorf("the refused run left %s behind", out)
			}
		})
	}
}

// TestCheckOnHostIsKeptByTheRun: --check-on-host is the run's choice, kept in recipe.json: a
// tail of a recording made with it, and a resume retrying a calibrate tail, score on the host
// again without being told, and the reports and each tail's detail say so. The check reads a
// host file outside the workspace, so it passes only where it really ran on the host.
func TestCheckOnHostIsKeptByTheRun(t *testing.T) {
	needRooms(t)
	canary := filepath.Join(t.TempDir(), "host-only.txt")
	if err := os.WriteFile(canary, []byte("on the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := "grep -q 'on the host' " + canary
	script := filepath.Join(t.TempDir(), "one-step.toml")
	if err := os.WriteFile(script, []byte("[[turn]]\ntext = \"Step.\"\nshell = \"echo one > one.txt\"\n\n[[turn]]\ntext = \"Done.\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	side := journal.Side{Key: "a", Agent: "codex"}
	cfg := testConfig(t, []string{"codex"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	newProject := func() string {
		p := t.TempDir()
		if err := os.WriteFile(filepath.Join(p, "README.md"), []byte("# one step\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	dir, _, err := Record(ctx, RecordOptions{Prompt: "Do the step.", Side: side, Project: newProject(), Check: check, CheckTimeout: time.Minute,
		CheckOnHost: true, Out: filepath.Join(t.TempDir(), "record"), Config: cfg, Script: script})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := run.ReadRecipe(dir); err != nil || !rec.CheckRoom.OnHost {
		t.Fatalf("recipe %+v (%v): the recording's --check-on-host is not kept", rec, err)
	}
	if report := readFile(t, filepath.Join(dir, "report.txt")); !strings.Contains(report, "ON THE HOST (--check-on-host)") {
		t.Errorf("the record report does not say where its check runs:\n%s", report)
	}
	res, err := Tail(ctx, TailOptions{Dir: dir, Step: 1, How: "native", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || res.Check != "check exit 0 (ON THE HOST)" {
		t.Errorf("tail of a recording made with --check-on-host: %+v, want passed on the host", res)
	}

	out := filepath.Join(t.TempDir(), "calibrate")
	_, report, err := Calibrate(ctx, CalibrateOptions{Prompt: "Do the step.", Sides: []journal.Side{side}, Check: check, CheckTimeout: time.Minute,
		CheckOnHost: true, Runs: 1, Jobs: 1, Project: newProject(), Out: out, Config: cfg, Script: script})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report, "ON THE HOST (--check-on-host)") || !strings.Contains(report, " 1/1 ") {
		t.Errorf("calibrate report:\n%s", report)
	}
	if _, err := Resume(ctx, ResumeOptions{Dir: out, Config: cfg, Retry: []string{"a-0"}}); err != nil {
		t.Fatal(err)
	}
	st := journal.Replay("run", mustJournal(t, out))
	if tl := st.Tails["a-0"]; tl == nil || tl.Attempt.N != 1 || tl.Status != "passed" || !strings.HasSuffix(tl.Detail, "check exit 0 (ON THE HOST)") {
		t.Errorf("retried tail %+v: the resume did not keep the run's --check-on-host", tl)
	}
}

// TestCheckThatCouldNotRunIsNoVerdict: a check whose room never started said nothing of the
// workspace, so the tail has no verdict (left out of the rate, its reason named), not a
// failure that would lower the agent's rate.
func TestCheckThatCouldNotRunIsNoVerdict(t *testing.T) {
	needRooms(t)
	c := runCheck(context.Background(), "true", t.TempDir(), time.Minute, run.CheckRoom{}, &config.Config{Bwrap: "/nonexistent/bwrap"})
	if !c.CouldNotRun || !strings.Contains(c.Detail, "could not run") {
		t.Fatalf("a check room that cannot start: %+v", c)
	}
	if status, reason := checkOutcome(c); status != journal.StatusNoVerdict || reason != journal.ReasonCheckError || reason.Label() != "check could not run" {
		t.Errorf("it gives the tail %s (%s), want no verdict: check could not run", status, reason)
	}
	if status, _ := checkOutcome(checkResult{Passed: false, Detail: "check exit 1"}); status != journal.StatusFailed {
		t.Errorf("a check that ran and failed gives %s", status)
	}
}
