package modelserver

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultFinal is the text answered after the last scripted turn when the
// script sets no top-level final.
const DefaultFinal = "Done."

// Script is a parsed conversation script: what the model answers on each
// assistant turn of a conversation. See the package documentation for the
// TOML format.
type Script struct {
	// Name is the file name used in error messages and logs.
	Name string
	// Final is the text answered, with the end of the turn, once every
	// scripted turn has been served.
	Final string
	// Seed is the script's own seed for branch draws; Options.Seed
	// overrides it when non-zero.
	Seed int64
	// Turns are the scripted assistant turns, in order.
	Turns []Turn
}

// Turn is one scripted assistant turn: the plain step and, optionally,
// weighted branches that replace it.
type Turn struct {
	Step
	// Branches are drawn with probability P each; the remainder goes to the
	// plain step when it has content of its own, else to the last branch.
	Branches []Branch
	// Line is the line of the [[turn]] header in the script file.
	Line int
}

// Branch is one weighted alternative of a turn.
type Branch struct {
	Step
	// P is the probability of this branch, 0 < P <= 1.
	P float64
	// Line is the line of the [[turn.branch]] header.
	Line int
}

// Step is what the server does for one answer: wait, maybe fail, then
// answer with text and tool calls.
type Step struct {
	// Text is the assistant text; it precedes the tool calls in the message.
	Text string
	// Actions become parallel tool calls in one assistant message.
	Actions []Action
	// Error makes the answer fail (see ErrorKind); empty for none.
	Error ErrorKind
	// ErrorTimes is how many attempts fail before the step answers
	// normally; 0 means every attempt fails.
	ErrorTimes int
	// Delay is waited before answering (also before an error).
	Delay time.Duration
}

// ActionKind says which agent-neutral action an Action is.
type ActionKind string

// The action kinds of a script step.
const (
	// ActionShell runs a shell command with the agent's shell tool.
	ActionShell ActionKind = "shell"
	// ActionWrite writes a file with the agent's write tool (or a heredoc).
	ActionWrite ActionKind = "write"
	// ActionTool calls one exact tool by name with a given input.
	ActionTool ActionKind = "tool"
)

// Action is one agent-neutral tool call; the server maps it to the tools
// the request offers.
type Action struct {
	Kind ActionKind
	// Command is the shell command (ActionShell).
	Command string
	// Path and Content describe the file (ActionWrite); Path is relative to
	// the agent's working directory unless absolute.
	Path, Content string
	// Name and Input are the exact tool call (ActionTool).
	Name  string
	Input map[string]any
}

// ErrorKind is a provider failure a step can inject.
type ErrorKind string

// The error kinds a script may name.
const (
	// ErrQuota answers HTTP 429 with the provider's quota / rate-limit body.
	ErrQuota ErrorKind = "quota"
	// ErrOverloaded answers Anthropic 529 overloaded_error, OpenAI 503 server_error.
	ErrOverloaded ErrorKind = "overloaded"
	// ErrDrop starts the answer and cuts the connection midway.
	ErrDrop ErrorKind = "drop"
	// ErrLogin answers HTTP 401 with the provider's body for a login that expired or a key
	// that is no longer valid: Anthropic authentication_error, OpenAI invalid_api_key,
	// Gemini UNAUTHENTICATED.
	ErrLogin ErrorKind = "login"
)

var (
	topKeys    = []string{"final", "seed", "turn"}
	turnKeys   = []string{"text", "shell", "write", "tool", "error", "error_times", "delay", "branch"}
	branchKeys = []string{"p", "text", "shell", "write", "tool", "error", "error_times", "delay"}
	writeKeys  = []string{"path", "content"}
	toolKeys   = []string{"name", "input"}
)

// LoadScript reads and validates a TOML script file. Its errors are one
// line naming the file, the line when known, the key and the fix.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w; give the path of a TOML script file", path, err)
	}
	return ParseScript(data, path)
}

