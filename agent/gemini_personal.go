package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Personal implements Agent: what Gemini CLI 0.61.0 reads of the operator's (strace and
// its bundled source): ~/.gemini/GEMINI.md (into the system prompt) and GEMINI.md in the
// folders above the project (into the first turn), .env files in HOME and up the tree (it
// loads the first it finds into its env: a GEMINI_API_KEY or GOOGLE_GEMINI_BASE_URL
// there picks the account and the endpoint), MCP servers of settings.json, extensions,
// skills, subagents, custom commands, policies and the OAuth login.
//
// The .env it loads is also an env file (geminiEnvFile): run with --skip-trust, as every
// tare room runs it, Gemini CLI loads all of that .env, trusted folder or not, into its
// own environment, which its shell tool inherits, and a GEMINI_SYSTEM_MD there swaps in
// the system prompt the file it names holds.
func (Gemini) Personal(hostHome, project string) []Source {
	var out []Source
	dot := filepath.Join(hostHome, geminiDir)
	if src, ok := geminiEnvFile(hostHome, project); ok {
		out = append(out, src)
	}
	out = instructionFiles(out, "", filepath.Join(dot, "GEMINI.md"))
	for _, dir := range ancestors(project) {
		out = instructionFiles(out, "ancestor of the project", filepath.Join(dir, "GEMINI.md"))
		for _, env := range []string{filepath.Join(dir, ".gemini", ".env"), filepath.Join(dir, ".env")} {
			out = fileSource(out, env, KindSettings, nil, "ancestor of the project: env variables Gemini CLI loads")
		}
	}
	out = fileSource(out, filepath.Join(dot, ".env"), KindSettings, nil, "env variables Gemini CLI loads")
	out = fileSource(out, filepath.Join(hostHome, ".env"), KindSettings, nil, "env variables Gemini CLI loads")
	var settings struct {
		MCP   map[string]json.RawMessage `json:"mcpServers"`
		Hooks map[string]json.RawMessage `json:"hooks"`
		Env   map[string]json.RawMessage `json:"env"`
	}
	for _, p := range []string{filepath.Join(dot, "settings.json"), "/etc/gemini-cli/settings.json", "/etc/gemini-cli/system-defaults.json"} {
		settings.MCP, settings.Hooks = nil, nil
		if !readJSON(p, &settings) {
			continue
		}
		if len(settings.MCP) > 0 {
			out = append(out, Source{Path: p, Kind: KindMCP, Fingerprints: keys(settings.MCP), Note: "mcpServers"})
		}
		out = append(out, Source{Path: p, Kind: KindSettings, Note: fmt.Sprintf("%d hook events", len(settings.Hooks))})
	}
	if entries, err := os.ReadDir(filepath.Join(dot, "extensions")); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, Source{Path: filepath.Join(dot, "extensions", e.Name()), Kind: KindPlugin,
					Fingerprints: named(e.Name(), ""), Note: "extension: its context files, MCP servers and commands"})
			}
		}
	}
	out = skills(out, filepath.Join(dot, "skills"), "")
	out = skills(out, filepath.Join(hostHome, ".agents", "skills"), "shared ~/.agents/skills")
	out = definitions(out, filepath.Join(dot, "agents"), KindAgent)
	out = fileSource(out, filepath.Join(dot, "commands"), KindCommand, nil, "custom commands (TOML)")
	out = fileSource(out, filepath.Join(dot, "policies"), KindSettings, nil, "policy rules")
	out = fileSource(out, filepath.Join(hostHome, geminiLogin), KindLogin, nil, "Google OAuth tokens")
	var accounts struct {
		Active string `json:"active"`
	}
	if p := filepath.Join(dot, "google_accounts.json"); readJSON(p, &accounts) && accounts.Active != "" {
		out = append(out, Source{Path: p, Kind: KindEmail, Fingerprints: []string{accounts.Active}, Note: "active Google account"})
	}
	return out
}

