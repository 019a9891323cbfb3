package capsule

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, id := range []string{"toolu_01ABC.x-y", "call_1", strings.Repeat("a", 200)} {
		if !validID(id) {
			t.Errorf("validID(%q) = false, want true", id)
		}
	}
	for _, id := range []string{"", "a/b", "../x", "a b", "ü", strings.Repeat("a", 201)} {
		if validID(id) {
			t.Errorf("validID(%q) = true, want false", id)
		}
	}
}
