package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/capsule"
	"tare/engine/journal"
	"tare/engine/run"
	"tare/engine/stats"
	"tare/modelserver"
)

// TestProviderStopsAreNoVerdict runs each real CLI in a room against tare's model server
// whose every answer is a quota wall, an overload, a dropped stream or a refused login, scored by a check that
// passes on the untouched project (`true`): the tail has no verdict, with the provider's
// reason, and the check is not run. Before, each of these was reported as passed.
func TestProviderStopsAreNoVerdict(t *testing.T) {
	needRooms(t)
	for _, name := range realAgents {
		kinds := []string{"quota", "overloaded", "drop", "login"}
		if name == "claude" {
			// Claude Code retries a 401 as it does a 429, about three minutes: its login stop is
			// read from the stream it wrote then (agent's TestProviderStopped), not run again here.
			kinds = kinds[:3]
		}
		for _, kind := range kinds {
			t.Run(name+"-"+kind, func(t *testing.T) {
				t.Parallel()
				script, err := modelserver.ParseScript([]byte(fmt.Sprintf(
					"[[turn]]\ntext = \"Never answered.\"\nshell = \"echo hi > hi.txt\"\nerror = %q\n", kind)), kind+".toml")
				if err != nil {
					t.Fatal(err)
				}
				srv := scriptServer(t, script)
				env, start := newTestRun(t, name, srv.Addr(), "true")
				// Claude Code retries a 429 ten times with backoff (about three minutes).
				ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
				defer cancel()
				spec := tailSpec{ID: "walled", Side: journal.Side{Key: "a", Agent: name}, How: "fresh", Prompt: "Write hi.txt.", Start: start}
				if err := runTail(ctx, env, spec); err != nil {
					t.Fatal(err)
				}
				want := journal.Reason(map[string]string{"quota": agent.StopQuota, "overloaded": agent.StopOverloaded, "drop": agent.StopDropped, "login": agent.StopLogin}[kind])
				tl := env.run.Snapshot().Tails["walled"]
				if tl == nil || tl.Status != journal.StatusNoVerdict || tl.Reason != want {
					t.Fatalf("tail %+v, want no verdict for %q", tl, want)
				}
				if !strings.Contains(tl.Detail, "ended by the provider ("+string(want)+")") || !strings.HasSuffix(tl.Detail, "; not checked") {
					t.Errorf("detail %q: want the provider's end and no check", tl.Detail)
				}
				res, ok := readResult(filepath.Join(env.run.Dir(), "tails", "walled"))
				if !ok || res.Status != journal.StatusNoVerdict || res.Reason != want || res.Passed {
					t.Errorf("result.json %+v, want no verdict for %q", res, want)
				}
				tally := env.run.Snapshot()
				tally.Sides = []journal.Side{{Key: "a", Agent: name}}
				if s := tally.Tally()[0]; s.Verdicts != 0 || s.NoVerdict != 1 {
					t.Errorf("tally %+v: the tail must be left out of the rate", s)
				}
			})
		}
	}
}

