package agent

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// minFingerprint is the shortest instruction line worth searching for: a
// shorter one matches too much that the operator never wrote.
const minFingerprint = 16

// maxFingerprints caps the lines taken from one file.
const maxFingerprints = 200

// ancestors are the folders above project, nearest first, up to "/"
// (project itself is the workspace and not personal).
func ancestors(project string) []string {
	if project == "" {
		return nil
	}
	dir := filepath.Clean(project)
	var out []string
	for dir != "/" && dir != "." {
		dir = filepath.Dir(dir)
		out = append(out, dir)
	}
	return out
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// instructions is a Source of kind instructions for p, if p is a file.
func instructions(p, note string) (Source, bool) {
	data, err := os.ReadFile(p)
	if err != nil {
		return Source{}, false
	}
	prints, unseen := textPrints(data)
	return Source{Path: p, Kind: KindInstructions, Fingerprints: prints, Unseen: unseen, Note: note}, true
}

// textPrints are the fingerprints of an instruction file: its distinctive lines or, when
// every line is short (a terse file of four rules), runs of consecutive lines, which reach
// the model together because every agent puts the whole file in front of it. unseen says
// why there are none when the file has text but too little to tell from the agent's own.
func textPrints(data []byte) (prints []string, unseen string) {
	if prints = lines(data); len(prints) > 0 {
		return prints, ""
	}
	body := strings.Fields(stripFrontMatter(string(data)))
	var run []string
	for _, w := range body {
		run = append(run, w)
		if s := strings.Join(run, " "); utf8.RuneCountInString(s) >= minFingerprint && len(prints) < maxFingerprints {
			prints = append(prints, s)
			run = nil
		}
	}
	if len(prints) == 0 && len(body) > 0 {
		n := utf8.RuneCountInString(strings.Join(body, " "))
		unseen = fmt.Sprintf("its text is too short to recognise (%d characters; a probe needs %d in a row)", n, minFingerprint)
	}
	return prints, unseen
}

// stripFrontMatter is text without its YAML front matter, which agents do not show.
func stripFrontMatter(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		if _, after, ok := strings.Cut(rest, "\n---"); ok {
			return after
		}
	}
	return text
}

// instructionFiles adds an instructions Source for every existing path.
func instructionFiles(out []Source, note string, paths ...string) []Source {
	for _, p := range paths {
		if s, ok := instructions(p, note); ok {
			out = append(out, s)
		}
	}
	return out
}

// markdownIn lists the .md files below dir, recursively, sorted.
func markdownIn(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

var (
	listMark   = regexp.MustCompile(`^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+|>\s*)+`)
	headerMark = regexp.MustCompile(`^#{1,6}\s+`)
)

// lines are the distinctive lines of an instruction file: trimmed, list and
// quote marks removed (the rest is a verbatim substring of the file),
// at least minFingerprint long, de-duplicated, without YAML front matter,
// code fences or tables' rules. Headings count only when nothing else does.
func lines(data []byte) []string {
	var body, heads []string
	seen := map[string]bool{}
	add := func(list *[]string, s string) {
		if utf8.RuneCountInString(s) < minFingerprint || seen[s] || len(*list) >= maxFingerprints {
			return
		}
		seen[s] = true
		*list = append(*list, s)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	first, inFront := true, false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if first && line == "---" {
			first, inFront = false, true
			continue
		}
		first = false
		if inFront {
			inFront = line != "---"
			continue
		}
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") || strings.Trim(line, "-=|: ") == "" {
			continue
		}
		if headerMark.MatchString(line) {
			add(&heads, strings.TrimSpace(headerMark.ReplaceAllString(line, "")))
			continue
		}
		add(&body, strings.TrimSpace(listMark.ReplaceAllString(line, "")))
	}
	if len(body) == 0 {
		return heads
	}
	return body
}

// frontMatter reads the simple "key: value" lines of a Markdown file's YAML
// front matter (quoted values unquoted; folded ">"/"|" values joined).
func frontMatter(data []byte) map[string]string {
	out := map[string]string{}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return out
	}
	block, _, ok := strings.Cut(text[4:], "\n---")
	if !ok {
		return out
	}
	var key string
	for _, line := range strings.Split(block, "\n") {
		if key != "" && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) {
			out[key] = strings.TrimSpace(out[key] + " " + strings.TrimSpace(line))
			continue
		}
		key = ""
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.ContainsAny(k, " \t") {
			continue
		}
		v = strings.TrimSpace(v)
		if v == ">" || v == "|" || v == ">-" || v == "|-" || v == "" {
			key, v = k, ""
		}
		out[k] = strings.Trim(v, `"'`)
	}
	return out
}

