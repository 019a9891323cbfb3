package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// A login file holds more than the one login a room needs: Claude Code keeps remote MCP
// servers' OAuth tokens beside its own login in .credentials.json, pi keeps a key or login
// per provider in auth.json, Codex's auth.json may hold an agent identity or Bedrock keys
// beside the ChatGPT tokens. A room's copy is rewritten to the agent's own login for the
// provider in use, field by field from an allowlist: what tare does not know to be that
// login never reaches the room.

// loginShape is what a login copy keeps: each key names a field, a nil value keeps the
// field's value if it is a scalar (or a list of scalars), a shape keeps the object's fields
// it names, recursively. Anything else in the file is left out.
type loginShape map[string]loginShape

// leaf marks a field kept as a scalar value.
var leaf loginShape

// Login is a login copy a room holds, for the probe to read back: the room path of the file,
// its host source, which login it is (What: "claudeAiOauth", pi's provider entry), the keys
// of that login kept (dotted paths of the fields) and the reading's declared line naming them.
type Login struct {
	Path   string
	Source string
	What   string
	Keys   []string
	Line   string
}

// loginSpec is one agent's login file: where it lives below HOME, how to log in on the host,
// and which entry of it is the room's login.
type loginSpec struct {
	rel, fix string
	// pick returns the shape of the one login in doc (parsed from the file), its name, and
	// the keys of which the copy must hold one to hold that login at all.
	pick func(doc map[string]any) (shape loginShape, what string, need []string)
	// extra are fields written into the copy beside the kept ones (Codex's OPENAI_API_KEY,
	// which it wants present, as null for a ChatGPT login).
	extra func(doc map[string]any) map[string]any
}

// loginCopy reads the agent's login file from the operator's HOME and returns the room's
// copy of it, rewritten to the one login spec picks, with the reading's declared line and
// the Login record the probe reads it back by. A file that is not a JSON object or holds no
// such login is refused, naming the file and the fix.
func loginCopy(name, hostHome string, spec loginSpec) (File, string, Login, error) {
	if hostHome == "" {
		return File{}, "", Login{}, fmt.Errorf("%s: a login copy needs the operator's HOME (RoomOptions.HostHome)", name)
	}
	src := filepath.Join(hostHome, filepath.FromSlash(spec.rel))
	data, err := os.ReadFile(src)
	if err != nil {
		return File{}, "", Login{}, fmt.Errorf("%s: login copy: %w; fix: %s", name, err, spec.fix)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
		why := "not a JSON object"
		if err != nil {
			why += ": " + err.Error()
		}
		return File{}, "", Login{}, fmt.Errorf("%s: login copy %s: %s; fix: %s", name, src, why, spec.fix)
	}
	shape, what, need := spec.pick(doc)
	kept := keepShape(doc, shape)
	keys := LoginKeys(kept)
	if !slices.ContainsFunc(need, func(k string) bool { return slices.Contains(keys, k) }) {
		return File{}, "", Login{}, fmt.Errorf("%s: login copy %s: holds no %s login; fix: %s", name, src, what, spec.fix)
	}
	if spec.extra != nil {
		for k, v := range spec.extra(doc) {
			kept[k] = v
		}
	}
	out, err := marshalJSON(kept)
	if err != nil {
		return File{}, "", Login{}, fmt.Errorf("%s: login copy: %w", name, err)
	}
	line := fmt.Sprintf("login copy: %s (0600), only %s: %s", tilde(spec.rel), what, strings.Join(keys, ", "))
	return File{Path: inRoom(spec.rel), Data: out, Mode: 0o600}, line, Login{Path: inRoom(spec.rel), Source: src, What: what, Keys: keys, Line: line}, nil
}

// keepShape is the part of doc that shape names; nil for none.
func keepShape(doc map[string]any, shape loginShape) map[string]any {
	out := map[string]any{}
	for k, sub := range shape {
		v, ok := doc[k]
		if !ok {
			continue
		}
		if sub == nil {
			if scalar(v) {
				out[k] = v
			}
			continue
		}
		if obj, ok := v.(map[string]any); ok {
			if inner := keepShape(obj, sub); len(inner) > 0 {
				out[k] = inner
			}
		}
	}
	return out
}

