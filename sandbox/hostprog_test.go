package sandbox

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// hostExecs are the places in tare's source that start a program, each with where that
// program comes from. A new one fails TestEveryExecIsResolved until it is listed here, with a
// program found by LookHost (or engine.HostProgram), a fixed system path, tare itself, or a
// start inside a room.
var hostExecs = map[string]string{
	"agent/find.go version":                              "the agent's CLI, found by Find (SafePATH, the project refused)",
	"app.go (*appEngine).Attach":                         "tare itself (os.Executable)",
	"capsule/snapd.go runChild":                          "inside a room: tare snap-watch runs the room's command",
	"engine/check.go runOnHost":                          "/bin/sh, a fixed system path",
	"engine/gitguard/gitguard.go (*Guard).guardIncludes": "git from hostGit (LookHost)",
	"engine/gitguard/gitguard.go innerRepos":             "git from hostGit (LookHost)",
	"engine/launch.go Launch":                            "tare itself (os.Executable)",
	"engine/slurm.go SlurmPreflight":                     "sinfo from slurmBins (engine.HostProgram)",
	"engine/slurm.go sharedSeen":                         "srun from engine.HostProgram",
	"engine/slurm.go (*slurmBackend).submitJob":          "sbatch, scancel from slurmBins (engine.HostProgram)",
	"engine/slurm.go (*slurmBackend).cancel":             "scancel from slurmBins (engine.HostProgram)",
	"engine/slurm.go (*squeue).refresh":                  "squeue from slurmBins (engine.HostProgram)",
	"engine/slurm_doctor.go slurmDoctor":                 "sinfo from engine.HostProgram",
	"engine/slurm_doctor.go defaultPartition":            "sinfo from engine.HostProgram (its caller's)",
	"engine/slurm_reattach.go WriterJobPlace":            "squeue from engine.HostProgram",
	"sandbox/bwrap.go BwrapVersion":                      "bwrap from FindBwrap (the system's, then SafePATH)",
	"sandbox/inspect.go tryUnshareUser":                  "inside a room: /bin/true",
	"sandbox/roomrelay/relay.go startCommand":            "inside a room: the relay starts the room's command",
	"sandbox/start.go Start":                             "bwrap from FindBwrap",
	"tui/detail.go (*model).openPager":                   "the pager from pagerBin (engine.HostProgram, LookHost)",
	"tui/terminal.go StartTerminal":                      "a command its caller built: tare itself (app.go, workshop_app.go)",
	"workshop/plan.go git":                               "git from engine.HostProgram",
	"workshop_app.go (*appEngine).WorkshopManual":        "tare itself (os.Executable)",
}

// TestEveryExecIsResolved walks tare's source (tests aside) for every call that starts a
// program (exec.Command, exec.CommandContext, exec.LookPath, an exec.Cmd literal,
// syscall.ForkExec, os.StartProcess, pty.Start*) and fails on one not in hostExecs, or one
// that names its program as a bare word, which os/exec would look up on PATH as is.
func TestEveryExecIsResolved(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "agents", "testdata", ".git", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			where := filepath.ToSlash(rel) + " " + funcName(fn)
			ast.Inspect(fn, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if sel, ok := n.Type.(*ast.SelectorExpr); ok && isPkg(sel.X, "exec") && sel.Sel.Name == "Cmd" {
						check(t, fset, where, n.Pos(), nil, seen)
					}
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					var prog ast.Expr
					switch {
					case isPkg(sel.X, "exec") && (sel.Sel.Name == "Command" || sel.Sel.Name == "LookPath"):
						prog = n.Args[0]
					case isPkg(sel.X, "exec") && sel.Sel.Name == "CommandContext":
						prog = n.Args[1]
					case isPkg(sel.X, "syscall") && sel.Sel.Name == "ForkExec", isPkg(sel.X, "os") && sel.Sel.Name == "StartProcess":
						prog = n.Args[0]
					case isPkg(sel.X, "pty") && strings.HasPrefix(sel.Sel.Name, "Start"):
					default:
						return true
					}
					check(t, fset, where, n.Pos(), prog, seen)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for k := range hostExecs {
		if !seen[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("hostExecs lists %q, which starts no program any more: remove it", k)
	}
}

// check fails the test for one program start at pos in where: unlisted, or named by a bare
// word.
func check(t *testing.T, fset *token.FileSet, where string, pos token.Pos, prog ast.Expr, seen map[string]bool) {
	t.Helper()
	seen[where] = true
	if lit, ok := prog.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if name, _ := strconv.Unquote(lit.Value); !filepath.IsAbs(name) {
			t.Errorf("%s: %s starts %q by name, taken from PATH as it is; fix: find it with engine.HostProgram (sandbox.LookHost)", fset.Position(pos), where, name)
		}
	}
	if _, ok := hostExecs[where]; !ok {
		t.Errorf("%s: %s starts a program not in hostExecs; fix: find it with engine.HostProgram (sandbox.LookHost) and list it, saying where it comes from", fset.Position(pos), where)
	}
}

func isPkg(x ast.Expr, name string) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == name
}