// ParseScript parses and validates a TOML script; name is used in errors
// (usually the file path).
func ParseScript(data []byte, name string) (*Script, error) {
	if name == "" {
		name = "script"
	}
	p := &scriptParser{name: name, lines: locateKeys(data)}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s; fix the TOML syntax", name, pe.Position.Line, oneLine(pe.Message))
		}
		return nil, fmt.Errorf("%s: %s; fix the TOML syntax", name, oneLine(err.Error()))
	}
	return p.script(raw)
}

// oneLine escapes the line breaks in an error's text: the TOML parser quotes the script's
// own characters, newlines included, and a refusal must stay one line.
func oneLine(s string) string { return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s) }

// scriptParser turns the generic TOML tree into a Script, checking every key
// itself so that errors can name the line and the fix.
type scriptParser struct {
	name  string
	lines map[string]int
}

// errorf formats one validation problem at a TOML path
// ("turn[2].branch[1].p"), prefixed with the file and, when known, the line.
func (p *scriptParser) errorf(path, where, format string, args ...any) error {
	msg := oneLine(fmt.Sprintf(format, args...))
	if where != "" {
		msg = where + ": " + msg
	}
	if line := p.lineOf(path); line > 0 {
		return fmt.Errorf("%s:%d: %s", p.name, line, msg)
	}
	return fmt.Errorf("%s: %s", p.name, msg)
}

// lineOf finds the line of a path, walking up to its parents when the path
// itself was not seen (keys inside inline tables, array elements).
func (p *scriptParser) lineOf(path string) int {
	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

func (p *scriptParser) unknownKeys(m map[string]any, allowed []string, path, where string) error {
	var bad []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	// Report the first unknown key in file order.
	sort.Slice(bad, func(i, j int) bool {
		li, lj := p.lineOf(join(path, bad[i])), p.lineOf(join(path, bad[j]))
		if li != lj {
			return li < lj
		}
		return bad[i] < bad[j]
	})
	k := bad[0]
	return p.errorf(join(path, k), where, "unknown key %q; use one of %s", k, strings.Join(allowed, ", "))
}

func (p *scriptParser) script(raw map[string]any) (*Script, error) {
	s := &Script{Name: p.name, Final: DefaultFinal}
	if err := p.unknownKeys(raw, topKeys, "", ""); err != nil {
		return nil, err
	}
	if v, ok := raw["final"]; ok {
		str, ok := v.(string)
		if !ok || strings.TrimSpace(str) == "" {
			return nil, p.errorf("final", "", "key \"final\" must be a non-empty string, like final = \"All done.\"")
		}
		s.Final = str
	}
	if v, ok := raw["seed"]; ok {
		n, ok := v.(int64)
		if !ok {
			return nil, p.errorf("seed", "", "key \"seed\" must be an integer, like seed = 42")
		}
		s.Seed = n
	}
	turns, err := p.tables(raw["turn"], "turn", "")
	if err != nil {
		return nil, err
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("%s: no [[turn]] found; add at least one [[turn]] with text or an action", p.name)
	}
	for i, tm := range turns {
		t, err := p.turn(tm, i+1)
		if err != nil {
			return nil, err
		}
		s.Turns = append(s.Turns, t)
	}
	return s, nil
}

// tables accepts an array of tables ([[x]] or x = [{...}]) or one table.
func (p *scriptParser) tables(v any, path, where string) ([]map[string]any, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return []map[string]any{t}, nil
	case []map[string]any:
		return t, nil
	case []any:
		out := make([]map[string]any, 0, len(t))
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, p.errorf(path, where, "key %q must hold tables, got %s", lastKey(path), tomlType(e))
			}
			out = append(out, m)
		}
		return out, nil
	default:
		return nil, p.errorf(path, where, "key %q must be a table or [[%s]] tables, got %s", lastKey(path), lastKey(path), tomlType(v))
	}
}