// named is the fingerprints of a skill, agent or command: its name (when
// long enough to be distinctive), the start of its description, and the two
// together as the agents list them, which tells a short name and a short
// description apart from the agent's own text: "pdf: Fill PDF forms." (Claude
// Code's and Codex's lists) and "<name>pdf</name> <description>Fill PDF
// forms." (pi's, with its line break and indent read as one space).
func named(name, description string) []string {
	var out []string
	if len(name) >= 10 {
		out = append(out, name)
	}
	description = strings.Join(strings.Fields(description), " ")
	if r := []rune(description); len(r) > 100 {
		description = string(r[:100])
	}
	if utf8.RuneCountInString(description) >= minFingerprint {
		out = append(out, description)
	}
	if name != "" && description != "" {
		if s := name + ": " + description; utf8.RuneCountInString(s) >= minFingerprint {
			out = append(out, s, "<name>"+name+"</name> <description>"+description)
		}
	}
	return out
}

// unseenName says why a skill, agent or command without fingerprints cannot be recognised.
func unseenName(name, description string) string {
	return fmt.Sprintf("its name %q and description of %d characters are too short to recognise (a probe needs %d in a row; fix: a longer description)",
		name, utf8.RuneCountInString(strings.TrimSpace(description)), minFingerprint)
}

// markdownDefinition is a Source for a skill, agent or command file whose
// name defaults to fallback.
func markdownDefinition(p string, kind Kind, fallback string) (Source, bool) {
	data, err := os.ReadFile(p)
	if err != nil {
		return Source{}, false
	}
	fm := frontMatter(data)
	name := fm["name"]
	if name == "" {
		name = fallback
	}
	src := Source{Path: p, Kind: kind, Fingerprints: named(name, fm["description"])}
	if len(src.Fingerprints) == 0 {
		src.Unseen = unseenName(name, fm["description"])
	}
	return src, true
}

// skills lists dir/*/SKILL.md (folders starting with "." skipped: Codex's
// bundled .system skills are not the operator's).
func skills(out []Source, dir, note string) []Source {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if s, ok := markdownDefinition(filepath.Join(dir, e.Name(), "SKILL.md"), KindSkill, e.Name()); ok {
			s.Note = note
			out = append(out, s)
		}
	}
	return out
}

// definitions lists the .md files of dir (recursively) as agents or commands.
func definitions(out []Source, dir string, kind Kind) []Source {
	for _, p := range markdownIn(dir) {
		if s, ok := markdownDefinition(p, kind, strings.TrimSuffix(filepath.Base(p), ".md")); ok {
			out = append(out, s)
		}
	}
	return out
}

// readJSON decodes a JSON file into v; false when it is missing or invalid.
func readJSON(p string, v any) bool {
	data, err := os.ReadFile(p)
	return err == nil && json.Unmarshal(data, v) == nil
}

// keys are the sorted keys of a JSON object.
func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fileSource is a Source for p if p exists.
func fileSource(out []Source, p string, kind Kind, fingerprints []string, note string) []Source {
	if isFile(p) || isDir(p) {
		out = append(out, Source{Path: p, Kind: kind, Fingerprints: fingerprints, Note: note})
	}
	return out
}

// jwtEmail is the email claim of a JWT (unverified: only for the probe).
func jwtEmail(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) < 2 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Email   string `json:"email"`
		Profile struct {
			Email string `json:"email"`
		} `json:"https://api.openai.com/profile"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	if claims.Email != "" {
		return claims.Email
	}
	return claims.Profile.Email
}

// base64Forms are the ways s appears inside base64 text (a JWT's payload): one run of
// characters for each of the three alignments s can start at, in the standard and URL
// alphabets, keeping only the characters that s's own bits decide.
func base64Forms(s string) []string {
	var out []string
	seen := map[string]bool{}
	for pad := 0; pad < 3; pad++ {
		data := append(bytes.Repeat([]byte{0}, pad), s...)
		start := (pad*8 + 5) / 6
		end := len(data) * 8 / 6
		for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
			form := enc.EncodeToString(data)[start:end]
			if len(form) >= 8 && !seen[form] {
				seen[form] = true
				out = append(out, form)
			}
		}
	}
	return out
}
