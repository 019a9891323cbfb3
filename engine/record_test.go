package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/engine/journal"
	"tare/engine/run"
	"tare/modelserver"
)

// fiveSteps are the record test's tool calls: each changes the workspace differently.
var fiveSteps = []string{
	"echo one > one.txt",
	"mkdir -p src/deep && echo two > src/deep/two.txt",
	"printf '#!/bin/sh\\necho three\\n' > run.sh && chmod +x run.sh",
	"echo four >> one.txt && rm src/deep/two.txt",
	"ln -s one.txt link && echo five > five.txt",
}

func fiveStepScript() string {
	var b strings.Builder
	for i, cmd := range fiveSteps {
		fmt.Fprintf(&b, "[[turn]]\ntext = \"Step %d.\"\nshell = '''%s'''\n\n", i+1, cmd)
	}
	b.WriteString("[[turn]]\ntext = \"All five steps done.\"\n")
	return b.String()
}

// expectedRoots are the capsule roots of the project after each of fiveSteps, computed by
// running the same commands on a copy on the host.
func expectedRoots(t *testing.T, project string) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", project, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	store, err := capsule.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for i := 0; i <= len(fiveSteps); i++ {
		if i > 0 {
			cmd := exec.Command("/bin/sh", "-c", fiveSteps[i-1])
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
		}
		c, err := store.Snap(context.Background(), dir, fmt.Sprintf("expected-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, c.Root)
	}
	return roots
}

// TestRecordThenTailNativelyAndByHandoff: each real agent runs five tool calls in a room;
// the recording has one capsule per step, each exactly the workspace the agent had then
// (same tree hashes as the commands applied on the host, and the same again after a
// restore); a native tail and a handoff tail from step 2 run to the end and are scored.
func TestRecordThenTailNativelyAndByHandoff(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte(fiveStepScript()), "five-steps.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			project := t.TempDir()
			if err := os.WriteFile(filepath.Join(project, "README.md"), []byte("# five steps\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want := expectedRoots(t, project)

			srv := scriptServer(t, script)
			env, start := newTestRun(t, name, srv.Addr(), "test -f five.txt && test -L link && ./run.sh")
			side := journal.Side{Key: "a", Agent: name}
			rec, err := record(ctx, env, side, "Do the five steps.", start)
			if err != nil {
				t.Fatal(err)
			}
			// Every model call passed the relay's meter, and the agent's own count agrees with it.
			if m := rec.Metered; m == nil || m.Calls < 5 || m.Differs != "" {
				t.Errorf("the recording's relay count %+v: want every call metered, the agent's count within 5%%", m)
			}
			if len(rec.Steps) != 5 || len(rec.Capsules) != 6 {
				// What the agent said when it stopped early (seen once for gemini under load,
				// its third call's answer uncounted): its exit, a provider stop and its stderr.
				stderr, _ := os.ReadFile(filepath.Join(env.run.Dir(), "original", "stderr.log"))
				t.Fatalf("%d steps and %d capsules, want 5 and 6 (snapshots: %s); exit %s, stopped %+v; stderr's end: %s",
					len(rec.Steps), len(rec.Capsules), rec.Snapshots, rec.Exit, rec.Stopped, tailOf(string(stderr), 1500))
			}
			for k, c := range rec.Capsules {
				if k > 0 && c.Walk != "dirty" {
					t.Errorf("capsule of step %d was taken by a %s walk: the watcher in the room did not serve it", k, c.Walk)
				}
				if c.Root != want[k] {
					t.Errorf("capsule of step %d has root %.12s, want %.12s (the workspace after %d commands)", k, c.Root, want[k], k)
				}
				dest := filepath.Join(t.TempDir(), "restored")
				if err := env.store.Restore(ctx, c, dest); err != nil {
					t.Fatal(err)
				}
				again, err := env.store.Snap(ctx, dest, fmt.Sprintf("restored-%d", k))
				if err != nil || again.Root != c.Root {
					t.Errorf("step %d restored to root %.12s, want %.12s (%v)", k, again.Root, c.Root, err)
				}
			}
			for _, how := range []journal.How{journal.HowNative, journal.HowHandoff} {
				spec, err := tailFrom(rec, side, 2, how, string(how)+"-2", false)
				if err != nil {
					t.Fatal(err)
				}
				if err := runTail(ctx, env, spec); err != nil {
					t.Fatal(err)
				}
				tl := env.run.Snapshot().Tails[spec.ID]
				if tl == nil || tl.Status != "passed" {
					t.Errorf("%s tail from step 2: %+v, want passed", how, tl)
				}
				if m := tl.Metered; m == nil || m.Calls == 0 || m.Differs != "" || m.Input != tl.Usage.Input {
					t.Errorf("%s tail's relay count %+v beside the agent's %+v: want them equal", how, m, tl.Usage)
				}
				if how == "native" {
					checkOwnUsage(t, env, name, spec.ID)
				}
			}
		})
	}
}

