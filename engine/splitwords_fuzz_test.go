package engine

import (
	"slices"
	"strings"
	"testing"
)

// FuzzSplitWords: --check and side specs are split as a shell would. Whatever is typed, the
// split never panics, and its words, each quoted again and joined by spaces, split back into
// the same words.
func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"", "go test ./...", `sh -c 'make test'`, `a "b c" 'd"e'`, "a\tb\nc", `"`, `''`, `x'y'z`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitWords(s)
		if err != nil {
			return
		}
		var quoted []string
		for _, w := range words {
			switch {
			case !strings.Contains(w, "'"):
				quoted = append(quoted, "'"+w+"'")
			case !strings.Contains(w, `"`):
				quoted = append(quoted, `"`+w+`"`)
			default:
				return // a word with both quotes has no single quoting to round-trip through
			}
		}
		again, err := splitWords(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("%q split into %q; quoted again, %q split into %q (%v)", s, words, strings.Join(quoted, " "), again, err)
		}
	})
}
