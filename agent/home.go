package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// tilde writes rel (relative to HOME) the way people read it: "~/.codex/config.toml".
func tilde(rel string) string { return "~/" + rel }

// inRoom is the absolute in-room path of rel (relative to HOME).
func inRoom(rel string) string { return path.Join(Home, rel) }

// baseFile reads rel from the base home, if there is one and it has the file.
func baseFile(base, rel string) ([]byte, error) {
	if base == "" {
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join(base, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// jsonFile is a JSON config file at rel with overlay merged over the base
// home's copy (overlay wins; objects merge key by key).
func jsonFile(base, rel string, overlay map[string]any, mode fs.FileMode) (File, error) {
	doc := map[string]any{}
	old, err := baseFile(base, rel)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", rel, err)
	}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil {
			return File{}, fmt.Errorf("%s in %s: not a JSON object: %w", rel, base, err)
		}
	}
	merge(doc, overlay)
	data, err := marshalJSON(doc)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", rel, err)
	}
	return File{Path: inRoom(rel), Data: data, Mode: mode}, nil
}

// tomlFile is jsonFile for TOML.
func tomlFile(base, rel string, overlay map[string]any, mode fs.FileMode) (File, error) {
	doc := map[string]any{}
	old, err := baseFile(base, rel)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", rel, err)
	}
	if _, err := toml.Decode(string(old), &doc); err != nil {
		return File{}, fmt.Errorf("%s in %s: not valid TOML: %w", rel, base, err)
	}
	merge(doc, overlay)
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		return File{}, fmt.Errorf("%s: %w", rel, err)
	}
	return File{Path: inRoom(rel), Data: buf.Bytes(), Mode: mode}, nil
}

// dropKey is the type of drop.
type dropKey struct{}

// drop, as an overlay's value, removes the key from the base home's file: how an inert room
// takes out what would run a command.
var drop any = dropKey{}

// marshalJSON is indented JSON with a final newline, "<>&" left as they are
// (hook commands hold shell redirections).
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// merge copies src into dst, merging nested objects.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if v == drop {
			delete(dst, k)
			continue
		}
		sub, ok := v.(map[string]any)
		old, isMap := dst[k].(map[string]any)
		if ok && isMap {
			merge(old, sub)
			continue
		}
		dst[k] = v
	}
}

// proxyEnv is the env that sends a CLI's HTTPS through the room's proxy.
func proxyEnv(env map[string]string, proxy string) {
	if proxy == "" {
		return
	}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		env[k] = proxy
	}
	env["NO_PROXY"] = "127.0.0.1,localhost"
	env["no_proxy"] = env["NO_PROXY"]
}

// declareReal settles the hosts the room's proxy lets through for the real provider: the
// ones the agent needs (s.Allow), narrowed to o.AllowOnly when that is set, and adds the
// reading's line naming them. The room's proxy allows exactly s.Allow, so the line and the
// proxy cannot disagree.
func (s *Setup) declareReal(name string, o RoomOptions) error {
	if o.AllowOnly != nil {
		var kept []string
		for _, h := range s.Allow {
			if slices.Contains(o.AllowOnly, h) {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			return fmt.Errorf("%s: network.allow in tare's config leaves out every host %s needs (%s); fix: add them to network.allow or remove the key",
				name, name, strings.Join(s.Allow, ", "))
		}
		s.Allow = kept
	}
	if o.Proxy != "" {
		s.Declared = append(s.Declared, fmt.Sprintf("model: real provider through proxy %s (allowed: %s)", o.Proxy, strings.Join(s.Allow, ", ")))
	} else {
		s.Declared = append(s.Declared, "model: real provider over the room's network")
	}
	return nil
}

// apiBase is the provider base URL with /v1 for OpenAI-style clients.
func apiBase(base string) string { return strings.TrimRight(base, "/") + "/v1" }
