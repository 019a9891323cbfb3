package modelserver

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// toolCall is one tool call of an answer, already mapped to a tool the
// request offers.
type toolCall struct {
	name string
	// args is the JSON object of arguments (function tools).
	args json.RawMessage
	// custom marks a Responses free-form tool; input is its raw text.
	custom bool
	input  string
}

// toolSet indexes the offered tools by name.
type toolSet map[string]offeredTool

func newToolSet(tools []offeredTool) toolSet {
	s := make(toolSet, len(tools))
	for _, t := range tools {
		s[t.name] = t
	}
	return s
}

func (s toolSet) names() string {
	var n []string
	for k := range s {
		n = append(n, k)
	}
	if len(n) == 0 {
		return "none"
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

// mapActions turns agent-neutral actions into the tool calls the request's
// tools accept. cwd is the agent's working directory (for absolute paths).
func mapActions(actions []Action, tools []offeredTool, cwd string) ([]toolCall, error) {
	set := newToolSet(tools)
	var calls []toolCall
	for _, a := range actions {
		var (
			c   toolCall
			err error
		)
		switch a.Kind {
		case ActionShell:
			c, err = set.shell(a.Command)
		case ActionWrite:
			c, err = set.write(a.Path, a.Content, cwd)
		case ActionTool:
			c, err = set.exact(a.Name, a.Input)
		default:
			err = fmt.Errorf("unknown action kind %q", a.Kind)
		}
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func jsonCall(name string, args map[string]any) toolCall {
	b, err := json.Marshal(args)
	if err != nil {
		b = []byte("{}")
	}
	return toolCall{name: name, args: b}
}

// shell maps a command to the agent's shell tool: Claude Bash{command},
// pi bash{command}, Codex exec_command{cmd} (or shell_command / shell),
// Gemini CLI run_shell_command{command}, else any function tool with a
// command or cmd parameter.
func (s toolSet) shell(cmd string) (toolCall, error) {
	for _, name := range []string{"Bash", "bash", "exec_command", "shell_command", "shell", "run_shell_command"} {
		t, ok := s[name]
		if !ok || t.kind != "function" {
			continue
		}
		switch name {
		case "exec_command":
			return jsonCall(name, map[string]any{"cmd": cmd}), nil
		default:
			return jsonCall(name, map[string]any{"command": commandValue(t.props["command"], cmd)}), nil
		}
	}
	var names []string
	for n := range s {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t := s[n]
		if t.kind != "function" {
			continue
		}
		for _, p := range []string{"command", "cmd"} {
			if schema, ok := t.props[p]; ok {
				return jsonCall(n, map[string]any{p: commandValue(schema, cmd)}), nil
			}
		}
	}
	return toolCall{}, fmt.Errorf("shell action %q: the request offers no shell tool (offered: %s); use [[turn.tool]] with one of the offered tools", cmd, s.names())
}

// commandValue gives the command as a string, or as an argv
// (bash -lc CMD) when the tool's schema wants an array.
func commandValue(schema any, cmd string) any {
	if m, ok := schema.(map[string]any); ok && m["type"] == "array" {
		return []string{"bash", "-lc", cmd}
	}
	return cmd
}

// write maps a file write to the agent's write tool: Claude
// Write{file_path absolute below cwd, content}, Gemini CLI
// write_file{file_path, content}, pi write{path, content}; an agent without
// one (Codex) gets a shell command writing the file.
func (s toolSet) write(p, content, cwd string) (toolCall, error) {
	for _, name := range []string{"Write", "write", "write_file"} {
		t, ok := s[name]
		if !ok || t.kind != "function" {
			continue
		}
		if _, ok := t.props["file_path"]; ok {
			return jsonCall(name, map[string]any{"file_path": absUnder(cwd, p), "content": content}), nil
		}
		return jsonCall(name, map[string]any{"path": p, "content": content}), nil
	}
	c, err := s.shell(writeCommand(p, content))
	if err != nil {
		return toolCall{}, fmt.Errorf("write action %q: the request offers no write or shell tool (offered: %s); use [[turn.tool]] with one of the offered tools", p, s.names())
	}
	return c, nil
}

// exact calls the named tool with the given input as is.
func (s toolSet) exact(name string, input map[string]any) (toolCall, error) {
	if t, ok := s[name]; ok && t.kind == "custom" {
		text, ok := input["input"].(string)
		if !ok {
			b, _ := json.Marshal(input)
			text = string(b)
		}
		return toolCall{name: name, custom: true, input: text}, nil
	}
	return jsonCall(name, input), nil
}

func absUnder(cwd, p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(cwd, p)
}

// writeCommand is a shell command creating the file with exactly content:
// a quoted heredoc when content ends with a newline (readable in
// transcripts), printf otherwise (a heredoc always adds one).
func writeCommand(p, content string) string {
	var b strings.Builder
	if dir := path.Dir(p); dir != "." && dir != "/" {
		b.WriteString("mkdir -p " + shellQuote(dir) + " && ")
	}
	if content == "" || !strings.HasSuffix(content, "\n") {
		b.WriteString("printf '%s' " + shellQuote(content) + " > " + shellQuote(p))
		return b.String()
	}
	delim := "TARE_EOF"
	for i := 2; strings.Contains("\n"+content, "\n"+delim+"\n"); i++ {
		delim = fmt.Sprintf("TARE_EOF_%d", i)
	}
	b.WriteString("cat > " + shellQuote(p) + " <<'" + delim + "'\n" + content + delim)
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
