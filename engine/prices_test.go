package engine

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tare/agent"
)

// TestCostOfNamesTheModelsTheOldTableMispriced: the models a prefix rule mispriced (Opus 4.1
// at Opus 4.5's price, claude-3-haiku at the catch-all "claude", gpt-5-pro at gpt-5's,
// gpt-4o-mini at gpt-4o's, o3-pro at o3's) cost their list price per million tokens; an id
// no rule names has no cost.
func TestCostOfNamesTheModelsTheOldTableMispriced(t *testing.T) {
	for _, tt := range []struct {
		model   string
		in, out float64
	}{
		{"claude-opus-4-1-20250805", 15, 75},
		{"claude-opus-4-20250514", 15, 75},
		{"claude-3-haiku-20240307", 0.25, 1.25},
		{"gpt-5-pro", 15, 120},
		{"gpt-5.2-codex", 1.75, 14},
		{"gpt-4o-mini", 0.15, 0.6},
		{"o3-pro", 20, 80},
		{"gpt-4.1-nano", 0.1, 0.4},
		{"o3-mini", 1.1, 4.4},
		{"gemini-2.5-flash-lite", 0.1, 0.4},
	} {
		in, ok1 := CostOf(tt.model, 1_000_000, 0, 0, 0)
		out, ok2 := CostOf(tt.model, 0, 1_000_000, 0, 0)
		if !ok1 || !ok2 || math.Abs(in-tt.in) > 1e-9 || math.Abs(out-tt.out) > 1e-9 {
			t.Errorf("%s: $%v/$%v (known %v), list price $%v/$%v", tt.model, in, out, ok1, tt.in, tt.out)
		}
	}
	for _, model := range []string{"claude", "claude-opus-4-9", "gpt-5-ultra", "o3-max", "tare-model"} {
		if c, ok := CostOf(model, 1000, 1000, 0, 0); ok {
			t.Errorf("%s priced at $%v; want unknown", model, c)
		}
	}
}

