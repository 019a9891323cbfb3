package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/cliff"
	"tare/engine/journal"
	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
	"tare/sandbox"
)

// TestCostCapEndsTheTailOverBudget: a calibrate of the demo with a cost cap below one call's
// price. The relay lets the first call through (nothing was spent yet), refuses the next in
// Anthropic's error shape, and the tail ends as over budget: no check's verdict, but the
// agent spent its cap, so the rate counts it as failed and says why (before, it was left out
// and the report said 0/0), with the relay's count beside the agent's and the host log kept.
func TestCostCapEndsTheTailOverBudget(t *testing.T) {
	needRooms(t)
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	sides, _ := ParseSides([]string{"claude"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir, report, err := Calibrate(ctx, CalibrateOptions{Prompt: demo.Task, Sides: sides, Check: demo.Check, CheckTimeout: time.Minute,
		Runs: 1, Jobs: 1, Project: paths.Project, Out: filepath.Join(t.TempDir(), "run"), Config: testConfig(t, []string{"claude"}),
		Script: paths.Script, Seed: 7, Caps: run.Caps{TailCost: 1e-9}})
	if err != nil {
		t.Fatal(err)
	}
	tl := journal.Replay("run", mustJournal(t, dir)).Tails["a-0"]
	if tl == nil || tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonOverBudget {
		t.Fatalf("tail a-0: %+v; want no verdict, over budget\n%s", tl, report)
	}
	if m := tl.Metered; m == nil || m.Calls != 1 || m.Refused < 1 || m.Cost <= 0 || m.Input == 0 {
		t.Fatalf("metered %+v: want one priced call through and the next refused", m)
	}
	for _, want := range []string{" 0/1 ", "0/1 passed · 1 failed with no verdict (1 over budget)", "relay a", "over budget: the tail's cost cap", "caps      $1e-09 a tail", HostsFile} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	// usage.json carries the relay's count beside the agent's own.
	var u usageFile
	if data, err := os.ReadFile(filepath.Join(dir, "usage.json")); err != nil || json.Unmarshal(data, &u) != nil {
		t.Fatalf("usage.json: %v", err)
	}
	if got := u.MeteredTails["a-0"]; got.Input != tl.Metered.Input || got.Output != tl.Metered.Output || u.MeteredTotal == nil ||
		len(u.Attempts["a-0"]) != 1 || u.Attempts["a-0"][0].Metered == nil {
		t.Errorf("usage.json metered %+v, attempts %+v; want the relay's count of a-0 (%+v) beside the agent's", u.MeteredTails, u.Attempts["a-0"], tl.Metered.Usage)
	}
	reach := readHosts(t, filepath.Join(dir, "tails", "a-0", HostsFile))
	if len(reach) == 0 || !reach[0].Allowed || !strings.HasPrefix(reach[0].Host, "127.0.0.1:") {
		t.Errorf("host log %+v: want the relay's model address, allowed", reach)
	}
}

// TestHostLogNamesARefusedHost: a room on a real provider (Claude's proxy allow-list) whose
// tool tries a host off the list: the proxy refuses it and the room's host log names it,
// refused, beside the declared host it let through.
func TestHostLogNamesARefusedHost(t *testing.T) {
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
	box, _, err := room.Build(room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), Login: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	fetch := []string{"http://api.anthropic.com:443/ via 127.0.0.1:4001", "http://example.org:443/ via 127.0.0.1:4001"}
	box.Argv = append([]string{sandbox.TareBin}, sandbox.InspectOptions{Fetch: fetch, Timeout: 5 * time.Second}.Args()...)
	log := filepath.Join(t.TempDir(), HostsFile)
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, errb strings.Builder
	box.Stdin, box.Stdout, box.Stderr, box.HostLog = nil, &out, &errb, f
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if code, err := room.Run(ctx, box); code != 0 || err != nil {
		t.Fatalf("inspection exited %d, %v: %s", code, err, errb.String())
	}
	got := map[string]bool{}
	for _, r := range readHosts(t, log) {
		got[r.Host] = r.Allowed
	}
	if allowed, ok := got["example.org:443"]; !ok || allowed {
		t.Errorf("host log %v: want example.org:443 refused", got)
	}
	if allowed, ok := got["api.anthropic.com:443"]; !ok || !allowed {
		t.Errorf("host log %v: want api.anthropic.com:443 allowed", got)
	}
}

func readHosts(t *testing.T, path string) []sandbox.HostReach {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("host log: %v", err)
	}
	defer f.Close()
	var out []sandbox.HostReach
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r sandbox.HostReach
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("host log line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestMeterFlagsAnAgentCountingOff: the report's flag compares the agent's own count with the
// relay's: within 5% it stays quiet, beyond it says both figures.
func TestMeterFlagsAnAgentCountingOff(t *testing.T) {
	srv, err := modelserver.New(modelserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	m, err := modelserver.NewMeter(srv.Addr(), CostOf)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	body := `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 400) + `"}]}`
	resp, err := http.Post("http://"+m.Addr()+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rec := srv.Requests()[0]
	own := journal.Usage{Input: int64(rec.InputTokens), Output: int64(rec.OutputTokens)}
	if got := metered(m, own); got.Differs != "" || got.Calls != 1 || got.Cost <= 0 {
		t.Errorf("agent agreeing with the relay: %+v; want one priced call, no flag", got)
	}
	own.Input = own.Input * 110 / 100
	if got := metered(m, own); !strings.Contains(got.Differs, "the agent counted") {
		t.Errorf("agent 10%% off: %+v; want the difference flagged", got)
	}
}

// TestRunCapCountsWhatTheJournalSpent: a run's cap holds across processes (tare resume, one
// tare tail after another): the tokens the journal's finished tails were metered at count,
// so the first call of the next tail is already refused, in the caller's dialect.
func TestRunCapCountsWhatTheJournalSpent(t *testing.T) {
	r, err := run.Create(filepath.Join(t.TempDir(), "run"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spent := &journal.Metered{Usage: journal.Usage{Input: 40, Output: 20}, Calls: 1}
	for _, e := range []journal.Event{{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a"}},
		{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusFailed, Metered: spent}}} {
		if err := r.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := modelserver.New(modelserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	call := func(c run.Caps) (int, string) {
		m, err := modelserver.NewMeter(srv.Addr(), nil, newRunBudget(r, c))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		resp, err := http.Post("http://"+m.Addr()+"/v1/messages", "application/json",
			strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call(run.Caps{RunTokens: 50}); code != http.StatusBadRequest || !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, "run's token cap (50) is spent: 60 tokens") {
		t.Errorf("run cap 50 after 60 spent: %d %s; want an Anthropic error naming the run's cap", code, body)
	}
	if code, body := call(run.Caps{RunTokens: 100}); code != http.StatusOK {
		t.Errorf("run cap 100 after 60 spent: %d %s; want the call through", code, body)
	}
}

// scriptedProject makes a test's folder with a one-file project and a model script in it.
func scriptedProject(t *testing.T, script string) (dir, project, scriptPath string) {
	t.Helper()
	dir = t.TempDir()
	project, scriptPath = filepath.Join(dir, "project"), filepath.Join(dir, "script.toml")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "README.md"), []byte("# project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, project, scriptPath
}

// TestRecordIsCapped: tare record --max-tokens caps the recording itself, as every tail: under
// a cap the first call spends, the relay refuses the next, the agent stops, and the recording
// and its report say it was stopped over budget, never as an ordinary end.
func TestRecordIsCapped(t *testing.T) {
	needRooms(t)
	dir, project, script := scriptedProject(t, fiveStepScript())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	recDir, recording, err := Record(ctx, RecordOptions{Prompt: "Do the five steps.", Project: project, Check: "test -f five.txt", CheckTimeout: time.Minute,
		AgentTimeout: 2 * time.Minute, Config: testConfig(t, []string{"claude"}), Script: script, Side: journal.Side{Key: "a", Agent: "claude"},
		Out: filepath.Join(dir, "record"), Caps: run.Caps{TailTokens: 1}})
	if err != nil {
		t.Fatal(err)
	}
	report := readFile(t, filepath.Join(recDir, "report.txt"))
	m := recording.Metered
	if m == nil || m.Calls != 1 || m.Refused < 1 || !strings.Contains(m.OverBudget, "token cap (1) is spent") {
		t.Fatalf("the recording's relay count %+v: want one call through, the next refused over budget\n%s", m, report)
	}
	if len(recording.Steps) > 1 || !strings.Contains(report, "stopped   over budget: the tail's token cap (1) is spent") {
		t.Errorf("%d steps recorded under a 1-token cap; the report:\n%s\nwant at most the first call's step and the stop said", len(recording.Steps), report)
	}
	if !m.Simulated || !strings.Contains(report, "(tare's prices) · "+journal.SimulatedNote) {
		t.Errorf("the recording's relay figures on tare's model server are not labelled simulated (%+v):\n%s", m, report)
	}
}

// TestRelayPricesTheLongContextTier: the relay prices each call in the tier its own prompt
// falls in: one call of 300k tokens in and 4k out on Sonnet 4.5 is $1.89 (the price above
// 200k for all its tokens), not the base price's $0.96, through the real meter and the
// bundled table; a call below the tier pays the base price.
func TestRelayPricesTheLongContextTier(t *testing.T) {
	var in atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"m","type":"message","model":"claude-sonnet-4-5-20250929","content":[],"usage":{"input_tokens":%d,"output_tokens":4000}}`, in.Load())
	}))
	defer up.Close()
	m, err := modelserver.NewMeter(strings.TrimPrefix(up.URL, "http://"), CostOf)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tt := range []struct {
		in   int64
		want float64
	}{{300_000, 1.89}, {100_000, 0.36}} {
		in.Store(tt.in)
		resp, err := http.Post("http://"+m.Addr()+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":4000,"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		calls := m.Calls()
		if c := calls[len(calls)-1]; !c.Priced || math.Abs(c.Cost-tt.want) > 1e-9 {
			t.Errorf("a call of %d in, 4k out on Sonnet 4.5 metered at $%.4f (priced %v); want $%.2f", tt.in, c.Cost, c.Priced, tt.want)
		}
	}
}

// killAfterFirstCall kills tail id of the run in dir once its agent has made a tool call (its
// first model call answered and metered), while its next call waits on the model server.
func killAfterFirstCall(t *testing.T, ctx context.Context, dir, id string, attempt int, done <-chan error) {
	t.Helper()
	for {
		if ev, err := journal.ReadJournal(dir); err == nil {
			if tl := journal.Replay("run", ev).Tails[id]; tl != nil && tl.Attempt.N == attempt && tl.Calls > 0 && tl.Ended.IsZero() {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before the kill: %v", err)
		case <-ctx.Done():
			t.Fatal("the agent never made its tool call")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := run.RequestKill(dir, id, journal.KillLeftOut); err != nil {
		t.Fatal(err)
	}
}

// TestRetryKeepsAKilledAttemptsSpend: a tail killed after its first model call (the agent had
// counted nothing of its own), then run again with tare resume --retry and killed the same
// way: report.txt's relay line counts both attempts, as usage.json does, says its dollars are
// simulated, and report.json says the run was.
func TestRetryKeepsAKilledAttemptsSpend(t *testing.T) {
	needRooms(t)
	dir, project, script := scriptedProject(t, "[[turn]]\ntext = \"Writing.\"\nshell = \"echo hi > hi.txt\"\n[[turn]]\ndelay = \"10m\"\ntext = \"Too late.\"\n")
	sides, _ := ParseSides([]string{"codex"}, nil)
	cfg := testConfig(t, []string{"codex"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out := filepath.Join(dir, "run")
	done := make(chan error, 1)
	go func() {
		_, _, err := Calibrate(ctx, CalibrateOptions{Prompt: "Write hi.txt.", Sides: sides, Check: "test -f hi.txt", CheckTimeout: time.Minute,
			Runs: 1, Jobs: 1, Project: project, Out: out, Config: cfg, Script: script})
		done <- err
	}()
	killAfterFirstCall(t, ctx, out, "a-0", 0, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := Resume(ctx, ResumeOptions{Dir: out, Config: cfg, Retry: []string{"a-0"}})
		done <- err
	}()
	killAfterFirstCall(t, ctx, out, "a-0", 1, done)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tl := journal.Replay("run", mustJournal(t, out)).Tails["a-0"]
	if tl == nil || len(tl.Earlier) != 1 || tl.Earlier[0].Reason != journal.ReasonKilled || tl.Earlier[0].Metered == nil || tl.Metered == nil {
		t.Fatalf("tail a-0 %+v: want two killed attempts, each metered", tl)
	}
	first, latest := tl.Earlier[0].Metered, tl.Metered
	if first.Input == 0 || first.Calls == 0 {
		t.Fatalf("the killed attempt's relay count %+v: want its first call", first)
	}
	sum := first.Usage.Add(latest.Usage)
	report := readFile(t, filepath.Join(out, "report.txt"))
	want := fmt.Sprintf("  relay a    %s in, %s out, %s cache read, %s cache write in %d calls · $%.4f (tare's prices) · %s",
		journal.Tokens(sum.Input), journal.Tokens(sum.Output), journal.Tokens(sum.CacheRead), journal.Tokens(sum.CacheWrite), first.Calls+latest.Calls, sum.Cost, journal.SimulatedNote)
	if !strings.Contains(report, want) {
		t.Errorf("report.txt lacks both attempts' relay count\n%s\nin:\n%s", want, report)
	}
	var u usageFile
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "usage.json"))), &u); err != nil || u.MeteredTotal == nil || u.MeteredTotal.Input != sum.Input {
		t.Errorf("usage.json metered total %+v (%v); want %d tokens in, as the report", u.MeteredTotal, err, sum.Input)
	}
	var rj RunReport
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, ReportFile))), &rj); err != nil || !rj.Simulated || len(rj.Sides) != 1 || rj.Sides[0].Metered == nil || rj.Sides[0].Metered.Input != sum.Input {
		t.Errorf("report.json %+v (%v): want simulated, and side a's metered count over both attempts", rj, err)
	}
}

// TestCliffAndSwapCostIsTheRelays: cliff's and swap's costs are every attempt's on the
// relay's count: a tail attempt killed before its agent counted anything still spent what the
// relay metered, and the recordings' costs are the relay's too; an attempt the relay did not
// meter is priced on the agent's own count, and the report says how many were.
func TestCliffAndSwapCostIsTheRelays(t *testing.T) {
	metered := func(cost float64) *journal.Metered {
		return &journal.Metered{Usage: journal.Usage{Input: 1000, Cost: cost}, Calls: 1, Simulated: true}
	}
	state := func(ids ...string) *journal.RunState {
		st := journal.NewRunState("r")
		n := int64(0)
		apply := func(e journal.Event) {
			n++
			e.Seq, e.Time = n, time.Unix(1000+n, 0)
			st.Apply(e)
		}
		apply(journal.Event{RunStarted: &journal.RunStarted{Kind: "cliff", Sides: []journal.Side{{Key: "a", Agent: "codex"}}, Budget: 2}})
		for _, id := range ids {
			// Killed after one call: the agent counted nothing, the relay $0.25.
			apply(journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: "a", How: "native"}})
			apply(journal.Event{TailFinished: &journal.TailFinished{ID: id, Status: journal.StatusNoVerdict, Reason: journal.ReasonKilled, Metered: metered(0.25)}})
			// Retried to a verdict: the agent counted $0.50, the relay $0.75 (it counts the
			// calls the agent left out of its own count).
			apply(journal.Event{TailStarted: &journal.TailStarted{ID: id, Side: "a", How: "native", Attempt: 1}})
			apply(journal.Event{TailFinished: &journal.TailFinished{ID: id, Status: journal.StatusFailed, Attempt: 1,
				Usage: journal.Usage{Input: 900, Cost: 0.5}, Metered: metered(0.75)}})
		}
		// One attempt the relay did not meter (a real provider it does not read): the agent's.
		apply(journal.Event{TailStarted: &journal.TailStarted{ID: ids[0], Side: "a", How: "native", Attempt: 2}})
		apply(journal.Event{TailFinished: &journal.TailFinished{ID: ids[0], Status: journal.StatusFailed, Attempt: 2, Usage: journal.Usage{Input: 10, Cost: 0.125}}})
		return st
	}
	recording := &journal.Recording{Agent: "codex", Metered: metered(2)}

	res := &CliffResult{}
	res.RecordingCost, res.CostKnown, res.CostUnmetered = recordingSpend(t.TempDir(), recording)
	fillCliffResult(res, cliff.Decision{}, nil, recording, state(cliffPrefix+"1-0", cliffPrefix+"2-0"))
	if res.TailsCost != 2.125 || res.RecordingCost != 2 || res.Cost != 4.125 || !res.CostKnown || res.CostUnmetered != 1 {
		t.Errorf("cliff cost: recording $%v + tails $%v = $%v (known %v, %d unmetered); want $2 + $2.125 = $4.125, 1 unmetered", res.RecordingCost, res.TailsCost, res.Cost, res.CostKnown, res.CostUnmetered)
	}
	if report := CliffReport(&run.Recipe{Sides: []journal.Side{{Key: "a", Agent: "codex"}}}, recording, res); !strings.Contains(report, "tails $2.1250 = $4.1250 (tare's prices on the relay's count; 1 attempts or recordings on the agent's own count, unmetered)") {
		t.Errorf("the cliff report does not give the relay's cost and whose count it is:\n%s", report)
	}

	recs := map[string]*journal.Recording{"a": recording, "b": {Agent: "codex", Metered: metered(1)}}
	sw := swapResult(t.TempDir(), &run.Recipe{Sides: []journal.Side{{Key: "a", Agent: "codex"}, {Key: "b", Agent: "codex"}}},
		swapSettings{Cuts: []float64{1}, Tails: 1}, recs, state("c1-ab-n-0", "c1-ba-h-0"))
	if sw.TailsCost != 2.125 || sw.RecordingCost != 3 || sw.Cost != 5.125 || !sw.CostKnown || sw.CostUnmetered != 1 {
		t.Errorf("swap cost: recordings $%v + tails $%v = $%v (known %v, %d unmetered); want $3 + $2.125 = $5.125, 1 unmetered", sw.RecordingCost, sw.TailsCost, sw.Cost, sw.CostKnown, sw.CostUnmetered)
	}
}
