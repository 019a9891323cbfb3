package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"tare/agent"
	"tare/engine/room"
	"tare/sandbox"
)

// The twin with a copy of the operator's setup shows which of their MCP servers the clean
// room kept out, by the tools the agent offers its model. It must not start those servers:
// their commands are the operator's code. So the twin's copy of each MCP config names the
// same servers, each one tare's canary (mcp-canary NAME) in place of its command, URL, env
// and headers: its tool reaches the twin's model under the server's own name.

// canaryServer is the in-room binary that serves mcp-canary: tare-room where the room has it
// (it starts in a fraction of tare's time, and the agent waits for it), else tare.
func canaryServer(p room.Plan) string {
	if p.HelperBin() != "" {
		return sandbox.HelperBin
	}
	return agent.TareBin
}

// stubMCP is the twin's copy of an MCP config at path (JSON with mcpServers objects, or
// Codex's TOML with [mcp_servers]): every server, wherever the file declares one, replaced
// by a canary of the same name served by server, and the names replaced. Anything else
// stays as it was.
func stubMCP(path string, data []byte, server string) ([]byte, []string, error) {
	var names []string
	if strings.HasSuffix(path, ".toml") {
		doc := map[string]any{}
		if _, err := toml.Decode(string(data), &doc); err != nil {
			return nil, nil, fmt.Errorf("%s: not valid TOML: %v", path, err)
		}
		names = stubServers(doc, "mcp_servers", func(name string) any {
			return map[string]any{"command": server, "args": []string{"mcp-canary", name}}
		})
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", path, err)
		}
		return buf.Bytes(), names, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	names = stubServers(doc, "mcpServers", func(name string) any {
		return map[string]any{"command": server, "args": []any{"mcp-canary", name}}
	})
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	return out, names, nil
}

// stubServers replaces, in every object below doc keyed key (the top level's, a Claude
// project's, a Codex profile's), each server with stub(name), and returns the names.
func stubServers(doc map[string]any, key string, stub func(name string) any) []string {
	var names []string
	for k, v := range doc {
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if k == key {
			for name := range obj {
				obj[name] = stub(name)
				names = append(names, name)
			}
			continue
		}
		names = append(names, stubServers(obj, key, stub)...)
	}
	sort.Strings(names)
	return names
}
