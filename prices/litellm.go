package prices

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// litellmProvider names the provider a LiteLLM price file becomes.
const litellmProvider = "litellm"

// fromLiteLLM turns LiteLLM's model price JSON (model_prices_and_context_window.json: an
// object of model ids, prices per token) into genai-prices' format, one model per id matched
// exactly, with its "_above_Nk_tokens" prices as long-context tiers. Entries without a token
// price (image, audio and rerank models, the "sample_spec") are left out.
func fromLiteLLM(data []byte) ([]byte, int, error) {
	var file map[string]json.RawMessage
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, 0, err
	}
	ids := make([]string, 0, len(file))
	for id := range file {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var models []map[string]any
	for _, id := range ids {
		var entry map[string]any
		if json.Unmarshal(file[id], &entry) != nil || id == "sample_spec" {
			continue
		}
		prices := map[string]any{}
		for field, dest := range litellmFields {
			r, ok, err := litellmRate(entry, field)
			if err != nil {
				return nil, 0, fmt.Errorf("model %q: %v", id, err)
			}
			if ok {
				prices[dest] = r
			}
		}
		if prices["input_mtok"] == nil || prices["output_mtok"] == nil {
			continue
		}
		models = append(models, map[string]any{
			"id": strings.ReplaceAll(id, " ", "_"), "match": map[string]string{"equals": strings.ToLower(id)}, "prices": prices,
		})
	}
	if len(models) == 0 {
		return nil, 0, fmt.Errorf("no model has input_cost_per_token and output_cost_per_token")
	}
	out, err := json.MarshalIndent([]map[string]any{{
		"id": litellmProvider, "name": "LiteLLM", "model_match": map[string]string{"regex": "."}, "models": models,
	}}, "", " ")
	return out, len(models), err
}

// litellmFields maps LiteLLM's per-token price fields to genai-prices' per-million ones.
var litellmFields = map[string]string{
	"input_cost_per_token":            "input_mtok",
	"output_cost_per_token":           "output_mtok",
	"cache_read_input_token_cost":     "cache_read_mtok",
	"cache_creation_input_token_cost": "cache_write_mtok",
}

var aboveK = regexp.MustCompile(`^(.+)_above_(\d+)k_tokens$`)

// litellmRate reads field (USD per token) and its tiers as a rate per million tokens.
func litellmRate(entry map[string]any, field string) (any, bool, error) {
	v, ok := entry[field]
	if !ok || v == nil {
		return nil, false, nil
	}
	base, ok := v.(float64)
	if !ok || base < 0 {
		return nil, false, fmt.Errorf("%s: want a price per token >= 0, not %v", field, v)
	}
	var tiers []Tier
	for k, tv := range entry {
		m := aboveK.FindStringSubmatch(k)
		if m == nil || m[1] != field {
			continue
		}
		p, ok := tv.(float64)
		n, err := strconv.ParseInt(m[2], 10, 64)
		if !ok || p < 0 || err != nil {
			return nil, false, fmt.Errorf("%s: want a price per token >= 0, not %v", k, tv)
		}
		tiers = append(tiers, Tier{Start: n * 1000, Price: perMillion(p)})
	}
	if len(tiers) == 0 {
		return perMillion(base), true, nil
	}
	sort.Slice(tiers, func(i, j int) bool { return tiers[i].Start < tiers[j].Start })
	return map[string]any{"base": perMillion(base), "tiers": tiers}, true, nil
}

// perMillion turns a price per token into one per million tokens, without float noise
// (3e-06 is $3, not $3.0000000000000004).
func perMillion(p float64) float64 { return math.Round(p*1e12) / 1e6 }