// TestKilledTailIsNoVerdict: a tail the operator kills while its agent waits for the model
// has no verdict, reason killed; its detail says it was killed (not that the agent did not
// start), and the check, which would pass, is not run.
func TestKilledTailIsNoVerdict(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte("[[turn]]\ndelay = \"2m\"\ntext = \"Too late.\"\n"), "slow.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptServer(t, script)
	env, start := newTestRun(t, "codex", srv.Addr(), "true")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	spec := tailSpec{ID: "k-0", Side: journal.Side{Key: "a", Agent: "codex"}, How: "fresh", Prompt: "Say hi.", Start: start}
	go func() { done <- runTail(ctx, env, spec) }()
	// Kill once the agent has written its first line: it is running, not starting. (The
	// model server logs a request when it answers, two minutes later.)
	stream := filepath.Join(env.run.Dir(), "tails", "k-0", "stdout.jsonl")
	for fi, err := os.Stat(stream); err != nil || fi.Size() == 0; fi, err = os.Stat(stream) {
		select {
		case err := <-done:
			t.Fatalf("the tail ended before the kill: %v", err)
		case <-ctx.Done():
			t.Fatal("the agent never wrote its stream")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := run.RequestKill(env.run.Dir(), "k-0", journal.KillFailed); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tl := env.run.Snapshot().Tails["k-0"]
	if tl == nil || tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonKilled {
		t.Fatalf("tail %+v, want no verdict, killed", tl)
	}
	if tl.Kill != journal.KillFailed {
		t.Errorf("the journal kept the kill as %q, want the operator's answer %q", tl.Kill, journal.KillFailed)
	}
	if !strings.HasPrefix(tl.Detail, "killed by the operator after 0 calls; not checked") {
		t.Errorf("detail %q", tl.Detail)
	}
}

// TestAgentThatDoesNotStartIsNotChecked: a room whose agent cannot be run has no verdict,
// reason not started, and the check, which passes on the untouched project, is not run.
func TestAgentThatDoesNotStartIsNotChecked(t *testing.T) {
	needRooms(t)
	env, start := newTestRun(t, "pi", "127.0.0.1:9", "true")
	inst := env.installs["pi"]
	inst.Command = "/opt/agent/no-such-cli"
	env.installs["pi"] = inst
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := tailSpec{ID: "ns-0", Side: journal.Side{Key: "a", Agent: "pi"}, How: "fresh", Prompt: "Say hi.", Start: start}
	if err := runTail(ctx, env, spec); err != nil {
		t.Fatal(err)
	}
	tl := env.run.Snapshot().Tails["ns-0"]
	if tl == nil || tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonNotStarted {
		t.Fatalf("tail %+v, want no verdict, not started", tl)
	}
	if !strings.Contains(tl.Detail, "agent did not start") || !strings.HasSuffix(tl.Detail, "; not checked") {
		t.Errorf("detail %q", tl.Detail)
	}
}

// TestCalibrateQuotaWallReportsNoVerdict: tare calibrate with a side whose every model call
// hits a quota wall and a check that passes on the untouched project reports no verdict for
// the side, with the reason, in report.txt and report.json; before, it reported 1/1. Side a
// is Codex, side b Gemini CLI (its quota wall is Gemini's RESOURCE_EXHAUSTED 429).
func TestCalibrateQuotaWallReportsNoVerdict(t *testing.T) {
	needRooms(t)
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# walled\n"), 0o644)
	scriptPath := filepath.Join(dir, "wall.toml")
	os.WriteFile(scriptPath, []byte("[[turn]]\ntext = \"Never answered.\"\nshell = \"echo hi > hi.txt\"\nerror = \"quota\"\n"), 0o644)
	sides, err := ParseSides([]string{"codex", "gemini"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, report, err := Calibrate(ctx, CalibrateOptions{Prompt: "Write hi.txt.", Sides: sides, Check: "true", CheckTimeout: time.Minute,
		Runs: 2, Jobs: 2, Project: project, Out: filepath.Join(dir, "run"), Config: testConfig(t, []string{"codex", "gemini"}), Script: scriptPath})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b"} {
		if !strings.Contains(report, "  "+key+"     0/0 passed · 2 no verdict, left out (2 quota) · 0/2-2/2 if the 2 left out had failed/passed") {
			t.Errorf("report does not say side %s has no verdict:\n%s", key, report)
		}
	}
	if strings.Contains(report, " 2/2 ") || strings.Contains(report, " 1.00 ") {
		t.Errorf("report counts the walled tails as passed:\n%s", report)
	}
	var rj RunReport
	data, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil || json.Unmarshal(data, &rj) != nil || len(rj.Sides) != 2 {
		t.Fatalf("report.json: %v\n%s", err, data)
	}
	for _, s := range rj.Sides {
		if s.Verdicts != 0 || s.Rate != nil || s.NoVerdict != 2 || s.NoVerdictReasons["quota"] != 2 {
			t.Errorf("report.json side %+v, want no verdicts, no rate, 2 no verdict for quota", s)
		}
	}
}

// TestRetryKeepsEveryAttempt: tare resume --retry runs a failed tail again as a new attempt.
// The journal, usage.json and the report keep both attempts with their cost, the first
// attempt's folder stays, and the side's rate still counts the first verdict.
func TestRetryKeepsEveryAttempt(t *testing.T) {
	needRooms(t)
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# retry\n"), 0o644)
	scriptPath := filepath.Join(dir, "s.toml")
	os.WriteFile(scriptPath, []byte("[[turn]]\ntext = \"Writing.\"\nshell = \"echo hi > hi.txt\"\n[[turn]]\ntext = \"Done.\"\n"), 0o644)
	sides, _ := ParseSides([]string{"codex"}, nil)
	cfg := testConfig(t, []string{"codex"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, _, err := Calibrate(ctx, CalibrateOptions{Prompt: "Write hi.txt.", Sides: sides, Check: "test -f nothing-makes-this",
		CheckTimeout: time.Minute, Runs: 1, Jobs: 1, Project: project, Out: filepath.Join(dir, "run"), Config: cfg, Script: scriptPath})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Resume(ctx, ResumeOptions{Dir: out, Config: cfg, Retry: []string{"a-0"}})
	if err != nil {
		t.Fatal(err)
	}
	st := journal.Replay("run", mustJournal(t, out))
	tl := st.Tails["a-0"]
	if tl == nil || len(tl.Earlier) != 1 || tl.Attempt.N != 1 || tl.Earlier[0].Status != journal.StatusFailed {
		t.Fatalf("tail a-0 %+v, want two attempts, the first failed", tl)
	}
	started := 0
	for _, e := range mustJournal(t, out) {
		if e.TailFinished != nil && e.TailFinished.ID == "a-0" {
			started++
		}
	}
	if started != 2 {
		t.Errorf("the journal holds %d ends of a-0, want 2", started)
	}
	if _, ok := readResult(filepath.Join(out, "tails", "a-0.attempt-1")); !ok {
		t.Error("the first attempt's result.json is gone")
	}
	var u usageFile
	data, _ := os.ReadFile(filepath.Join(out, "usage.json"))
	if err := json.Unmarshal(data, &u); err != nil {
		t.Fatal(err)
	}
	at := u.Attempts["a-0"]
	if len(at) != 2 || at[0].Usage.Input <= 0 || at[1].Usage.Input <= 0 {
		t.Fatalf("usage.json attempts %+v, want both attempts with their tokens", at)
	}
	if u.Tails["a-0"].Input != at[0].Usage.Input+at[1].Usage.Input || u.Total.Cost != at[0].Usage.Cost+at[1].Usage.Cost {
		t.Errorf("usage.json tail %+v, total %+v: want the sum of both attempts %+v", u.Tails["a-0"], u.Total, at)
	}
	if s := st.Tally()[0]; s.Verdicts != 1 || s.Passed != 0 || s.Retried != 1 {
		t.Errorf("tally %+v, want one verdict (failed), one tail retried", s)
	}
	if !strings.Contains(report, "0/1 passed · 1 retried (1 failed)") {
		t.Errorf("report does not say the tail was retried:\n%s", report)
	}
}

// TestRetriedFailureDoesNotRaiseTheRate: a failed tail retried until it passes still counts
// as failed; a tail with no verdict retried to a verdict counts that verdict; both retries
// and their reasons are counted, and the usage of every attempt is summed.
func TestRetriedFailureDoesNotRaiseTheRate(t *testing.T) {
	st := journal.NewRunState("r")
	at := time.Unix(1000, 0)
	n := int64(0)
	apply := func(e journal.Event) {
		n++
		at = at.Add(time.Second)
		e.Seq, e.Time = n, at
		st.Apply(e)
	}
	apply(journal.Event{RunStarted: &journal.RunStarted{Kind: "calibrate", Sides: []journal.Side{{Key: "a", Agent: "claude"}}, Budget: 3}})
	finish := func(id string, status journal.Status, reason journal.Reason, attempt int, cost float64) {
		apply(journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: "a", How: "fresh", Attempt: attempt}})
		apply(journal.Event{TailFinished: &journal.TailFinished{ID: id, Status: status, Reason: reason, Attempt: attempt, Passed: status == journal.StatusPassed,
			Usage: journal.Usage{Input: 100, Cost: cost}}})
	}
	finish("a-0", journal.StatusPassed, "", 0, 1)
	finish("a-1", journal.StatusFailed, "", 0, 1)
	finish("a-1", journal.StatusFailed, "", 1, 1)
	finish("a-1", journal.StatusPassed, "", 2, 1)
	finish("a-2", journal.StatusNoVerdict, journal.ReasonQuota, 0, 0.5)
	finish("a-2", journal.StatusPassed, "", 1, 1)
	s := st.Tally()[0]
	if s.Passed != 2 || s.Failed != 1 || s.Verdicts != 3 || s.NoVerdict != 0 || s.Retried != 2 {
		t.Fatalf("tally %+v, want 2 passed of 3 verdicts, 2 tails retried", s)
	}
	if s.RetriedFrom["failed"] != 2 || s.RetriedFrom["quota"] != 1 {
		t.Errorf("retried from %v, want 2 failed and 1 quota", s.RetriedFrom)
	}
	if s.Usage.Cost != 5.5 || s.Usage.Input != 600 {
		t.Errorf("usage %+v, want every attempt's: $5.50, 600 tokens", s.Usage)
	}
	if got := s.Summary("passed"); got != "2/3 passed · 2 retried (2 failed, 1 quota)" {
		t.Errorf("summary %q", got)
	}
	lo, hi := stats.Wilson(2, 3)
	if s.Lo != lo || s.Hi != hi {
		t.Errorf("interval %.2f-%.2f, want Wilson(2, 3) %.2f-%.2f", s.Lo, s.Hi, lo, hi)
	}
}

// TestNoVerdictIsLeftOutOfTheRate: tails with no verdict are out of the rate and its
// interval and counted with their reasons; a journal from an older tare, whose tails say
// "error", is read the same way, its reason taken from the detail.
func TestNoVerdictIsLeftOutOfTheRate(t *testing.T) {
	st := journal.NewRunState("r")
	events := []journal.Event{
		{RunStarted: &journal.RunStarted{Kind: "calibrate", Sides: []journal.Side{{Key: "a", Agent: "pi"}}, Budget: 6}},
	}
	add := func(id string, f journal.TailFinished) {
		f.ID = id
		events = append(events, journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: "a", How: "fresh"}}, journal.Event{TailFinished: &f})
	}
	add("a-0", journal.TailFinished{Status: journal.StatusPassed, Passed: true})
	add("a-1", journal.TailFinished{Status: journal.StatusPassed, Passed: true})
	add("a-2", journal.TailFinished{Status: journal.StatusFailed})
	add("a-3", journal.TailFinished{Status: journal.StatusNoVerdict, Reason: journal.ReasonQuota})
	add("a-4", journal.TailFinished{Status: "error", Detail: "agent exit 0; killed by the operator"})                              // an older tare
	add("a-5", journal.TailFinished{Status: "error", Detail: "agent did not start: room stopped: context canceled; check exit 0"}) // an older tare
	for i := range events {
		events[i].Seq = int64(i + 1)
		st.Apply(events[i])
	}
	s := st.Tally()[0]
	if s.Passed != 2 || s.Verdicts != 3 || s.NoVerdict != 3 {
		t.Fatalf("tally %+v, want 2/3 and 3 no verdict", s)
	}
	if got := s.Summary("passed"); got != "2/3 passed · 3 no verdict, left out (1 killed, not asked, 1 not started, 1 quota) · 2/6-5/6 if the 3 left out had failed/passed (95% 0.10-0.97)" {
		t.Errorf("summary %q", got)
	}
	if lo, hi := stats.Wilson(2, 3); s.Lo != lo || s.Hi != hi {
		t.Errorf("interval %.2f-%.2f, want Wilson(2, 3)", s.Lo, s.Hi)
	}
	if done, _, _ := st.Counts(); done != 6 {
		t.Errorf("%d tails done, want 6", done)
	}
}

// TestFailedToolCallsGetTheirCapsule records each real agent through a tool call that
// changes the workspace and fails (exit 3): the step gets a capsule of its own, holding the
// change, and record.json marks no step as inherited. Claude Code runs PostToolUse only for
// calls that succeed; without PostToolUseFailure the step silently took the capsule before.
func TestFailedToolCallsGetTheirCapsule(t *testing.T) {
	needRooms(t)
	script, err := modelserver.ParseScript([]byte(`
[[turn]]
text = "Step one."
shell = "echo one > one.txt"

[[turn]]
text = "Step two fails after writing."
shell = "echo two > two.txt; exit 3"

[[turn]]
text = "Step three."
shell = "echo three > three.txt"

[[turn]]
text = "Done."
`), "fails.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range realAgents {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			srv := scriptServer(t, script)
			env, start := newTestRun(t, name, srv.Addr(), "")
			rec, err := record(ctx, env, journal.Side{Key: "a", Agent: name}, "Do the three steps.", start)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Steps) != 3 || len(rec.Inherited) != 0 {
				errLog, _ := os.ReadFile(filepath.Join(env.run.Dir(), "original", "stderr.log"))
				t.Fatalf("%d steps, inherited %+v; want 3 steps, each with its own capsule\nstderr: %s", len(rec.Steps), rec.Inherited, errLog)
			}
			dest := filepath.Join(t.TempDir(), "step2")
			if err := env.store.Restore(ctx, rec.Capsules[2], dest); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(dest, "two.txt")); err != nil || string(got) != "two\n" {
				t.Errorf("step 2's capsule lacks what the failed call wrote: %q, %v", got, err)
			}
			if _, err := os.Stat(filepath.Join(dest, "three.txt")); err == nil {
				t.Error("step 2's capsule holds step 3's file")
			}
		})
	}
}

