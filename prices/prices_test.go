package prices

import (
	"math"
	"testing"
	"time"
)

// listPrice is a provider's list price per million tokens, written by hand from its pricing
// page (anthropic.com/pricing, openai.com/api/pricing, ai.google.dev/gemini-api/docs/pricing),
// never read back from the bundled file. Cache prices are 0 where the test does not pin them;
// long is the price above the long-context threshold, when the provider lists one.
type listPrice struct {
	model              string
	in, out            float64
	cacheRead, cacheWr float64
	longAt             int64
	longIn, longOut    float64
}

var listPrices = []listPrice{
	// Anthropic
	{model: "claude-opus-4-1-20250805", in: 15, out: 75, cacheRead: 1.5, cacheWr: 18.75},
	{model: "claude-opus-4-1", in: 15, out: 75},
	{model: "claude-opus-4-20250514", in: 15, out: 75, cacheRead: 1.5, cacheWr: 18.75},
	{model: "claude-opus-4-5-20251101", in: 5, out: 25, cacheRead: 0.5, cacheWr: 6.25},
	{model: "claude-sonnet-4-20250514", in: 3, out: 15, cacheRead: 0.3, cacheWr: 3.75, longAt: 200_000, longIn: 6, longOut: 22.5},
	{model: "claude-sonnet-4-5-20250929", in: 3, out: 15, cacheRead: 0.3, cacheWr: 3.75, longAt: 200_000, longIn: 6, longOut: 22.5},
	{model: "claude-sonnet-4-5", in: 3, out: 15, longAt: 200_000, longIn: 6, longOut: 22.5},
	{model: "claude-haiku-4-5-20251001", in: 1, out: 5, cacheRead: 0.1, cacheWr: 1.25},
	{model: "claude-3-7-sonnet-20250219", in: 3, out: 15, cacheRead: 0.3, cacheWr: 3.75},
	{model: "claude-3-5-sonnet-20241022", in: 3, out: 15},
	{model: "claude-3-5-haiku-20241022", in: 0.8, out: 4, cacheRead: 0.08, cacheWr: 1},
	{model: "claude-3-5-haiku", in: 0.8, out: 4},
	{model: "claude-3-opus-20240229", in: 15, out: 75},
	{model: "claude-3-haiku-20240307", in: 0.25, out: 1.25, cacheRead: 0.03, cacheWr: 0.3},
	{model: "claude-3-haiku", in: 0.25, out: 1.25},
	// Claude Code names its model with the context window it uses.
	{model: "claude-sonnet-4-5-20250929[1m]", in: 3, out: 15, longAt: 200_000, longIn: 6, longOut: 22.5},
	// OpenAI
	{model: "gpt-4o", in: 2.5, out: 10, cacheRead: 1.25},
	{model: "gpt-4o-2024-08-06", in: 2.5, out: 10},
	{model: "gpt-4o-mini", in: 0.15, out: 0.6, cacheRead: 0.075},
	{model: "gpt-4o-mini-2024-07-18", in: 0.15, out: 0.6},
	{model: "gpt-4.1", in: 2, out: 8, cacheRead: 0.5},
	{model: "gpt-4.1-mini", in: 0.4, out: 1.6, cacheRead: 0.1},
	{model: "gpt-4.1-nano", in: 0.1, out: 0.4, cacheRead: 0.025},
	{model: "gpt-4-turbo", in: 10, out: 30},
	{model: "o1", in: 15, out: 60, cacheRead: 7.5},
	{model: "o1-pro", in: 150, out: 600},
	{model: "o3", in: 2, out: 8, cacheRead: 0.5},
	{model: "o3-pro", in: 20, out: 80},
	{model: "o3-mini", in: 1.1, out: 4.4, cacheRead: 0.55},
	{model: "o4-mini", in: 1.1, out: 4.4, cacheRead: 0.275},
	{model: "gpt-5", in: 1.25, out: 10, cacheRead: 0.125},
	{model: "gpt-5-2025-08-07", in: 1.25, out: 10},
	{model: "gpt-5-mini", in: 0.25, out: 2, cacheRead: 0.025},
	{model: "gpt-5-nano", in: 0.05, out: 0.4, cacheRead: 0.005},
	{model: "gpt-5-pro", in: 15, out: 120},
	{model: "gpt-5-codex", in: 1.25, out: 10, cacheRead: 0.125},
	{model: "gpt-5.1", in: 1.25, out: 10},
	{model: "gpt-5.1-codex", in: 1.25, out: 10},
	{model: "gpt-5.1-codex-mini", in: 0.25, out: 2},
	{model: "gpt-5.2-codex", in: 1.75, out: 14},
	// Google
	{model: "gemini-2.5-pro", in: 1.25, out: 10, cacheRead: 0.125, longAt: 200_000, longIn: 2.5, longOut: 15},
	{model: "gemini-2.5-flash", in: 0.3, out: 2.5, cacheRead: 0.03},
	{model: "gemini-2.5-flash-lite", in: 0.1, out: 0.4, cacheRead: 0.01},
	{model: "gemini-2.0-flash", in: 0.1, out: 0.4, cacheRead: 0.025},
	{model: "gemini-2.0-flash-lite", in: 0.075, out: 0.3},
	{model: "gemini-1.5-pro", in: 1.25, out: 5, longAt: 128_000, longIn: 2.5, longOut: 10},
	{model: "gemini-1.5-flash", in: 0.075, out: 0.3, longAt: 128_000, longIn: 0.15, longOut: 0.6},
	{model: "gemini-3-pro-preview", in: 2, out: 12, longAt: 200_000, longIn: 4, longOut: 18},
}

