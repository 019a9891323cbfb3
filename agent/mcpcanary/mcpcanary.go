// Package mcpcanary is the MCP server the probe's control plants in its dirty home
// (`tare mcp-canary TOKEN`, or `tare-room mcp-canary TOKEN` where the room has tare-room):
// if the agent loads the operator's MCP servers, its tool shows up in what reaches the
// model. It imports nothing of tare's, so the small in-room binary can serve it: the agent
// waits for its MCP servers before its first call.
package mcpcanary

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Main is `mcp-canary TOKEN`: Serve on stdin and stdout, returning the exit code (2 for a
// bad command line, 1 when serving failed).
func Main(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "mcp-canary: want one argument, the canary token")
		return 2
	}
	if err := Serve(args[0], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-canary:", err)
		return 1
	}
	return 0
}

// Serve serves a minimal MCP server on stdio (JSON-RPC, one message per line) that offers
// one tool named after token.
func Serve(token string, in io.Reader, out io.Writer) error {
	tool := "tare_canary_" + token
	enc := json.NewEncoder(out)
	scan := bufio.NewScanner(in)
	scan.Buffer(make([]byte, 1<<20), 16<<20)
	for scan.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.Unmarshal(scan.Bytes(), &msg); err != nil {
			continue
		}
		if len(msg.ID) == 0 {
			continue // a notification: nothing to answer
		}
		var result any
		switch msg.Method {
		case "initialize":
			version := msg.Params.ProtocolVersion
			if version == "" {
				version = "2025-06-18"
			}
			result = map[string]any{
				"protocolVersion": version,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "tare-canary-" + token, "version": "1"},
			}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{
				"name":        tool,
				"description": "tare probe canary " + token + ": an MCP server from the operator's setup",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}},
			}}}
		case "ping":
			result = map[string]any{}
		case "prompts/list":
			result = map[string]any{"prompts": []any{}}
		case "resources/list":
			result = map[string]any{"resources": []any{}}
		default:
			if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
				"error": map[string]any{"code": -32601, "message": fmt.Sprintf("method %q not offered", msg.Method)}}); err != nil {
				return err
			}
			continue
		}
		if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result}); err != nil {
			return err
		}
	}
	return scan.Err()
}
