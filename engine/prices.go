package engine

import (
	"sync"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine/room"
	"tare/prices"
)

// priceTable is the table runs are priced with: the bundled database under the operator's
// override file (prices.json beside config.toml), read once per process. Agents that do not
// report a cost (Codex) are costed from it, and those that do are shown beside it, so two
// sides are always compared on the same table.
var priceTable = sync.OnceValues(func() (*prices.Table, error) {
	return prices.Load(prices.OverrideFile(config.File()))
})

// CostOf computes what one model call's tokens cost on tare's table, in the long-context tier
// its prompt falls in (a 300k-token Sonnet 4.5 call pays the price above 200k for all its
// tokens): it is the relay's price of each call it meters, and of a call's worst case under a
// cap. ok is false for a model the table does not name: its cost is unknown, never guessed.
func CostOf(model string, input, output, cacheRead, cacheWrite int64) (float64, bool) {
	call := prices.Tokens{Input: input, Output: output, CacheRead: cacheRead, CacheWrite: cacheWrite}
	return costOf(model, time.Now(), call, []prices.Tokens{call})
}

// costOf prices a model's total tokens on day at, of which each of requests (where the stream
// showed them one by one) pays the tier its own prompt size falls in; the rest pays the base
// price.
func costOf(model string, at time.Time, total prices.Tokens, requests []prices.Tokens) (float64, bool) {
	table, err := priceTable()
	if err != nil {
		return 0, false
	}
	m, ok := table.Lookup(model)
	if !ok {
		return 0, false
	}
	p := m.PriceAt(at)
	cost := 0.0
	rest := total
	for _, r := range requests {
		cost += p.Request(r)
		rest = prices.Tokens{Input: rest.Input - r.Input, Output: rest.Output - r.Output,
			CacheRead: rest.CacheRead - r.CacheRead, CacheWrite: rest.CacheWrite - r.CacheWrite}
	}
	rest = prices.Tokens{Input: max(rest.Input, 0), Output: max(rest.Output, 0), CacheRead: max(rest.CacheRead, 0), CacheWrite: max(rest.CacheWrite, 0)}
	return cost + p.Base(rest), true
}

// priceUsage is tare's cost of an agent's usage: per model where the agent says what each
// model used (Claude's modelUsage), else all at its one model. unpriced names the models the
// table does not have; their share of the cost is unknown, and the cost is then not a total.
func priceUsage(u agent.Usage, models []agent.ModelUsage, at time.Time) (cost float64, unpriced []string) {
	if _, err := priceTable(); err != nil {
		return 0, []string{"any model: " + err.Error()}
	}
	if len(models) == 0 {
		if u.Input+u.Output+u.CacheRead+u.CacheWrite == 0 {
			return 0, nil
		}
		c, ok := costOf(u.Model, at, prices.Tokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}, nil)
		if !ok {
			return 0, []string{unpricedName(u.Model)}
		}
		return c, nil
	}
	for _, m := range models {
		reqs := make([]prices.Tokens, len(m.Requests))
		for i, r := range m.Requests {
			reqs[i] = prices.Tokens{Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite}
		}
		c, ok := costOf(m.Model, at, prices.Tokens{Input: m.Input, Output: m.Output, CacheRead: m.CacheRead, CacheWrite: m.CacheWrite}, reqs)
		if !ok {
			unpriced = append(unpriced, unpricedName(m.Model))
			continue
		}
		cost += c
	}
	return cost, unpriced
}

// runModels is what each model of a run used, for pricing: Claude's modelUsage as its stream
// gives it, or, for an agent whose session file lists its requests (Codex), the run's model
// with those requests. nil when neither is known: the tokens are then priced at the base
// price, a long-context request among them unseen.
func runModels(a agent.Agent, r agent.Result, u agent.Usage, placed []byte, sessions string) []agent.ModelUsage {
	if len(r.Models) > 0 {
		return r.Models
	}
	l, ok := a.(agent.RequestLister)
	if !ok {
		return nil
	}
	data, err := room.ReadSession(a, sessions, r.SessionID)
	if err != nil {
		return nil
	}
	reqs := l.SessionRequests(data, placed)
	if len(reqs) == 0 {
		return nil
	}
	return []agent.ModelUsage{{Model: u.Model, Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Requests: reqs}}
}

func unpricedName(model string) string {
	if model == "" {
		return "the model (the CLI did not name it)"
	}
	return model
}
