package prices

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// clause is one of genai-prices' match rules: equals, starts_with, ends_with, contains,
// regex, or, and. Strings are compared in lower case, as model ids are.
type clause interface {
	is(ref string) bool
}

type (
	equals     string
	startsWith string
	endsWith   string
	containsS  string
	regex      struct{ re *regexp.Regexp }
	anyOf      []clause
	allOf      []clause
)

func (c equals) is(ref string) bool     { return ref == string(c) }
func (c startsWith) is(ref string) bool { return strings.HasPrefix(ref, string(c)) }
func (c endsWith) is(ref string) bool   { return strings.HasSuffix(ref, string(c)) }
func (c containsS) is(ref string) bool  { return strings.Contains(ref, string(c)) }
func (c regex) is(ref string) bool      { return c.re.MatchString(ref) }

func (c anyOf) is(ref string) bool {
	for _, x := range c {
		if x.is(ref) {
			return true
		}
	}
	return false
}

func (c allOf) is(ref string) bool {
	for _, x := range c {
		if !x.is(ref) {
			return false
		}
	}
	return len(c) > 0
}

// parseClause reads a match rule: an object with exactly one of the known keys.
func parseClause(raw json.RawMessage) (clause, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || len(obj) != 1 {
		return nil, fmt.Errorf("want an object with one of equals, starts_with, ends_with, contains, regex, or, and: %s", short(raw))
	}
	for key, val := range obj {
		switch key {
		case "or", "and":
			var items []json.RawMessage
			if err := json.Unmarshal(val, &items); err != nil || len(items) == 0 {
				return nil, fmt.Errorf("%s: want a non-empty array of rules", key)
			}
			cs := make([]clause, 0, len(items))
			for _, it := range items {
				c, err := parseClause(it)
				if err != nil {
					return nil, err
				}
				cs = append(cs, c)
			}
			if key == "or" {
				return anyOf(cs), nil
			}
			return allOf(cs), nil
		}
		var s string
		if err := json.Unmarshal(val, &s); err != nil || s == "" {
			return nil, fmt.Errorf("%s: want a non-empty string", key)
		}
		switch key {
		case "equals":
			return equals(strings.ToLower(s)), nil
		case "starts_with":
			return startsWith(strings.ToLower(s)), nil
		case "ends_with":
			return endsWith(strings.ToLower(s)), nil
		case "contains":
			return containsS(strings.ToLower(s)), nil
		case "regex":
			re, err := regexp.Compile("(?i)" + s)
			if err != nil {
				return nil, fmt.Errorf("regex %q: %v", s, err)
			}
			return regex{re}, nil
		}
		return nil, fmt.Errorf("unknown rule %q; want one of equals, starts_with, ends_with, contains, regex, or, and", key)
	}
	panic("unreachable")
}

func short(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}
