// Package prices is the table tare prices tokens with: genai-prices' maintained price database
// (bundled, MIT, see LICENSE-genai-prices), tare's corrections to it, and the operator's
// override file written by `tare prices update`.
//
// A model is found by the database's own match rules (exact ids, prefixes and regexes the
// maintainers chose per model), never by a catch-all prefix: a model no rule names has no
// price, and its cost is shown as unknown, never guessed.
package prices

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Tokens is what one request, or a sum of requests, used. Input excludes cache reads and
// writes (as agent.Usage counts it).
type Tokens struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Prompt is the request's whole input, cached or not: it is what decides a long-context tier.
func (t Tokens) Prompt() int64 { return t.Input + t.CacheRead + t.CacheWrite }

// Rate is a price in USD per million tokens, with long-context tiers: a request whose prompt
// is above a tier's Start pays that tier's price for all its tokens of this kind (the "cliff"
// the providers use), not just for those above it.
type Rate struct {
	Base  float64 `json:"base"`
	Tiers []Tier  `json:"tiers,omitempty"`
	set   bool    // the price file gave this rate
}

// Tier is a long-context price: from Start prompt tokens on (exclusive), Price per million.
type Tier struct {
	Start int64   `json:"start"`
	Price float64 `json:"price"`
}

// At is the rate for a request whose prompt has the given size.
func (r Rate) At(prompt int64) float64 {
	p := r.Base
	for _, t := range r.Tiers {
		if prompt > t.Start {
			p = t.Price
		}
	}
	return p
}

// Price is a model's prices per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite Rate
}

// Request is what one request of tokens t costs, in USD, its tier chosen by its prompt.
// A model with no cache price charges cache tokens as input: they were input, and a provider
// that lists no cache discount gives none.
func (p Price) Request(t Tokens) float64 {
	n := t.Prompt()
	read, write := p.CacheRead, p.CacheWrite
	if !read.set {
		read = p.Input
	}
	if !write.set {
		write = p.Input
	}
	return (float64(t.Input)*p.Input.At(n) + float64(t.Output)*p.Output.At(n) +
		float64(t.CacheRead)*read.At(n) + float64(t.CacheWrite)*write.At(n)) / 1e6
}

// Base is what tokens cost at the base price, whatever their requests' sizes: for usage whose
// requests are not known one by one.
func (p Price) Base(t Tokens) float64 {
	flat := Price{Input: Rate{Base: p.Input.Base, set: true}, Output: Rate{Base: p.Output.Base, set: true}}
	if p.CacheRead.set {
		flat.CacheRead = Rate{Base: p.CacheRead.Base, set: true}
	}
	if p.CacheWrite.set {
		flat.CacheWrite = Rate{Base: p.CacheWrite.Base, set: true}
	}
	return flat.Request(t)
}

// Model is one model of the table.
type Model struct {
	ID       string // the database's id for it, e.g. "claude-opus-4-1"
	Name     string
	Provider string // e.g. "anthropic"
	Source   string // "bundled", "tare's correction" or the override file
	match    clause
	prices   []dated
}

type dated struct {
	start time.Time // zero: from the beginning
	price Price
}

// PriceAt is the model's price on day at: the last dated price that had started.
func (m *Model) PriceAt(at time.Time) Price {
	var p Price
	for _, d := range m.prices {
		if d.start.IsZero() || !at.Before(d.start) {
			p = d.price
		}
	}
	return p
}

// Changes lists the days the model's price changed, for show.
func (m *Model) Changes() []time.Time {
	var out []time.Time
	for _, d := range m.prices {
		if !d.start.IsZero() {
			out = append(out, d.start)
		}
	}
	return out
}

// Table is a price table: providers, each with a rule for the model ids it serves and its
// models. Lookups try the layers in order (the override file first, then tare's corrections,
// then the bundled database), so a newer price wins and an older layer fills what it lacks.
type Table struct {
	layers [][]provider
}

type provider struct {
	id        string
	match     clause // nil: the provider is never chosen by model id
	fallbacks []string
	models    []*Model
}

// Lookup finds a model's prices by the table's match rules. The id is matched in lower case,
// with Claude Code's context tag ("[1m]") taken off; ok is false when no rule names it.
func (t *Table) Lookup(model string) (*Model, bool) {
	ref := Normalize(model)
	if ref == "" {
		return nil, false
	}
	for _, layer := range t.layers {
		for _, p := range layer {
			if p.match == nil || !p.match.is(ref) {
				continue
			}
			if m := p.find(ref); m != nil {
				return m, true
			}
			for _, id := range p.fallbacks {
				for _, q := range layer {
					if q.id == id {
						if m := q.find(ref); m != nil {
							return m, true
						}
					}
				}
			}
		}
	}
	return nil, false
}

func (p provider) find(ref string) *Model {
	for _, m := range p.models {
		if m.match.is(ref) {
			return m
		}
	}
	return nil
}

// Normalize is the id the table matches: lower case, without Claude Code's "[1m]" tag.
func Normalize(model string) string {
	ref := strings.ToLower(strings.TrimSpace(model))
	if i := strings.IndexByte(ref, '['); i > 0 && strings.HasSuffix(ref, "]") {
		ref = ref[:i]
	}
	return ref
}

