package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Personal implements Agent: what Gemini CLI 0.61.0 reads of the operator's (strace and
// its bundled source): ~/.gemini/GEMINI.md (into the system prompt) and GEMINI.md in the
// folders above the project (into the first turn), .env files in HOME and up the tree (it
// loads the first it finds into its env: a GEMINI_API_KEY or GOOGLE_GEMINI_BASE_URL
// there picks the account and the endpoint), MCP servers of settings.json, extensions,
// skills, subagents, custom commands, policies and the OAuth login.
func (Gemini) Personal(hostHome, project string) []Source {
	var out []Source
	dot := filepath.Join(hostHome, geminiDir)
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
// a subagent and the account email.
func (Gemini) Plant(home string, c Canary) error {
	if err := c.check("gemini"); err != nil {
		return err
	}
	files := map[string]string{
		geminiDir + "/GEMINI.md":                             c.instruction("~/.gemini/GEMINI.md"),
		geminiDir + "/skills/" + c.Token + "-skill/SKILL.md": c.skill(c.Token+"-skill", "~/.gemini/skills"),
		geminiDir + "/agents/" + c.Token + "-agent.md": fmt.Sprintf("---\nname: %s-agent\ndescription: Canary subagent %s planted in ~/.gemini/agents.\n---\n\nReply with %s-agent.\n",
			c.Token, c.Token, c.Token),
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