// scalar reports whether v is a JSON string, number, boolean or null, or a list of these.
func scalar(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return false
	case []any:
		for _, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				return false
			}
		}
	}
	return true
}

// LoginKeys are the dotted paths of every value in a parsed login file (a list is one value):
// what the probe names of a login copy, and what a copy's declared line names as kept.
func LoginKeys(doc map[string]any) []string {
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			if v != nil {
				out = append(out, prefix+k)
			}
		}
	}
	walk("", doc)
	sort.Strings(out)
	return out
}

// googleOAuth are the fields of a Google OAuth login file (google-auth-library's
// Credentials), Gemini CLI's oauth_creds.json and agy's token file.
var googleOAuth = loginShape{"access_token": leaf, "refresh_token": leaf, "scope": leaf, "token_type": leaf, "id_token": leaf, "expiry_date": leaf}

// googleLogin is a login file that is one Google OAuth login.
func googleLogin(rel, fix string) loginSpec {
	return loginSpec{rel: rel, fix: fix, pick: func(map[string]any) (loginShape, string, []string) {
		return googleOAuth, "Google OAuth", []string{"access_token", "refresh_token"}
	}}
}

// claudeLoginSpec keeps claudeAiOauth, the fields Claude Code 2.1 writes there, and nothing
// else of .credentials.json (mcpOAuth holds remote MCP servers' tokens).
var claudeLoginSpec = loginSpec{
	rel: claudeLogin, fix: "log in on the host with `claude` then /login, or give an API key",
	pick: func(map[string]any) (loginShape, string, []string) {
		return loginShape{"claudeAiOauth": {"accessToken": leaf, "refreshToken": leaf, "expiresAt": leaf, "scopes": leaf,
				"subscriptionType": leaf, "rateLimitTier": leaf, "clientId": leaf}}, "claudeAiOauth",
			[]string{"claudeAiOauth.accessToken", "claudeAiOauth.refreshToken"}
	},
}

// piLoginSpec keeps the entry of provider in pi's auth.json: an API key or an OAuth login,
// the fields pi 0.73 writes (accountId: a ChatGPT login's). For openai, a ChatGPT
// subscription login (openai-codex) is taken where the file has one.
func piLoginSpec(provider string) loginSpec {
	return loginSpec{
		rel: piLogin, fix: "log in on the host with `pi` then /login (provider " + provider + "), or give an API key",
		pick: func(doc map[string]any) (loginShape, string, []string) {
			entry := provider
			if _, ok := doc["openai-codex"].(map[string]any); ok && provider == "openai" {
				entry = "openai-codex"
			}
			return loginShape{entry: {"type": leaf, "key": leaf, "access": leaf, "refresh": leaf, "expires": leaf, "accountId": leaf}},
				entry, []string{entry + ".key", entry + ".access", entry + ".refresh"}
		},
	}
}

// codexLoginSpec keeps Codex's one login: the ChatGPT tokens when the file holds them and
// does not say it is an API-key login, else the API key; never an agent identity, a personal
// access token or Bedrock keys.
var codexLoginSpec = loginSpec{
	rel: codexLogin, fix: "log in on the host with `codex login`, or give an API key",
	pick: func(doc map[string]any) (loginShape, string, []string) {
		if _, tokens := doc["tokens"].(map[string]any); tokens && doc["auth_mode"] != "apikey" {
			return loginShape{"auth_mode": leaf, "last_refresh": leaf,
					"tokens": {"id_token": leaf, "access_token": leaf, "refresh_token": leaf, "account_id": leaf}}, "ChatGPT",
				[]string{"tokens.access_token", "tokens.refresh_token"}
		}
		return loginShape{"auth_mode": leaf, "OPENAI_API_KEY": leaf}, "API-key", []string{"OPENAI_API_KEY"}
	},
	extra: func(doc map[string]any) map[string]any {
		if _, tokens := doc["tokens"].(map[string]any); tokens && doc["auth_mode"] != "apikey" {
			return map[string]any{"OPENAI_API_KEY": nil}
		}
		return nil
	},
}