// The genai-prices data.json format, as much of it as tare reads.
type fileProvider struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Match     json.RawMessage `json:"model_match"`
	Fallbacks []string        `json:"fallback_model_providers"`
	Models    []fileModel     `json:"models"`
}

type fileModel struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Match  json.RawMessage `json:"match"`
	Prices json.RawMessage `json:"prices"`
}

type filePrice struct {
	Input      json.RawMessage `json:"input_mtok"`
	Output     json.RawMessage `json:"output_mtok"`
	CacheRead  json.RawMessage `json:"cache_read_mtok"`
	CacheWrite json.RawMessage `json:"cache_write_mtok"`
}

type fileConditional struct {
	Constraint *struct {
		StartDate string `json:"start_date"`
		StartTime string `json:"start_time"`
	} `json:"constraint"`
	Prices json.RawMessage `json:"prices"`
}

// parseGenai reads genai-prices' data.json format into a layer; source names it in the
// models and in errors.
func parseGenai(data []byte, source string) ([]provider, error) {
	var file []fileProvider
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("not genai-prices' data.json (a JSON array of providers): %v", err)
	}
	if len(file) == 0 {
		return nil, fmt.Errorf("no providers in the file")
	}
	out := make([]provider, 0, len(file))
	for i, fp := range file {
		if fp.ID == "" {
			return nil, fmt.Errorf("provider %d: no \"id\"", i+1)
		}
		p := provider{id: fp.ID, fallbacks: fp.Fallbacks}
		if len(fp.Match) > 0 && string(fp.Match) != "null" {
			c, err := parseClause(fp.Match)
			if err != nil {
				return nil, fmt.Errorf("provider %s: model_match: %v", fp.ID, err)
			}
			p.match = c
		}
		for _, fm := range fp.Models {
			m, err := parseModel(fm, fp.ID, source)
			if err != nil {
				return nil, fmt.Errorf("provider %s: model %q: %v", fp.ID, fm.ID, err)
			}
			p.models = append(p.models, m)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseModel(fm fileModel, providerID, source string) (*Model, error) {
	if fm.ID == "" {
		return nil, fmt.Errorf("no \"id\"")
	}
	if len(fm.Match) == 0 {
		return nil, fmt.Errorf("no \"match\"")
	}
	c, err := parseClause(fm.Match)
	if err != nil {
		return nil, fmt.Errorf("match: %v", err)
	}
	m := &Model{ID: fm.ID, Name: fm.Name, Provider: providerID, Source: source, match: c}
	raw := bytes.TrimSpace(fm.Prices)
	switch {
	case len(raw) == 0:
		return nil, fmt.Errorf("no \"prices\"")
	case raw[0] == '{':
		p, err := parsePrice(raw)
		if err != nil {
			return nil, err
		}
		m.prices = []dated{{price: p}}
	case raw[0] == '[':
		var conds []fileConditional
		if err := json.Unmarshal(raw, &conds); err != nil {
			return nil, fmt.Errorf("prices: %v", err)
		}
		for _, c := range conds {
			p, err := parsePrice(c.Prices)
			if err != nil {
				return nil, err
			}
			d := dated{price: p}
			if c.Constraint != nil {
				if c.Constraint.StartTime != "" {
					continue // time-of-day prices (off-peak hours) are not tare's to guess
				}
				if d.start, err = time.Parse(time.DateOnly, c.Constraint.StartDate); err != nil {
					return nil, fmt.Errorf("prices: start_date %q: want YYYY-MM-DD", c.Constraint.StartDate)
				}
			}
			m.prices = append(m.prices, d)
		}
		if len(m.prices) == 0 {
			return nil, fmt.Errorf("prices: no price without a time-of-day constraint")
		}
	default:
		return nil, fmt.Errorf("prices: want an object or an array of dated prices")
	}
	return m, nil
}

func parsePrice(raw json.RawMessage) (Price, error) {
	var fp filePrice
	if err := json.Unmarshal(raw, &fp); err != nil {
		return Price{}, fmt.Errorf("prices: %v", err)
	}
	var p Price
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		to   *Rate
	}{{"input_mtok", fp.Input, &p.Input}, {"output_mtok", fp.Output, &p.Output},
		{"cache_read_mtok", fp.CacheRead, &p.CacheRead}, {"cache_write_mtok", fp.CacheWrite, &p.CacheWrite}} {
		r, err := parseRate(f.raw)
		if err != nil {
			return Price{}, fmt.Errorf("prices: %s: %v", f.name, err)
		}
		*f.to = r
	}
	return p, nil
}

func parseRate(raw json.RawMessage) (Rate, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Rate{}, nil
	}
	var r Rate
	if raw[0] == '{' {
		if err := json.Unmarshal(raw, &r); err != nil {
			return Rate{}, err
		}
	} else if err := json.Unmarshal(raw, &r.Base); err != nil {
		return Rate{}, fmt.Errorf("want a number or {base, tiers}")
	}
	if r.Base < 0 {
		return Rate{}, fmt.Errorf("negative price %v", r.Base)
	}
	for _, t := range r.Tiers {
		if t.Price < 0 || t.Start <= 0 {
			return Rate{}, fmt.Errorf("tier %+v: want a positive start and a price >= 0", t)
		}
	}
	r.set = true
	return r, nil
}
