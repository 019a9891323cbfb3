package probe

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"tare/agent"
	"tare/modelserver"
)

// evidence is everything a probe observed in one room: what reached the model and what
// the room could see from inside.
type evidence struct {
	// text is every string value of every request body, one per line: what the model read.
	text string
	// tools are the tool names offered to the model.
	tools map[string]bool
	// requests counts the requests that reached the model.
	requests int
	// sight is what the in-room inspection saw.
	sight sight
	// raw are the requests as the model server recorded them.
	raw []modelserver.Request
}

// sight is the part of the in-room inspection the detectors read.
type sight struct {
	// env maps variable names seen in any process of the room to a value.
	env map[string]string
	// found lists host files seen in the room, as "room path = host path".
	found map[string]string
	// needles maps a searched string to the room files that hold it.
	needles map[string][]string
	// fds lists descriptors open in the room beyond 0, 1, 2 (the Go runtime's own excepted).
	fds []string
	// loopback reports whether the host's canary listener on 127.0.0.1 accepted a connection.
	loopback bool
	// interfaces lists network interfaces other than lo; routes counts routing entries.
	interfaces []string
	routes     int
	// kernel is what the room's kernel-side defences looked like from inside.
	kernel string
	// room is what the room shows of itself: secret files, host paths, a walk cut short.
	room roomSight
}

// subject is what the detectors look for: the operator's (or the planted home's) setup.
type subject struct {
	home, project string
	sources       []agent.Source
	// env names the variables the room is expected to have; any other is a leak.
	env map[string]bool
	// loopback is the host listener the room must not reach.
	loopback string
	// show turns a host path into the form a reading shows.
	show func(string) string
	// runtime is the host folder bound at the room's agent runtime folder ("" = none).
	runtime string
	// user is the operator's login name, watched for in the room ("" = none to watch).
	user string
}

// scanRequests builds the request half of the evidence from raw request bodies.
func scanRequests(bodies [][]byte) evidence {
	var b strings.Builder
	tools := map[string]bool{}
	for _, body := range bodies {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			b.Write(body)
			b.WriteByte('\n')
			continue
		}
		collectStrings(v, &b)
		collectTools(v, tools)
	}
	return evidence{text: b.String(), tools: tools, requests: len(bodies)}
}

// notText names request fields whose values are identifiers, not text the model reads as
// paths: Codex names its agent tree "/root", which would read as root's home folder.
var notText = map[string]bool{"agent_name": true}

func collectStrings(v any, b *strings.Builder) {
	switch x := v.(type) {
	case string:
		// Metadata arrives as JSON inside a string (x-codex-turn-metadata): read it as JSON.
		if strings.HasPrefix(x, "{") {
			var inner map[string]any
			if json.Unmarshal([]byte(x), &inner) == nil {
				collectStrings(inner, b)
				return
			}
		}
		b.WriteString(x)
		b.WriteByte('\n')
	case []any:
		for _, e := range x {
			collectStrings(e, b)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !notText[k] {
				collectStrings(x[k], b)
			}
		}
	}
}

// collectTools finds tool names in the three dialects: Anthropic tools[].name, Responses
// tools[].name (and namespaced tools[].tools[].name), Chat tools[].function.name.
func collectTools(v any, tools map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	list, _ := m["tools"].([]any)
	if decls, ok := m["functionDeclarations"].([]any); ok { // Gemini: tools[].functionDeclarations[]
		list = append(list, decls...)
	}
	for _, t := range list {
		tm, ok := t.(map[string]any)
		if !ok {
			continue
		}
		if name, ok := tm["name"].(string); ok {
			tools[name] = true
		}
		if fn, ok := tm["function"].(map[string]any); ok {
			if name, ok := fn["name"].(string); ok {
				tools[name] = true
			}
		}
		collectTools(tm, tools)
	}
}