// TestStepWithoutCapsuleIsMarkedAndRefused: a step none of whose tool calls left a capsule
// is listed in record.json as inheriting the nearest earlier capsule, named in the record's
// report, and a tail from it is refused unless asked for with --from-nearest; the tail then
// says which capsule it starts from.
func TestStepWithoutCapsuleIsMarkedAndRefused(t *testing.T) {
	ctx := context.Background()
	store, err := capsule.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	start, err := store.Snap(ctx, work, "start")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "one.txt"), []byte("one\n"), 0o644)
	if _, err := store.Snap(ctx, work, "call-1"); err != nil {
		t.Fatal(err)
	}
	steps := []agent.Step{{N: 1, Tool: "Bash echo one", IDs: []string{"call-1"}}, {N: 2, Tool: "Bash sed -i", IDs: []string{"call-2"}}}
	caps, inherited, err := stepCapsules(store, start, steps)
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) != 3 || len(inherited) != 1 || inherited[0] != (journal.Inherited{Step: 2, From: 1}) {
		t.Fatalf("capsules %d, inherited %+v; want step 2 marked as starting from step 1's capsule", len(caps), inherited)
	}
	rec := &journal.Recording{Agent: "claude", Task: "t", Steps: steps, Capsules: caps, Inherited: inherited,
		Events: []agent.Event{{}, {}}}
	rec.Steps[0].Events, rec.Steps[1].Events = 1, 2
	if !strings.Contains(stepSummary(rec), "step 2   Bash sed -i  (no capsule of its own: starts from step 1's)") {
		t.Errorf("step summary does not mark step 2:\n%s", stepSummary(rec))
	}
	side := journal.Side{Key: "b", Agent: "codex"}
	if _, err := tailFrom(rec, side, 2, "handoff", "h-2", false); err == nil || !strings.Contains(err.Error(), "--from-nearest") {
		t.Fatalf("a tail from step 2 was not refused: %v", err)
	}
	spec, err := tailFrom(rec, side, 2, "handoff", "h-2", true)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Nearest == nil || *spec.Nearest != 1 || spec.Start.Root != caps[1].Root {
		t.Errorf("spec starts from %+v (nearest %v), want step 1's capsule, named", spec.Start, spec.Nearest)
	}
	if spec, err := tailFrom(rec, side, 1, "handoff", "h-1", false); err != nil || spec.Nearest != nil {
		t.Errorf("a step with its own capsule: %v, nearest %v", err, spec.Nearest)
	}
}