func (p *scriptParser) turn(m map[string]any, n int) (Turn, error) {
	path := fmt.Sprintf("turn[%d]", n)
	where := fmt.Sprintf("turn %d", n)
	t := Turn{Line: p.lines[path]}
	if err := p.unknownKeys(m, turnKeys, path, where); err != nil {
		return t, err
	}
	step, err := p.step(m, path, where)
	if err != nil {
		return t, err
	}
	t.Step = step
	branches, err := p.tables(m["branch"], path+".branch", where)
	if err != nil {
		return t, err
	}
	sum := 0.0
	for i, bm := range branches {
		bpath := fmt.Sprintf("%s.branch[%d]", path, i+1)
		bwhere := fmt.Sprintf("%s, branch %d", where, i+1)
		if err := p.unknownKeys(bm, branchKeys, bpath, bwhere); err != nil {
			return t, err
		}
		b := Branch{Line: p.lines[bpath]}
		pv, ok := bm["p"]
		if !ok {
			return t, p.errorf(bpath, bwhere, "key \"p\" is missing; give the branch a probability, like p = 0.5")
		}
		switch x := pv.(type) {
		case float64:
			b.P = x
		case int64:
			b.P = float64(x)
		default:
			return t, p.errorf(bpath+".p", bwhere, "key \"p\" must be a number, got %s", tomlType(pv))
		}
		if math.IsNaN(b.P) || b.P <= 0 || b.P > 1 {
			return t, p.errorf(bpath+".p", bwhere, "key \"p\" = %v is out of range; use a probability with 0 < p <= 1", b.P)
		}
		sum += b.P
		if b.Step, err = p.step(bm, bpath, bwhere); err != nil {
			return t, err
		}
		if b.Step.empty() && b.Delay == 0 {
			return t, p.errorf(bpath, bwhere, "the branch has nothing to do; give it text, shell, write, tool, error or delay")
		}
		// A branch without text and actions answers like the plain turn.
		if b.Text == "" && len(b.Actions) == 0 {
			b.Text, b.Actions = t.Text, t.Actions
		}
		if b.Delay == 0 {
			b.Delay = t.Delay
		}
		if !b.Step.answers() {
			return t, p.errorf(bpath, bwhere, "the branch never answers: neither it nor its turn has text or an action to answer with once its error_times are spent; add text or an action, or set error_times = 0 to fail always")
		}
		t.Branches = append(t.Branches, b)
	}
	if sum > 1+1e-9 {
		return t, p.errorf(path+".branch[1]", where, "branch probabilities sum to %v; make them sum to at most 1", sum)
	}
	if len(t.Branches) == 0 && t.Step.empty() {
		return t, p.errorf(path, where, "the turn has nothing to do; give it text, shell, write, tool, error or branch")
	}
	if t.Step.Error != "" || t.Text != "" || len(t.Actions) > 0 {
		if !t.Step.answers() {
			return t, p.errorf(path, where, "the turn never answers: it has no text or action once its error is spent; add text or an action, or set error_times = 0 to fail always")
		}
	}
	return t, nil
}

