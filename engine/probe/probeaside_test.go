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
			inst, err := FindAgent(a, cfg)
			if err != nil {
				t.Fatal(err)
			}
			token := newToken()
			home := filepath.Join(t.TempDir(), "home")
			p := Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir(), ReadOnly: true}
			q, _, tw, err := plantControl(p, home, token, "127.0.0.1:9")
			if err != nil {
				t.Fatal(err)
			}
			tw.mem = true
			before := treeOf(t, home)
			srv, err := modelserver.New(modelserver.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			room, setup, err := BuildRoom(q, srv.Addr(), tw)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(room.Binds, sandbox.Bind{Dest: home, Tmpfs: true}) {
				t.Fatalf("the control's room has no in-memory home: %+v", room.Binds)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			reqs, err := askAgent(ctx, q, room, setup, func(argv []string) []string { return twinArgv(tw, argv) }, srv)
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

// TestCopyHomeFallsBackToTheBind: a planted home is copied into memory only when it holds
// nothing but regular files and folders (the working folder may be empty); a link, or another
// empty folder, which a copy would lose, leaves the twin on the bind of its host folder.
func TestCopyHomeFallsBackToTheBind(t *testing.T) {
	home := t.TempDir()
	cwd := filepath.Join(home, "proj")
	for _, d := range []string{cwd, filepath.Join(home, ".codex")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("x = 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	files, ok := copyHome(home, cwd)
	if !ok || len(files) != 1 || files[0].Path != filepath.Join(home, ".codex", "config.toml") || files[0].Mode != 0o640 || string(files[0].Data) != "x = 1\n" {
		t.Fatalf("copy of a home of files: %+v, %v", files, ok)
	}
	if err := os.Mkdir(filepath.Join(home, ".empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := copyHome(home, cwd); ok {
		t.Error("a home with an empty folder was copied: the copy would not hold the folder")
	}
	if err := os.Remove(filepath.Join(home, ".empty")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".codex/config.toml", filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	if _, ok := copyHome(home, cwd); ok {
		t.Error("a home with a link was copied: the copy would not hold the link")
	}
}