// detect runs every detector over the evidence and returns what each one saw.
func detect(ev evidence, s subject) map[string][]Leak {
	out := map[string][]Leak{}
	add := func(det, what, source string) {
		out[det] = append(out[det], Leak{Detector: det, What: what, Source: source})
	}
	// Agents indent, wrap and re-space what they put in front of the model: a fingerprint
	// is looked for with every run of white space read as one space, on both sides.
	text := " " + strings.Join(strings.Fields(ev.text), " ") + " "
	for _, src := range s.sources {
		det := detectorOf[src.Kind]
		if det == "" {
			continue // MCP servers are seen as tools, below; settings and logins are declared
		}
		// The reading names the file and the kind, never the operator's text.
		for _, fp := range src.Fingerprints {
			if fp := strings.Join(strings.Fields(fp), " "); fp != "" && strings.Contains(text, fp) {
				what := whatReached[src.Kind]
				if src.Kind == agent.KindEnvFile {
					// The env detector's other finding is a variable in the room: name the
					// file whose variables the agent loaded, so the control says which.
					what = "variables of " + s.show(src.Path) + " took effect in the agent: " + what
				}
				add(det, what+" reached the model", s.show(src.Path))
				break
			}
			if det == DetEmail {
				if files := ev.sight.needles[fp]; len(files) > 0 {
					add(det, "the account email is in the room at "+strings.Join(files, ", "), s.show(src.Path))
					break
				}
			}
		}
	}
	for _, path := range []string{s.home, s.project} {
		if path == "" || path == "/" || path == "/work" {
			// "/work" is where every room puts the workspace: seeing it says nothing.
			continue
		}
		if mentions(ev.text, path) {
			what := "your home path"
			if path == s.project {
				what = "the project's host path"
			}
			add(DetHomePath, fmt.Sprintf("%s %s reached the model", what, path), "the room's cwd or HOME")
			break
		}
	}
	tools := make([]string, 0, len(ev.tools))
	for t := range ev.tools {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	// One rule for the control and the operator alike: an MCP tool is one the agent names
	// mcp__<server>__<tool> (Gemini CLI: mcp_<server>_<tool>), or one named after a server
	// the subject declares.
	for _, t := range tools {
		if _, server := mcpServerOf(t, s); !strings.HasPrefix(t, "mcp_") && server == "" {
			continue
		}
		add(DetMCP, fmt.Sprintf("tool %s reached the model", t), mcpSource(t, s))
	}
	names := make([]string, 0, len(ev.sight.env))
	for k := range ev.sight.env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !s.env[k] {
			add(DetEnv, fmt.Sprintf("variable %s is set in the room", k), "the caller's environment")
		}
	}
	for _, fd := range ev.sight.fds {
		add(DetFDs, "descriptor "+fd+" is open in the room", "a descriptor of the caller's")
	}
	rooms := make([]string, 0, len(ev.sight.found))
	for r := range ev.sight.found {
		rooms = append(rooms, r)
	}
	sort.Strings(rooms)
	for _, r := range rooms {
		add(DetHostFiles, fmt.Sprintf("host file visible in the room at %s", r), s.show(ev.sight.found[r]))
	}
	if ev.sight.loopback {
		add(DetLoopback, "a listener on the host's 127.0.0.1 accepted a connection from the room", s.loopback)
	}
	if len(ev.sight.interfaces) > 0 || ev.sight.routes > 0 {
		add(DetOtherHosts, fmt.Sprintf("the room has network interfaces %s and %d routes", strings.Join(ev.sight.interfaces, ", "), ev.sight.routes), "the host's network")
	}
	detectRoom(ev.sight.room, s, add)
	return out
}

// detectorOf maps a kind of personal file to the detector that looks for its fingerprints
// in what reached the model.
var detectorOf = map[agent.Kind]string{
	agent.KindInstructions: DetInstructions,
	agent.KindSkill:        DetSkills,
	agent.KindPlugin:       DetPlugins,
	agent.KindAgent:        DetPlugins,
	agent.KindCommand:      DetPlugins,
	agent.KindEmail:        DetEmail,
	agent.KindEnvFile:      DetEnv,
}

// whatReached says what of a personal file reached the model, by its kind: the reading
// names the file and the kind, not the operator's text.
var whatReached = map[agent.Kind]string{
	agent.KindInstructions: "its instructions",
	agent.KindSkill:        "the skill's name and description",
	agent.KindPlugin:       "an installed plugin's name",
	agent.KindAgent:        "the subagent's name and description",
	agent.KindCommand:      "the command's name and description",
	agent.KindEmail:        "the account email",
	agent.KindEnvFile:      "the system prompt its GEMINI_SYSTEM_MD names",
}

// mcpServerOf finds the subject's MCP source and server that tool t is named after: the
// tool is the server's name, or the server's name and a separator ("github__create_issue",
// "github.create_issue"), with or without the mcp__ prefix, or Gemini CLI's
// "mcp_github_create_issue".
func mcpServerOf(t string, s subject) (agent.Source, string) {
	bare := strings.TrimPrefix(t, "mcp__")
	gemini, isGemini := strings.CutPrefix(t, "mcp_")
	for _, src := range s.sources {
		if src.Kind != agent.KindMCP {
			continue
		}
		for _, name := range src.Fingerprints {
			name = strings.TrimPrefix(name, "mcp__")
			if name == "" {
				continue
			}
			if rest, ok := strings.CutPrefix(bare, name); ok && (rest == "" || strings.HasPrefix(rest, "__") || strings.HasPrefix(rest, ".")) {
				return src, name
			}
			if rest, ok := strings.CutPrefix(gemini, name); isGemini && ok && strings.HasPrefix(rest, "_") {
				return src, name
			}
		}
	}
	return agent.Source{}, ""
}

// mcpSource names the config that declares the MCP server behind tool t, where one does.
func mcpSource(t string, s subject) string {
	if src, name := mcpServerOf(t, s); name != "" {
		return s.show(src.Path) + " (" + name + ")"
	}
	for _, src := range s.sources {
		if src.Kind == agent.KindMCP {
			return s.show(src.Path)
		}
	}
	return "an MCP server the agent loaded"
}

// mentions reports whether path appears in text as a whole path: not as part of a longer
// name, and not as an XML closing tag ("</root>" is not the folder /root).
func mentions(text, path string) bool {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_.\-/<])` + regexp.QuoteMeta(path) + `($|[^A-Za-z0-9_.\-])`)
	return re.MatchString(text)
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
