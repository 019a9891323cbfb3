package capsule

import (
	"strings"
	"testing"
)

// Each defence of the store against what a room wrote is switched off in turn (through
// the package's mutations) and the very checks that pass on the real code must report the
// attack: a defence no check can see would be one the tests do not prove.
func TestMutations(t *testing.T) {
	cases := []struct {
		name string
		set  func(on bool)
		// checks run the scenarios the defence guards; each returns "" when it held.
		checks func(t *testing.T) map[string]string
	}{
		{"no-follow opens (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)", func(on bool) { mutations.follow = on },
			func(t *testing.T) map[string]string {
				out := map[string]string{}
				for _, p := range stagedSymlinks {
					out["import through staged "+p] = importThroughSymlink(t, p)
				}
				for _, p := range storeSymlinks(t) {
					out["snapshot through store "+p] = snapThroughStoreSymlink(t, p)
				}
				return out
			}},
		{"hash check of staged objects", func(on bool) { mutations.noHash = on },
			func(t *testing.T) map[string]string {
				return map[string]string{"forged blob": importForged(t, "blobs"), "forged tree": importForged(t, "trees")}
			}},
		{"regular files only", func(on bool) { mutations.anyType = on },
			func(t *testing.T) map[string]string {
				out := map[string]string{}
				for name, mk := range specialFiles(t) {
					out["staged "+name] = importSpecial(t, name, mk)
				}
				return out
			}},
		{"set-uid and set-gid masks of snapshot and restore", func(on bool) { mutations.keepSetID = on },
			func(t *testing.T) map[string]string {
				return map[string]string{"restore of a set-uid workspace": restoreSetID(t)}
			}},
		{"refusal of trees that claim set-uid or set-gid", func(on bool) { mutations.acceptSetID = on },
			func(t *testing.T) map[string]string {
				return map[string]string{"restore of a tree claiming 4755": restoreForgedSetID(t)}
			}},
	}
	for _, c := range cases {
		t.Run(strings.Fields(c.name)[0], func(t *testing.T) {
			// The real code first: every check holds.
			for what, problem := range c.checks(t) {
				if problem != "" {
					t.Fatalf("%s, with every defence on: %s", what, problem)
				}
			}
			c.set(true)
			defer c.set(false)
			for what, problem := range c.checks(t) {
				if problem == "" {
					t.Errorf("without the %s, %s still looks refused: the check does not see this defence", c.name, what)
				} else {
					t.Logf("without the %s, %s: %s", c.name, what, problem)
				}
			}
		})
	}
}
