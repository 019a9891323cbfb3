package modelserver

import (
	"fmt"
	"strings"
)

// locateKeys maps the TOML paths of a script to the line they first appear
// on, so that validation errors can name a line. The TOML decoder keeps
// key positions to itself, and a path like "turn.text" is shared by every
// turn, so this scanner numbers array-of-tables elements itself:
// "turn[2]" is the second [[turn]] header, "turn[2].branch[1].p" the key p
// of its first [[turn.branch]]. It is a line scanner, not a parser: keys
// inside inline tables are not seen (their parent's line is used instead).
func locateKeys(data []byte) map[string]int {
	lines := map[string]int{}
	latest := map[string]int{} // indexed array path -> current element number
	current := ""
	inMulti := ""
	record := func(path string, line int) {
		if _, ok := lines[path]; !ok {
			lines[path] = line
		}
	}
	// resolve turns header segments into an indexed path; the last segment
	// of an array-of-tables header starts a new element.
	resolve := func(segs []string, newElement bool) string {
		path := ""
		for i, s := range segs {
			p := join(path, s)
			if i == len(segs)-1 && newElement {
				latest[p]++
				path = fmt.Sprintf("%s[%d]", p, latest[p])
				continue
			}
			if n, ok := latest[p]; ok {
				path = fmt.Sprintf("%s[%d]", p, n)
			} else {
				path = p
			}
		}
		return path
	}
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if inMulti != "" {
			if strings.Count(line, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[[") {
			if end := strings.Index(line, "]]"); end > 0 {
				current = resolve(splitKey(line[2:end]), true)
				record(current, n)
			}
			continue
		}
		if line[0] == '[' {
			if end := strings.IndexByte(line, ']'); end > 0 {
				current = resolve(splitKey(line[1:end]), false)
				record(current, n)
			}
			continue
		}
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			continue
		}
		key := strings.TrimSpace(line[:eq])
		if strings.Trim(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-. \"'") != "" {
			continue
		}
		path := current
		for _, s := range splitKey(key) {
			path = join(path, s)
		}
		record(path, n)
		value := line[eq+1:]
		for _, q := range []string{`"""`, `'''`} {
			if strings.Count(value, q)%2 == 1 {
				inMulti = q
				break
			}
		}
	}
	return lines
}

// splitKey splits a dotted TOML key, dropping quotes and spaces.
func splitKey(k string) []string {
	parts := strings.Split(k, ".")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.Trim(strings.TrimSpace(p), `"'`)
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