// Plant implements Agent: ~/.gemini/GEMINI.md, an MCP server in settings.json, a skill,
// a subagent, the account email and a ~/.env naming a system prompt.
func (Gemini) Plant(home string, c Canary) error {
	if err := c.check("gemini"); err != nil {
		return err
	}
	files := map[string]string{
		geminiDir + "/GEMINI.md":                             c.instruction("~/.gemini/GEMINI.md"),
		geminiDir + "/skills/" + c.Token + "-skill/SKILL.md": c.skill(c.Token+"-skill", "~/.gemini/skills"),
		geminiDir + "/agents/" + c.Token + "-agent.md": fmt.Sprintf("---\nname: %s-agent\ndescription: Canary subagent %s planted in ~/.gemini/agents.\n---\n\nReply with %s-agent.\n",
			c.Token, c.Token, c.Token),
		// An ancestor .env (~/.env too) whose GEMINI_SYSTEM_MD swaps in a canary system
		// prompt that keeps the skill and subagent lists of Gemini CLI's own. No trusted
		// folder: the room's --skip-trust is what makes Gemini CLI load all of it.
		".env":                   "GEMINI_SYSTEM_MD=~/" + geminiDir + "/system.md\n",
		geminiDir + "/system.md": fmt.Sprintf("# System\n\nCanary %s: this system prompt was named by GEMINI_SYSTEM_MD in ~/.env, planted by tare's probe.\n\n${AgentSkills}\n\n${SubAgents}\n", c.Token),
	}
	for rel, text := range files {
		if err := writeHome(home, rel, []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := writeJSON(home, geminiDir+"/google_accounts.json", map[string]any{"active": c.email(), "old": []string{}}); err != nil {
		return err
	}
	return writeJSON(home, geminiDir+"/settings.json", map[string]any{"mcpServers": map[string]any{c.mcpName(): c.mcpServer()}})
}

// geminiEnvFile is the .env Gemini CLI 0.61.0 loads for a run in project (findEnvFile in
// its bundle: the first of .gemini/.env and .env in the project and each folder above it,
// then ~/.gemini/.env and ~/.env), as a Source of kind env file when it is the operator's
// (not the project's own) and sets GEMINI_SYSTEM_MD: its fingerprints are the lines of the
// system prompt that names, which reach the model in place of Gemini CLI's own. Its
// variables' values are never fingerprints: they may be secrets.
func geminiEnvFile(hostHome, project string) (Source, bool) {
	var candidates []string
	own := 0 // how many candidates are the project's own
	if project != "" {
		for _, dir := range append([]string{project}, ancestors(project)...) {
			candidates = append(candidates, filepath.Join(dir, geminiDir, ".env"), filepath.Join(dir, ".env"))
		}
		own = 2
	}
	candidates = append(candidates, filepath.Join(hostHome, geminiDir, ".env"), filepath.Join(hostHome, ".env"))
	found := ""
	for i, p := range candidates {
		if isFile(p) {
			if i < own {
				return Source{}, false // the project's own: the workspace, not the operator's
			}
			found = p
			break
		}
	}
	data, err := os.ReadFile(found)
	if found == "" || err != nil {
		return Source{}, false
	}
	prompt := geminiSystemMD(dotenv(data)["GEMINI_SYSTEM_MD"], hostHome, project)
	if prompt == "" {
		return Source{}, false
	}
	src, ok := instructions(prompt, "")
	if !ok {
		return Source{}, false
	}
	src.Path, src.Kind = found, KindEnvFile
	src.Note = "GEMINI_SYSTEM_MD names " + prompt + ": Gemini CLI's system prompt; every variable reaches its shell tool"
	return src, true
}

// geminiSystemMD is the file a GEMINI_SYSTEM_MD value names, as Gemini CLI resolves it
// (resolvePathFromEnv): "1" or "true" is .gemini/system.md in the cwd, "0" or "false"
// none, ~/ the home, a relative path below the cwd.
func geminiSystemMD(v, hostHome, cwd string) string {
	v = strings.TrimSpace(v)
	switch strings.ToLower(v) {
	case "", "0", "false":
		return ""
	case "1", "true":
		return filepath.Join(cwd, geminiDir, "system.md")
	}
	if v == "~" || strings.HasPrefix(v, "~/") {
		return filepath.Join(hostHome, strings.TrimPrefix(v, "~"))
	}
	if !filepath.IsAbs(v) {
		return filepath.Join(cwd, v)
	}
	return filepath.Clean(v)
}

// dotenv reads the KEY=VALUE lines of a .env file as dotenv does for the cases that name
// a path: "export " before the key, quotes around the value, # comments.
func dotenv(data []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v = strings.TrimSpace(v)
		if q := v[:min(len(v), 1)]; q == `"` || q == "'" {
			if end := strings.Index(v[1:], q); end >= 0 {
				v = v[1 : end+1]
			}
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}
