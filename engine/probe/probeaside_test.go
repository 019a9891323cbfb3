package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tare/agent"
)

// TestControlHomesArePlantedAlike: the control's inspection runs in a second planted home
// beside the agent's, so that nothing the agent writes reaches what it walks; that proves
// the detectors only if the two homes hold the same canaries. For every agent, the two
// homes plant the same files with the same fingerprints and the same bytes, and give their
// rooms the same canary variable.
func TestControlHomesArePlantedAlike(t *testing.T) {
	for _, name := range []string{"claude", "codex", "pi", "gemini", "agy"} {
		t.Run(name, func(t *testing.T) {
			a, err := agent.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			token := newToken()
			p := Plan{Agent: a}
			var homes [2]string
			var sources [2][]string
			var envs [2]string
			for i := range homes {
				homes[i] = filepath.Join(t.TempDir(), "home")
				_, s, tw, err := plantControl(p, homes[i], token, "127.0.0.1:9")
				if err != nil {
					t.Fatal(err)
				}
				for _, src := range s.sources {
					data, err := os.ReadFile(src.Path)
					if err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
					rel := strings.TrimPrefix(src.Path, homes[i])
					sources[i] = append(sources[i], fmt.Sprintf("%s %s %q %x", rel, src.Kind, src.Fingerprints, data))
				}
				slices.Sort(sources[i])
				envs[i] = fmt.Sprint(tw.env)
			}
			if len(sources[0]) == 0 {
				t.Fatalf("%s planted nothing the detectors read", name)
			}
			if !slices.Equal(sources[0], sources[1]) {
				t.Errorf("the two homes differ:\n%s\n--\n%s", strings.Join(sources[0], "\n"), strings.Join(sources[1], "\n"))
			}
			if envs[0] != envs[1] {
				t.Errorf("canary variables differ: %s vs %s", envs[0], envs[1])
			}
		})
	}
}
