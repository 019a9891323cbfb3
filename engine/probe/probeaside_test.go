package probe

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/engine/room"
	"tare/modelserver"
	"tare/sandbox"
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
			p := room.Plan{Agent: a}
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
				envs[i] = fmt.Sprint(tw.Env)
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

// TestControlAgentWritesStayInMemory: the control's agent runs in a copy of its planted home
// held in memory (the CLI's databases and caches would otherwise be written, and synced, to
// the host's disk, which the clean room's in-memory home does not pay): after a real run of
// each agent the planted folder on disk holds exactly what was planted, byte for byte, while
// what reached the model still carries the planted instructions.
func TestControlAgentWritesStayInMemory(t *testing.T) {
	needRooms(t)
	for _, name := range []string{"codex", "claude"} {
		t.Run(name, func(t *testing.T) {
			a, _, cfg := mustFind(t, name)
			inst, err := room.FindAgent(a, cfg)
			if err != nil {
				t.Fatal(err)
			}
			token := newToken()
			home := filepath.Join(t.TempDir(), "home")
			p := room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), ReadOnly: true}
			q, _, tw, err := plantControl(p, home, token, "127.0.0.1:9")
			if err != nil {
				t.Fatal(err)
			}
			tw.Mem = true
			before := treeOf(t, home)
			srv, err := modelserver.New(modelserver.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			box, setup, err := build(q, srv.Addr(), tw)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(box.Binds, sandbox.Bind{Dest: home, Tmpfs: true}) {
				t.Fatalf("the control's room has no in-memory home: %+v", box.Binds)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			reqs, err := askAgent(ctx, q, box, setup, func(argv []string) []string { return twinArgv(tw, argv) }, srv)
			if err != nil {
				t.Fatal(err)
			}
			if after := treeOf(t, home); !slices.Equal(before, after) {
				t.Errorf("the agent's run changed the planted home on disk:\nbefore: %s\nafter:  %s", strings.Join(before, "\n  "), strings.Join(after, "\n  "))
			}
			var sent strings.Builder
			for _, rq := range reqs {
				sent.Write(rq.Body)
			}
			if !strings.Contains(sent.String(), token) {
				t.Errorf("no planted canary %s reached the model in %d requests: the copy is not the planted home", token, len(reqs))
			}
		})
	}
}

// treeOf lists every entry below dir with its type, mode and content hash.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", strings.TrimPrefix(p, dir), info.Mode())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
