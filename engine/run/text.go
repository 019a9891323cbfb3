package run

import "strings"

// Clip trims s and cuts it to n runes, the last one an ellipsis.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