// funcName is "F" for a function, "(T).M" or "(*T).M" for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	switch r := fn.Recv.List[0].Type.(type) {
	case *ast.StarExpr:
		if id, ok := r.X.(*ast.Ident); ok {
			return "(*" + id.Name + ")." + fn.Name.Name
		}
	case *ast.Ident:
		return "(" + r.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestLookHostRefusesWhatAnAgentWrites: a program on PATH in a folder an agent can write is
// refused in one line naming the program, the entry and the config key, whichever way the
// folder is one (relative, empty, the working folder, a project, an activated or a plain
// virtualenv); a configured path there is refused too; a system copy is taken.
func TestLookHostRefusesWhatAnAgentWrites(t *testing.T) {
	root := t.TempDir()
	project, wd, venv, elsewhere := filepath.Join(root, "project"), filepath.Join(root, "wd"), filepath.Join(root, "env"), filepath.Join(root, "tools")
	plant := func(dir string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "sinfo")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plant(filepath.Join(project, ".venv", "bin"))
	plant(filepath.Join(wd, "bin"))
	plant(wd)
	plant(filepath.Join(venv, "bin"))
	if err := os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	safe := plant(elsewhere)
	t.Chdir(wd)
	key := `cluster.bin_dir = "/usr/bin"`
	for _, c := range []struct {
		name, path, entry, why string
		env                    string // VIRTUAL_ENV
	}{
		{"relative", "bin:" + elsewhere, "bin", "relative", ""},
		{"empty entry", ":" + elsewhere, ".", "relative", ""},
		{"working folder", filepath.Join(wd, "bin") + ":" + elsewhere, filepath.Join(wd, "bin"), "inside the working folder " + wd, ""},
		{"project", filepath.Join(project, ".venv", "bin") + ":" + elsewhere, filepath.Join(project, ".venv", "bin"), "inside " + project, ""},
		{"plain virtualenv", filepath.Join(venv, "bin") + ":" + elsewhere, filepath.Join(venv, "bin"), "a virtualenv's bin folder", ""},
		{"activated virtualenv", filepath.Join(venv, "bin") + ":" + elsewhere, filepath.Join(venv, "bin"), "inside the activated virtualenv " + venv, venv},
	} {
		t.Setenv("VIRTUAL_ENV", c.env)
		_, err := LookHost(HostProgram{Name: "sinfo", Key: key, Avoid: []string{project}, PATH: c.path})
		if err == nil {
			t.Errorf("%s: LookHost took sinfo from %s", c.name, c.path)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "sinfo: the PATH entry "+c.entry+" ") || !strings.Contains(msg, c.why) || !strings.Contains(msg, "fix: set "+key) || strings.Contains(msg, "\n") {
			t.Errorf("%s: the refusal does not name the program, the entry %s, why (%s) and the fix in one line: %s", c.name, c.entry, c.why, msg)
		}
	}
	t.Setenv("VIRTUAL_ENV", "")
	if got, err := LookHost(HostProgram{Name: "sinfo", Key: key, Avoid: []string{project}, PATH: "/nonexistent:" + elsewhere}); err != nil || got != safe {
		t.Errorf("LookHost = %q, %v; want %s", got, err, safe)
	}
	if _, err := LookHost(HostProgram{Name: "sinfo", Path: filepath.Join(project, ".venv", "bin", "sinfo"), Key: key, Avoid: []string{project}}); err == nil || !strings.Contains(err.Error(), "cluster.bin_dir in tare's config") {
		t.Errorf("a configured sinfo inside the project: %v", err)
	}
	if got, err := LookHost(HostProgram{Name: "sh", Key: key, PATH: filepath.Join(root, "none")}); err != nil || got != "/usr/bin/sh" && got != "/bin/sh" {
		t.Errorf("sh not on PATH: LookHost = %q, %v; want the system's", got, err)
	}
	if _, err := LookHost(HostProgram{Name: "tare-no-such-program", Key: key, PATH: elsewhere}); !errors.Is(err, ErrNoProgram) {
		t.Errorf("a program nowhere: %v, want ErrNoProgram", err)
	}
}
