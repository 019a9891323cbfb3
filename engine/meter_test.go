package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/demo"
	"tare/engine/journal"
	"tare/engine/probe"
	"tare/modelserver"
	"tare/sandbox"
)

// TestCostCapEndsTheTailOverBudget: a calibrate of the demo with a cost cap below one call's
// price. The relay lets the first call through (nothing was spent yet), refuses the next in
// Anthropic's error shape, and the tail ends as over budget: no verdict, left out of the
// rate, said in the report, with the relay's count beside the agent's and the host log kept.
func TestCostCapEndsTheTailOverBudget(t *testing.T) {
	paths, err := demo.Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	sides, _ := ParseSides([]string{"claude"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir, report, err := Calibrate(ctx, CalibrateOptions{Prompt: demo.Task, Sides: sides, Check: demo.Check, CheckTimeout: time.Minute,
		Runs: 1, Jobs: 1, Project: paths.Project, Out: filepath.Join(t.TempDir(), "run"), Config: testConfig(t, []string{"claude"}),
		Script: paths.Script, Seed: 7, Caps: Caps{TailCost: 1e-9}})
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
	for _, want := range []string{" 0/0 ", "1 over budget", "relay a", "over budget: the tail's cost cap", "caps      $1e-09 a tail", HostsFile} {
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
	room, _, err := probe.BuildRoom(probe.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), Login: true}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	fetch := []string{"http://api.anthropic.com:443/ via 127.0.0.1:4001", "http://example.org:443/ via 127.0.0.1:4001"}
	room.Argv = append([]string{sandbox.TareBin}, sandbox.InspectOptions{Fetch: fetch, Timeout: 5 * time.Second}.Args()...)
	log := filepath.Join(t.TempDir(), HostsFile)
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, errb strings.Builder
	room.Stdin, room.Stdout, room.Stderr, room.HostLog = nil, &out, &errb, f
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if code, err := probe.RunRoom(ctx, room); code != 0 || err != nil {
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
	r, err := createRun(filepath.Join(t.TempDir(), "run"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	spent := &journal.Metered{Usage: journal.Usage{Input: 40, Output: 20}, Calls: 1}
	for _, e := range []journal.Event{{TailStarted: &journal.TailStarted{ID: "a-0", Side: "a"}},
		{TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusFailed, Metered: spent}}} {
		if err := r.emit(e); err != nil {
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
	call := func(c Caps) (int, string) {
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
	if code, body := call(Caps{RunTokens: 50}); code != http.StatusBadRequest || !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, "run's token cap (50) is spent: 60 tokens") {
		t.Errorf("run cap 50 after 60 spent: %d %s; want an Anthropic error naming the run's cap", code, body)
	}
	if code, body := call(Caps{RunTokens: 100}); code != http.StatusOK {
		t.Errorf("run cap 100 after 60 spent: %d %s; want the call through", code, body)
	}
}

// TestRecordIsCapped: tare record --max-tokens caps the recording itself, as every tail: under
// a cap the first call spends, the relay refuses the next, the agent stops, and the recording
// and its report say it was stopped over budget, never as an ordinary end.
func TestRecordIsCapped(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("# capped\n"), 0o644)
	script := filepath.Join(dir, "three.toml")
	os.WriteFile(script, []byte(fiveStepScript()), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	recDir, recording, err := Record(ctx, RecordOptions{Prompt: "Do the five steps.", Project: project, Check: "test -f five.txt", CheckTimeout: time.Minute,
		AgentTimeout: 2 * time.Minute, Config: testConfig(t, []string{"claude"}), Script: script, Side: journal.Side{Key: "a", Agent: "claude"},
		Out: filepath.Join(dir, "record"), Caps: Caps{TailTokens: 1}})
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
}