func (p *scriptParser) step(m map[string]any, path, where string) (Step, error) {
	var s Step
	if v, ok := m["text"]; ok {
		str, ok := v.(string)
		if !ok {
			return s, p.errorf(path+".text", where, "key \"text\" must be a string, got %s", tomlType(v))
		}
		s.Text = str
	}
	if v, ok := m["shell"]; ok {
		cmds, err := p.strings(v, path+".shell", where)
		if err != nil {
			return s, err
		}
		for _, c := range cmds {
			s.Actions = append(s.Actions, Action{Kind: ActionShell, Command: c})
		}
	}
	writes, err := p.tables(m["write"], path+".write", where)
	if err != nil {
		return s, err
	}
	for i, wm := range writes {
		wpath := fmt.Sprintf("%s.write[%d]", path, i+1)
		if err := p.unknownKeys(wm, writeKeys, wpath, where+", write"); err != nil {
			return s, err
		}
		fp, ok := wm["path"].(string)
		if !ok || strings.TrimSpace(fp) == "" {
			return s, p.errorf(wpath, where, "write needs path = \"some/file\" (a non-empty string)")
		}
		content, ok := wm["content"].(string)
		if _, present := wm["content"]; present && !ok {
			return s, p.errorf(wpath+".content", where, "write content must be a string, got %s", tomlType(wm["content"]))
		}
		s.Actions = append(s.Actions, Action{Kind: ActionWrite, Path: fp, Content: content})
	}
	tools, err := p.tables(m["tool"], path+".tool", where)
	if err != nil {
		return s, err
	}
	for i, tm := range tools {
		tpath := fmt.Sprintf("%s.tool[%d]", path, i+1)
		if err := p.unknownKeys(tm, toolKeys, tpath, where+", tool"); err != nil {
			return s, err
		}
		name, ok := tm["name"].(string)
		if !ok || strings.TrimSpace(name) == "" {
			return s, p.errorf(tpath, where, "tool needs name = \"ToolName\" (the exact tool name the agent offers)")
		}
		input := map[string]any{}
		if v, present := tm["input"]; present {
			in, ok := v.(map[string]any)
			if !ok {
				return s, p.errorf(tpath+".input", where, "tool input must be a table, like input = { command = \"ls\" }, got %s", tomlType(v))
			}
			input = in
		}
		s.Actions = append(s.Actions, Action{Kind: ActionTool, Name: name, Input: input})
	}
	if v, ok := m["error"]; ok {
		str, _ := v.(string)
		switch k := ErrorKind(str); k {
		case ErrQuota, ErrOverloaded, ErrDrop, ErrLogin:
			s.Error = k
		default:
			return s, p.errorf(path+".error", where, "unknown error kind %q; use error = \"quota\", \"overloaded\", \"drop\" or \"login\"", fmt.Sprint(v))
		}
	}
	if v, ok := m["error_times"]; ok {
		n, ok := v.(int64)
		if !ok || n < 0 {
			return s, p.errorf(path+".error_times", where, "key \"error_times\" must be an integer >= 0 (0 = fail every attempt), got %v", v)
		}
		if s.Error == "" {
			return s, p.errorf(path+".error_times", where, "key \"error_times\" needs an error; add error = \"quota\", \"overloaded\", \"drop\" or \"login\"")
		}
		s.ErrorTimes = int(n)
	}
	if v, ok := m["delay"]; ok {
		str, ok := v.(string)
		d, err := time.ParseDuration(str)
		if !ok || err != nil || d < 0 || d > 10*time.Minute {
			return s, p.errorf(path+".delay", where, "key \"delay\" must be a duration string between 0 and 10m, like delay = \"300ms\", got %v", v)
		}
		s.Delay = d
	}
	return s, nil
}

func (p *scriptParser) strings(v any, path, where string) ([]string, error) {
	var out []string
	switch t := v.(type) {
	case string:
		out = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, p.errorf(path, where, "key %q must be a string or an array of strings, found %s in the array", lastKey(path), tomlType(e))
			}
			out = append(out, s)
		}
	default:
		return nil, p.errorf(path, where, "key %q must be a string or an array of strings, got %s", lastKey(path), tomlType(v))
	}
	for _, s := range out {
		if strings.TrimSpace(s) == "" {
			return nil, p.errorf(path, where, "key %q has an empty command; write the command, like shell = \"ls -la\"", lastKey(path))
		}
	}
	return out, nil
}

// empty reports whether the step has no text, no action and no error.
func (s Step) empty() bool {
	return s.Text == "" && len(s.Actions) == 0 && s.Error == ""
}

// answers reports whether the step ever produces an answer or fails on
// purpose forever (error_times = 0).
func (s Step) answers() bool {
	if s.Error != "" && s.ErrorTimes == 0 {
		return true
	}
	return s.Text != "" || len(s.Actions) > 0
}

// pick returns the outcome for a uniform draw u in [0,1): 0 for the plain
// step, i for Branches[i-1].
func (t *Turn) pick(u float64) (int, Step) {
	if len(t.Branches) == 0 {
		return 0, t.Step
	}
	acc := 0.0
	for i, b := range t.Branches {
		acc += b.P
		if u < acc {
			return i + 1, b.Step
		}
	}
	if !t.Step.empty() {
		return 0, t.Step
	}
	n := len(t.Branches)
	return n, t.Branches[n-1].Step
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	case time.Time:
		return "a date-time"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}

// scriptBase is the file name shown in logs.
func scriptBase(s *Script) string {
	if s == nil {
		return ""
	}
	return filepath.Base(s.Name)
}
