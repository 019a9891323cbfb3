package engine

import (
	"sort"
	"strings"
)

// Price is a model's list price in USD per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// prices is tare's bundled price table, by model id prefix (the longest matching prefix
// wins). Agents that do not report a cost (Codex) are costed from it, and those that do are
// shown beside it, so two sides are always compared on the same table.
var prices = map[string]Price{
	"claude-opus-4":      {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-sonnet-4":    {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-haiku-4":     {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"claude-3-5-haiku":   {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	"claude":             {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"gpt-5.1-codex":      {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5.1-codex-mini": {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5-codex":        {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":         {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5-nano":         {Input: 0.05, Output: 0.4, CacheRead: 0.005},
	"gpt-5":              {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-4.1":            {Input: 2, Output: 8, CacheRead: 0.5},
	"gpt-4o":             {Input: 2.5, Output: 10, CacheRead: 1.25},
	"o3":                 {Input: 2, Output: 8, CacheRead: 0.5},
	"o4-mini":            {Input: 1.1, Output: 4.4, CacheRead: 0.275},
	"gemini-2.5-pro":     {Input: 1.25, Output: 10, CacheRead: 0.31},
	"gemini-2.5-flash":   {Input: 0.3, Output: 2.5, CacheRead: 0.075},
	"gemini-3-pro":       {Input: 2, Output: 12, CacheRead: 0.2},
}

// PriceOf finds the price of a model by its longest matching prefix; ok is false for an
// unknown model (its cost is then shown as unknown, never as zero).
func PriceOf(model string) (Price, bool) {
	model = strings.ToLower(strings.TrimSpace(model))
	keys := make([]string, 0, len(prices))
	for k := range prices {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if strings.HasPrefix(model, k) {
			return prices[k], true
		}
	}
	return Price{}, false
}

// CostOf computes what tokens of a model cost on the bundled table.
func CostOf(model string, input, output, cacheRead, cacheWrite int64) (float64, bool) {
	p, ok := PriceOf(model)
	if !ok {
		return 0, false
	}
	const m = 1e6
	return (float64(input)*p.Input + float64(output)*p.Output + float64(cacheRead)*p.CacheRead + float64(cacheWrite)*p.CacheWrite) / m, true
}