// checkOwnUsage: a native tail's recorded usage is its own. Codex's stream reports the
// resumed thread's running total, so there the recorded figure must be below the stream's;
// the others report the run's own and the two agree.
func checkOwnUsage(t *testing.T, env *tailEnv, name, id string) {
	t.Helper()
	a, _ := agent.ByName(name)
	f, err := os.Open(filepath.Join(env.run.Dir(), "tails", id, "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := a.ParseStream(f)
	if err != nil {
		t.Fatal(err)
	}
	got := env.run.Snapshot().Tails[id].Usage
	if got.Input <= 0 || got.Model == "" || got.Cost <= 0 && len(got.Unpriced) == 0 {
		t.Errorf("native tail usage %+v: no tokens, model or price", got)
	}
	if r.Usage.Thread && got.Input >= r.Usage.Input {
		t.Errorf("native %s tail recorded %d input tokens, the thread's total is %d: the resumed session's tokens were counted again", name, got.Input, r.Usage.Input)
	}
	if !r.Usage.Thread && got.Input != r.Usage.Input {
		t.Errorf("native %s tail recorded %d input tokens, its stream said %d", name, got.Input, r.Usage.Input)
	}
	t.Logf("native tail: %d input tokens of its own (stream %d, thread total: %v), model %s", got.Input, r.Usage.Input, r.Usage.Thread, got.Model)
}

// newTestRun makes a run directory with a store, the start capsule of an empty project and
// the environment tails need, talking to the model server at upstream.
func newTestRun(t *testing.T, agentName, upstream, check string) (*tailEnv, capsule.Capsule) {
	t.Helper()
	a, inst, cfg := mustFind(t, agentName)
	r, err := run.Create(filepath.Join(t.TempDir(), "run"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	store, err := capsule.Open(filepath.Join(r.Dir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# five steps\n"), 0o644)
	start, err := store.Snap(context.Background(), project, "start")
	if err != nil {
		t.Fatal(err)
	}
	rec := &run.Recipe{Check: check, CheckTimeout: 60, AgentTimeout: 240}
	return &tailEnv{run: r, store: store, recipe: rec, cfg: cfg, upstream: upstream,
		installs: map[string]agent.Install{a.Name(): inst}}, start
}

// TestTailStopsAnAgentAtItsTimeout: an agent whose model never answers in time is stopped at
// the recipe's agent timeout, and the tail says so instead of hanging the run. It produced
// nothing, so the tail has no verdict and the check (which would pass) is not run.
func TestTailStopsAnAgentAtItsTimeout(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte("[[turn]]\ndelay = \"2m\"\ntext = \"Too late.\"\n"), "slow.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptServer(t, script)
	env, start := newTestRun(t, "codex", srv.Addr(), "true")
	env.recipe.AgentTimeout = 3
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	spec := tailSpec{ID: "slow", Side: journal.Side{Key: "a", Agent: "codex"}, How: "fresh", Prompt: "Say hi.", Start: start}
	if err := runTail(ctx, env, spec); err != nil {
		t.Fatal(err)
	}
	tl := env.run.Snapshot().Tails["slow"]
	if tl == nil || !strings.Contains(tl.Detail, "agent stopped after 3s") {
		t.Fatalf("tail %+v, want its detail to say the agent was stopped after 3s", tl)
	}
	if tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonTimeout || !strings.HasSuffix(tl.Detail, "; not checked") {
		t.Errorf("tail %+v, want no verdict (timeout) and no check", tl)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the tail took %s with a 3 s agent timeout", took)
	}
}

// TestTailsFromOneStepDrawIndependently: tails that continue one recording from the same step
// sample the script's branches like separate calls to a real model, not the recording's
// draw again. The recording's second turn is a coin; eight native tails from step 1 (which
// resume the recorded session and so send its session id) must not all land on one side,
// and each tail's draw must be its own stream's.
func TestTailsFromOneStepDrawIndependently(t *testing.T) {
	needRooms(t)
	const src = `
[[turn]]
text = "First."
shell = "echo one > one.txt"

[[turn]]
  [[turn.branch]]
  p = 0.5
  text = "Heads."
  shell = "echo heads > coin.txt"
  [[turn.branch]]
  p = 0.5
  text = "Tails."
  shell = "echo tails > coin.txt"

[[turn]]
text = "Done."
`
	script, err := modelserver.ParseScript([]byte(src), "coin.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv := scriptServer(t, script)
	env, start := newTestRun(t, "claude", srv.Addr(), "true")
	env.models = srv
	side := journal.Side{Key: "a", Agent: "claude"}
	rec, err := record(ctx, env, side, "Toss the coin.", start)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Steps) < 2 {
		t.Fatalf("the recording has %d steps, want 2", len(rec.Steps))
	}
	const tails = 8
	for i := range tails {
		spec, err := tailFrom(rec, side, 1, "native", fmt.Sprintf("native-1-%d", i), false)
		if err != nil {
			t.Fatal(err)
		}
		if err := runTail(ctx, env, spec); err != nil {
			t.Fatal(err)
		}
	}
	branch := map[string]int{} // stream -> branch drawn at turn 2
	for _, r := range srv.Requests() {
		if r.Turn == 2 && strings.HasPrefix(r.Stream, "native-1-") {
			if b, seen := branch[r.Stream]; seen && b != r.Branch {
				t.Errorf("stream %s drew branch %d and then %d", r.Stream, b, r.Branch)
			}
			branch[r.Stream] = r.Branch
		}
	}
	if len(branch) != tails {
		t.Fatalf("%d tails reached the coin turn in a stream of their own, want %d: %v", len(branch), tails, branch)
	}
	count := map[int]int{}
	for _, b := range branch {
		count[b]++
	}
	if len(count) < 2 {
		t.Errorf("all %d tails from step 1 drew branch %v: they replay one draw", tails, count)
	}
	t.Logf("branches drawn by %d tails from step 1: %v", tails, count)
}