// TestListPrices: every model above is found and priced at its provider's list price, its
// long-context tier included; a request just past the threshold pays the tier for all its
// tokens, one at the threshold does not.
func TestListPrices(t *testing.T) {
	if len(listPrices) < 30 {
		t.Fatalf("%d models pinned, want at least 30", len(listPrices))
	}
	table := bundledTable(t)
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, lp := range listPrices {
		m, ok := table.Lookup(lp.model)
		if !ok {
			t.Errorf("%s: no price, want $%v/$%v", lp.model, lp.in, lp.out)
			continue
		}
		p := m.PriceAt(now)
		check := func(what string, got, want float64) {
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("%s (matched %s %s): %s $%v per million, list price $%v", lp.model, m.Provider, m.ID, what, got, want)
			}
		}
		// One request of 100k tokens of each kind, below any tier, times 10.
		check("input", p.Request(Tokens{Input: 100_000})*10, lp.in)
		check("output", p.Request(Tokens{Output: 100_000})*10, lp.out)
		if lp.cacheRead > 0 {
			check("cache read", p.Request(Tokens{CacheRead: 100_000})*10, lp.cacheRead)
		}
		if lp.cacheWr > 0 {
			check("cache write", p.Request(Tokens{CacheWrite: 100_000})*10, lp.cacheWr)
		}
		if lp.longAt == 0 {
			// No long-context premium: a long request pays the base price.
			check("input of a 1M-token request", p.Request(Tokens{Input: 1e6}), lp.in)
			continue
		}
		check("input at the threshold", p.Request(Tokens{Input: lp.longAt})*1e6/float64(lp.longAt), lp.in)
		long := Tokens{Input: lp.longAt + 1, Output: 1000}
		want := (float64(long.Input)*lp.longIn + 1000*lp.longOut) / 1e6
		check("a long request", p.Request(long), want)
	}
}

// TestUnknownModelsHaveNoPrice: ids that no rule names, including the prefixes the old table
// priced by catch-all (a bare "claude", an unreleased "o3-" variant), have no price.
func TestUnknownModelsHaveNoPrice(t *testing.T) {
	table := bundledTable(t)
	for _, id := range []string{"", "tare-model", "claude", "claude-opus-9", "claude-sonnet-4-7", "gpt-5-turbo-max", "gpt-4o-nano", "o3-ultra", "gemini-9-pro", "my-local-llama"} {
		if m, ok := table.Lookup(id); ok {
			t.Errorf("%q priced as %s %s; want unknown", id, m.Provider, m.ID)
		}
	}
}

// TestDatedPrices: a model whose price changed on a day is priced by the day of the use
// (o3 was cut from $10/$40 to $2/$8 on 2025-06-10).
func TestDatedPrices(t *testing.T) {
	m, ok := bundledTable(t).Lookup("o3")
	if !ok {
		t.Fatal("o3 has no price")
	}
	before := m.PriceAt(time.Date(2025, 6, 9, 12, 0, 0, 0, time.UTC)).Request(Tokens{Input: 1e6})
	after := m.PriceAt(time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)).Request(Tokens{Input: 1e6})
	if before != 10 || after != 2 {
		t.Errorf("o3 input: $%v before the cut, $%v after; want $10 and $2", before, after)
	}
}

func bundledTable(t *testing.T) *Table {
	t.Helper()
	table, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	return table
}