// TestClaudeUsageIsPricedPerModel: a Claude run whose modelUsage holds two models is priced
// at each model's price (not all at the one that wrote most), a request above 200k input
// tokens on Sonnet 4.5 pays the long-context price, and a model the table does not know
// makes the cost unknown instead of zero.
func TestClaudeUsageIsPricedPerModel(t *testing.T) {
	msg := func(id, model string, in, cacheRead int64) string {
		return `{"type":"assistant","message":{"id":"` + id + `","model":"` + model + `","content":[{"type":"text","text":"x"}],` +
			`"usage":{"input_tokens":` + itoa(in) + `,"output_tokens":1,"cache_read_input_tokens":` + itoa(cacheRead) + `,"cache_creation_input_tokens":0}},"session_id":"s"}`
	}
	stream := strings.Join([]string{
		msg("m1", "claude-sonnet-4-5-20250929", 1000, 0),
		msg("m1", "claude-sonnet-4-5-20250929", 1000, 0), // the same message's second block
		msg("m2", "claude-sonnet-4-5-20250929", 10_000, 240_000),
		msg("m3", "claude-haiku-4-5-20251001", 500, 0),
		`{"type":"result","subtype":"success","result":"ok","session_id":"s","total_cost_usd":1,` +
			`"usage":{"input_tokens":11500,"output_tokens":3000,"cache_read_input_tokens":240000,"cache_creation_input_tokens":0},` +
			`"modelUsage":{"claude-sonnet-4-5-20250929[1m]":{"inputTokens":11000,"outputTokens":2000,"cacheReadInputTokens":240000,"cacheCreationInputTokens":0},` +
			`"claude-haiku-4-5-20251001":{"inputTokens":500,"outputTokens":1000,"cacheReadInputTokens":0,"cacheCreationInputTokens":0}}}`,
	}, "\n")
	res, err := agent.Claude{}.ParseStream(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	got := usageOf(res.Usage, res.Models...)
	// Sonnet 4.5: m1 (1000 in, 1 out) at $3/$15; m2 (10k in, 240k cache read, 1 out) above
	// 200k at $6 in, $0.60 cache read, $22.50 out; the output the stream did not show
	// (2000-2) at $15. Haiku 4.5: 500 in, 1000 out at $1/$5.
	want := (1000*3+1*15)/1e6 + (10_000*6+240_000*0.6+1*22.5)/1e6 + 1998*15/1e6 + (500*1+1000*5)/1e6
	if math.Abs(got.Cost-want) > 1e-9 || len(got.Unpriced) > 0 {
		t.Errorf("cost $%.6f (unpriced %v), want $%.6f", got.Cost, got.Unpriced, want)
	}
	unknown := strings.Replace(stream, "claude-haiku-4-5-20251001\":{", "claude-unreleased-9\":{", 1)
	res, err = agent.Claude{}.ParseStream(strings.NewReader(unknown))
	if err != nil {
		t.Fatal(err)
	}
	if got := usageOf(res.Usage, res.Models...); len(got.Unpriced) != 1 || got.Unpriced[0] != "claude-unreleased-9" {
		t.Errorf("unpriced %v, want the unknown model named", got.Unpriced)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCodexRequestsArePricedFromItsRollout: a Codex run's requests, read from its rollout,
// are priced one by one at gpt-5.1-codex's list price ($1.25 in, $10 out).
func TestCodexRequestsArePricedFromItsRollout(t *testing.T) {
	rollout, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "codex_rollout_session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := agent.Codex{}.SessionRequests(rollout, nil)
	u := agent.Usage{Input: 200, Output: 50, Model: agent.Codex{}.SessionModel(rollout)}
	got := usageOf(u, agent.ModelUsage{Model: u.Model, Input: u.Input, Output: u.Output, Requests: reqs})
	want := (200*1.25 + 50*10) / 1e6
	if len(reqs) != 2 || math.Abs(got.Cost-want) > 1e-12 || got.Model != "gpt-5.1-codex" {
		t.Errorf("%d requests of %s cost $%.8f, want 2 of gpt-5.1-codex at $%.8f", len(reqs), got.Model, got.Cost, want)
	}
}

// TestGeminiRunIsPricedFromItsTokens: Gemini CLI reports tokens but no cost; tare prices the
// five-step run's stream (gemini-2.5-pro, 72,214 tokens in and 103 out, every request below
// the 200k tier) at the bundled table's list price, $1.25 in and $10 out.
func TestGeminiRunIsPricedFromItsTokens(t *testing.T) {
	stream, err := os.Open(filepath.Join("..", "agent", "testdata", "gemini_trail_stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	res, err := agent.Gemini{}.ParseStream(stream)
	if err != nil {
		t.Fatal(err)
	}
	got := usageOf(res.Usage, res.Models...)
	want := (72214*1.25 + 103*10) / 1e6
	if math.Abs(got.Cost-want) > 1e-12 || got.Model != "gemini-2.5-pro" || len(got.Unpriced) > 0 || got.Reported != nil {
		t.Errorf("gemini run priced %+v, want $%.8f for gemini-2.5-pro, not reported by the agent", got, want)
	}
	// Its six model requests, read from the session file, add up to the stream's tokens; a
	// request whose prompt passes 200k pays gemini-2.5-pro's long-context price ($2.50 in,
	// $15 out).
	session, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "gemini_trail_session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := agent.Gemini{}.SessionRequests(session, nil)
	var in, out int64
	for _, r := range reqs {
		in, out = in+r.Input, out+r.Output
	}
	if len(reqs) != 6 || in != 72214 || out != 103 {
		t.Fatalf("%d requests, %d in and %d out; want 6 adding up to the stream's 72214 and 103", len(reqs), in, out)
	}
	long := agent.Request{Input: 250_000, Output: 1000}
	u := agent.Usage{Input: in + long.Input, Output: out + long.Output, Model: "gemini-2.5-pro"}
	got = usageOf(u, agent.ModelUsage{Model: u.Model, Input: u.Input, Output: u.Output, Requests: append(reqs, long)})
	want += (250_000*2.5 + 1000*15) / 1e6
	if math.Abs(got.Cost-want) > 1e-12 {
		t.Errorf("with a 250k-token request: $%.8f, want $%.8f", got.Cost, want)
	}
}
