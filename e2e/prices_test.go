package e2e

import (
	"bytes"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// litellmFile is a price file in LiteLLM's format (model_prices_and_context_window.json):
// prices per token, a long-context tier as "_above_200k_tokens", entries without token
// prices left out.
const litellmFile = `{
 "sample_spec": {"input_cost_per_token": 0, "output_cost_per_token": 0, "litellm_provider": "one of https://docs.litellm.ai/docs/providers"},
 "claude-opus-4-1": {"input_cost_per_token": 1.7e-05, "output_cost_per_token": 8.5e-05, "cache_read_input_token_cost": 1.7e-06, "litellm_provider": "anthropic", "mode": "chat"},
 "acme-coder-1": {"input_cost_per_token": 1e-06, "output_cost_per_token": 4e-06, "input_cost_per_token_above_200k_tokens": 2e-06, "litellm_provider": "acme", "mode": "chat"},
 "dall-e-3": {"output_cost_per_image": 0.04, "mode": "image_generation"}
}`

// genaiFile is a price file in genai-prices' data.json format.
const genaiFile = `[{"id": "acme", "name": "Acme", "model_match": {"starts_with": "acme-"},
  "models": [{"id": "acme-coder-2", "match": {"starts_with": "acme-coder-2"}, "prices": {"input_mtok": 0.5, "output_mtok": 2}}]}]`

// TestPricesShowAndUpdate: tare prices show names a model's list price and the rule that
// matched it; update reads a LiteLLM file, a genai-prices file and a URL, and the table it
// writes is looked up before the bundled one; bad input (not a price file, a URL that cannot
// be reached, a missing file, an unknown model) is one line naming it and the fix, exit 2,
// and the old table is kept byte for byte.
func TestPricesShowAndUpdate(t *testing.T) {
	r := newRun(t, "")
	override := filepath.Join(r.config, "tare", "prices.json")
	show := func(model string, want ...string) {
		t.Helper()
		r.tare(t, "prices", "show", model)
		if r.code != 0 {
			t.Fatalf("prices show %s: exit %d, %s", model, r.code, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("prices show %s lacks %q:\n%s", model, w, r.stdout)
			}
		}
	}
	show("claude-opus-4-1-20250805", "input        $15 per million", "output       $75", "anthropic claude-opus-4-1, bundled")
	show("claude-sonnet-4-20250514", "$3 ($6 >200k)", "tare's correction")
	r.tare(t, "prices")
	if r.code != 0 || !strings.Contains(r.stdout, "gpt-5-pro") || !strings.Contains(r.stdout, "no table of yours") {
		t.Errorf("prices: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	update := func(src, wantFormat string) {
		t.Helper()
		r.tare(t, "prices", "update", src)
		if r.code != 0 || !strings.Contains(r.stdout, wantFormat) {
			t.Fatalf("prices update %s: exit %d\n%s%s", src, r.code, r.stdout, r.stderr)
		}
	}
	update(write("litellm.json", litellmFile), "2 models (LiteLLM format)")
	show("acme-coder-1", "input        $1 ($2 >200k) per million", "output       $4", "litellm acme-coder-1, "+override)
	show("claude-opus-4-1", "input        $17 per", "cache read   $1.7") // the operator's price wins
	show("claude-3-haiku-20240307", "input        $0.25", "bundled")     // and the bundled one fills the rest

	update(write("genai.json", genaiFile), "1 models (genai-prices format)")
	show("acme-coder-2-fast", "input        $0.5 per", "acme acme-coder-2")
	show("claude-opus-4-1", "input        $15 per") // update replaced the LiteLLM table

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/missing" {
			http.NotFound(w, req)
			return
		}
		w.Write([]byte(litellmFile))
	}))
	defer srv.Close()
	update(srv.URL+"/model_prices.json", "2 models (LiteLLM format)")
	show("acme-coder-1", "input        $1 ($2 >200k)")

	before, err := os.ReadFile(override)
	if err != nil {
		t.Fatal(err)
	}
	closed := closedPort(t)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"not JSON", []string{"prices", "update", write("notes.txt", "claude-opus-4-1 = $15\n")}, []string{"notes.txt: not a price file", "fix: give genai-prices' data.json"}},
		{"JSON of another shape", []string{"prices", "update", write("other.json", `{"models": {"x": 1}}`)}, []string{"other.json: not a price file", "LiteLLM", "fix:"}},
		{"a genai file with a bad rule", []string{"prices", "update", write("bad.json", strings.Replace(genaiFile, "starts_with", "begins", 1))}, []string{"bad.json: not a price file", `unknown rule "begins"`, "fix:"}},
		{"a missing file", []string{"prices", "update", filepath.Join(dir, "nope.json")}, []string{"nope.json: no such file", "fix:"}},
		{"a URL that cannot be reached", []string{"prices", "update", "http://" + closed + "/data.json"}, []string{closed, "cannot reach it", "fix:"}},
		{"a URL that answers 404", []string{"prices", "update", srv.URL + "/missing"}, []string{"answered 404 Not Found", "fix:"}},
		{"an unknown model", []string{"prices", "show", "acme-rocket-9"}, []string{"prices show acme-rocket-9: no price", "fix:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r.tare(t, c.args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and one line", r.code, r.stdout, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("%q lacks %q", lines[0], w)
				}
			}
			after, err := os.ReadFile(override)
			if err != nil || !bytes.Equal(before, after) {
				t.Errorf("the table changed (%v)", err)
			}
		})
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestLongContextRequestPaysItsTier: a real Claude Code on Sonnet 4.5 against tare's model
// server, whose second request carries a 900 kB tool call (above 200k input tokens): tare
// prices that request at Anthropic's long-context list price ($6 in, $22.50 out per million)
// and the first at the base price ($3/$15), each by its own size as the stream shows it.
func TestLongContextRequestPaysItsTier(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat(strings.Repeat("x", 64)+"\n", 14000)
	script := filepath.Join(dir, "long.toml")
	text := "[[turn]]\ntext = \"Writing a big file.\"\nwrite = { path = \"big.txt\", content = \"\"\"" + big + "\"\"\" }\n\n[[turn]]\ntext = \"Done.\"\n"
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, "")
	out := filepath.Join(dir, "run")
	r.tare(t, "calibrate", "write big.txt", "--side", "claude --model claude-sonnet-4-5-20250929", "--script", script,
		"--runs", "1", "--jobs", "1", "--project", project, "--out", out)
	if r.code != 0 {
		t.Fatalf("calibrate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// The requests as the stream shows them: their input exactly, their output as it began.
	stream, err := os.ReadFile(filepath.Join(out, "tails", "a-0", "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type tokens struct {
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
	}
	var reqs []tokens
	seen := map[string]bool{}
	var total tokens
	for _, line := range strings.Split(string(stream), "\n") {
		var e struct {
			Type    string
			Message struct {
				ID    string
				Usage tokens
			}
			Usage tokens
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if e.Type == "assistant" && !seen[e.Message.ID] {
			seen[e.Message.ID] = true
			reqs = append(reqs, e.Message.Usage)
		}
		if e.Type == "result" {
			total = e.Usage
		}
	}
	long := 0
	want, shownOut := 0.0, int64(0)
	for _, q := range reqs {
		in, outp := 3.0, 15.0
		if q.Input > 200_000 {
			in, outp = 6, 22.5
			long++
		}
		want += (float64(q.Input)*in + float64(q.Output)*outp) / 1e6
		shownOut += q.Output
	}
	want += float64(total.Output-shownOut) * 15 / 1e6
	if long != 1 || len(reqs) < 2 {
		t.Fatalf("%d requests, %d above 200k input tokens; want one long request among them: %+v", len(reqs), long, reqs)
	}
	data, err := os.ReadFile(filepath.Join(out, "usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	var usage struct {
		Total struct {
			Cost     float64  `json:"cost"`
			Unpriced []string `json:"unpriced"`
		} `json:"total"`
	}
	if err := json.Unmarshal(data, &usage); err != nil {
		t.Fatal(err)
	}
	if math.Abs(usage.Total.Cost-want) > 1e-6 || len(usage.Total.Unpriced) > 0 {
		t.Errorf("tare's cost $%.6f (unpriced %v), want $%.6f: the long request at $6/$22.50, the rest at $3/$15", usage.Total.Cost, usage.Total.Unpriced, want)
	}
}
