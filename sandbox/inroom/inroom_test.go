package inroom

import (
	"slices"
	"testing"
)

// TestRunDispatchesByName: the first argument names the entry point, which gets the rest;
// a name in neither table, or none at all, is left to the caller's own command line.
func TestRunDispatchesByName(t *testing.T) {
	var got []string
	more := map[string]Main{"inspect": func(args []string) int { got = args; return 7 }}
	if code, ok := Run("tare", []string{"inspect", "--json", "x"}, more); !ok || code != 7 || !slices.Equal(got, []string{"--json", "x"}) {
		t.Errorf("inspect: code %d, ok %v, args %q", code, ok, got)
	}
	for _, args := range [][]string{nil, {"calibrate"}, {"inspect"}} {
		if _, ok := Run("tare-room", args, nil); ok {
			t.Errorf("%q was taken as an in-room entry point by tare-room", args)
		}
	}
	for name := range light {
		if _, ok := more[name]; ok {
			t.Errorf("%s is in both tables", name)
		}
	}
}
