package prices

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"tare/capsule"
)

// bundledData is genai-prices' prices/data.json at commit 47df840a (2026-08-21); see README.md.
//
//go:embed genai-prices-data.json
var bundledData []byte

// correctionData is where tare disagrees with the bundled database, each with the provider's
// list price it comes from (README.md says which and why).
//
//go:embed tare-corrections.json
var correctionData []byte

// Snapshot names the bundled database, for show.
const Snapshot = "genai-prices data.json at 47df840a (2026-08-21)"

// Sources of a model's price, as show names them.
const (
	SourceBundled    = "bundled"
	SourceCorrection = "tare's correction"
)

// DefaultURL is where `tare prices update` reads genai-prices' latest data.json by default.
const DefaultURL = "https://raw.githubusercontent.com/pydantic/genai-prices/main/prices/data.json"

var bundled = sync.OnceValues(func() ([]provider, error) { return parseGenai(bundledData, SourceBundled) })
var corrections = sync.OnceValues(func() ([]provider, error) { return parseGenai(correctionData, SourceCorrection) })

// OverrideFile is the operator's price file: prices.json beside config.toml.
func OverrideFile(configFile string) string {
	return filepath.Join(filepath.Dir(configFile), "prices.json")
}

// Load is the bundled table, under tare's corrections, under the override file at path when
// it exists. A bad override file is an error naming it: prices are never read from half a file.
func Load(path string) (*Table, error) {
	b, err := bundled()
	if err != nil {
		return nil, fmt.Errorf("the bundled price table: %v", err) // a build error; tests catch it
	}
	c, err := corrections()
	if err != nil {
		return nil, fmt.Errorf("tare's price corrections: %v", err)
	}
	t := &Table{layers: [][]provider{c, b}}
	if path == "" {
		return t, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("prices %s: %v", path, err)
	}
	o, err := parseGenai(data, path)
	if err != nil {
		return nil, fmt.Errorf("prices %s: %v; fix: tare prices update FILE|URL, or remove the file to use the bundled table", path, err)
	}
	t.layers = append([][]provider{o}, t.layers...)
	return t, nil
}

// Update reads a price file from src (an http(s) URL or a local file) in genai-prices'
// data.json format or LiteLLM's model price JSON, and writes it, in genai-prices' format, to
// the override file path. Nothing is written unless the whole file was read and understood,
// so a bad source keeps the old table. It returns the source's format and its model count.
func Update(ctx context.Context, src, path string) (format string, models int, err error) {
	data, err := fetch(ctx, src)
	if err != nil {
		return "", 0, err
	}
	out, format, models, err := convert(data)
	if err != nil {
		return "", 0, fmt.Errorf("%s: not a price file: %v; fix: give genai-prices' data.json (a JSON array of providers) or LiteLLM's model_prices_and_context_window.json", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", 0, fmt.Errorf("prices %s: %v", path, err)
	}
	if err := capsule.WriteFileAtomic(path, out, 0o644); err != nil {
		return "", 0, fmt.Errorf("prices %s: %v", path, err)
	}
	return format, models, nil
}

// convert checks a price file and returns it in genai-prices' format.
func convert(data []byte) ([]byte, string, int, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		layer, err := parseGenai(trimmed, "")
		if err != nil {
			return nil, "", 0, err
		}
		n := 0
		for _, p := range layer {
			n += len(p.models)
		}
		return append(trimmed, '\n'), "genai-prices", n, nil
	case len(trimmed) > 0 && trimmed[0] == '{':
		out, n, err := fromLiteLLM(trimmed)
		if err != nil {
			return nil, "", 0, fmt.Errorf("not LiteLLM's model price JSON: %v", err)
		}
		if _, err := parseGenai(out, ""); err != nil {
			return nil, "", 0, err
		}
		return append(out, '\n'), "LiteLLM", n, nil
	}
	return nil, "", 0, errors.New("not JSON")
}

// maxPriceFile bounds what update reads: LiteLLM's file is about 1.5 MB, genai-prices' 0.4 MB.
const maxPriceFile = 64 << 20

func fetch(ctx context.Context, src string) ([]byte, error) {
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %v; fix: give a price file's path or an http(s) URL", src, errors.Unwrap(err))
		}
		return data, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; fix: give an http(s) URL of a price file", src, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot reach it (%v); fix: check the address and the network, or download the file and give its path", src, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: the server answered %s; fix: check the address", src, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxPriceFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading it: %v; fix: try again, or download the file and give its path", src, err)
	}
	if len(data) > maxPriceFile {
		return nil, fmt.Errorf("%s: larger than %d MB; fix: give a price file", src, maxPriceFile>>20)
	}
	return data, nil
}
