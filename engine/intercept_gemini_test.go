package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tare/engine/journal"
	"tare/engine/run"
	"tare/modelserver"
)

// geminiTail runs one tail of the real Gemini CLI on its real provider with a Google login
// (a dummy one whose access token is far from expiry) and args: its Code Assist calls reach tare's
// model server standing in for cloudcode-pa.googleapis.com through the room's reading proxy,
// and its token check reaches the stand-in through the unread tunnel to
// oauth2.googleapis.com. It returns the tail and the model server.
func geminiTail(t *testing.T, caps *run.Caps, args ...string) (*journal.TailState, *modelserver.Server, string) {
	t.Helper()
	script, err := modelserver.ParseScript([]byte(interceptScript), "intercept.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptServer(t, script)
	standIn(t, srv, true)
	loginHome(t, "gemini")
	env, start := newTestRun(t, "gemini", "", "grep -q metered m.txt")
	env.recipe.Caps = caps
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := tailSpec{ID: "real", Side: journal.Side{Key: "a", Agent: "gemini", Args: args}, How: "fresh", Prompt: "Make the file.", Start: start}
	if err := runTail(ctx, env, spec); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.run.Dir(), "tails", "real")
	tl := env.run.Snapshot().Tails["real"]
	if tl == nil {
		t.Fatal("no tail recorded")
	}
	return tl, srv, dir
}

// modelCalls are the model calls the model server answered, and their tokens.
func modelCalls(srv *modelserver.Server) (calls int, in, out int64) {
	for _, r := range srv.Requests() {
		if r.API != "" {
			calls++
			in += int64(r.InputTokens)
			out += int64(r.OutputTokens)
		}
	}
	return calls, in, out
}

// TestInterceptMetersGeminiCodeAssist: Gemini CLI on a Google login talks to Code Assist; the
// room's proxy reads cloudcode-pa.googleapis.com with the room's CA, the relay's count of its
// wrapped answers (the CLI's default model, routed by a generateContent call of a
// lighter one, then streamed) equals the model server's own, and the host log marks that host read and
// the token host tunnelled unread.
func TestInterceptMetersGeminiCodeAssist(t *testing.T) {
	needRooms(t)
	tl, srv, dir := geminiTail(t, nil)
	stderr, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
	if tl.Status != journal.StatusPassed {
		t.Fatalf("tail %+v: want passed\nstderr: %s", tl, stderr)
	}
	calls, in, out := modelCalls(srv)
	m := tl.Metered
	if m == nil || m.Calls != calls || calls < 2 || m.Input+m.CacheRead+m.CacheWrite != in || m.Output != out {
		t.Errorf("relay metered %+v; the model server answered %d calls, %d in, %d out", m, calls, in, out)
	}
	read, tunnelled := false, false
	for _, r := range readHosts(t, filepath.Join(dir, HostsFile)) {
		read = read || (r.Read && r.Allowed && r.Host == "cloudcode-pa.googleapis.com:443")
		tunnelled = tunnelled || (!r.Read && r.Allowed && r.Host == "oauth2.googleapis.com:443")
	}
	if !read || !tunnelled {
		t.Errorf("host log: Code Assist read %v, token host tunnelled unread %v; want both", read, tunnelled)
	}
}

// TestCostCapOnGeminiCodeAssist: a cost cap below one call's price on Gemini's real provider:
// the first Code Assist call goes through, the next is refused at the relay in Google's error
// shape and never reaches the provider, and the tail ends over budget.
func TestCostCapOnGeminiCodeAssist(t *testing.T) {
	needRooms(t)
	if err := (run.Caps{TailCost: 1e-9}).Check("", "gemini"); err != nil {
		t.Fatalf("a cost cap on gemini's real provider is refused: %v", err)
	}
	// A model named, so no router call of another model comes first: the first call is the
	// script's first turn.
	tl, srv, dir := geminiTail(t, &run.Caps{TailCost: 1e-9}, "-m", "gemini-2.5-pro")
	stderr, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
	if tl.Status != journal.StatusNoVerdict || tl.Reason != journal.ReasonOverBudget {
		t.Fatalf("tail %+v: want no verdict, over budget\nstderr: %s", tl, stderr)
	}
	calls, _, _ := modelCalls(srv)
	if m := tl.Metered; m == nil || m.Calls != 1 || calls != 1 || m.Refused < 1 || m.Cost <= 0 {
		t.Errorf("metered %+v, provider saw %d model calls: want one priced call through, the next refused at the relay", m, calls)
	}
}
