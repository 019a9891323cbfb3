package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Rules on tare's own source (tests aside) that keep two classes of hole closed: a program
// run on the host from a PATH entry an agent writes (red-team C2), and a run folder's file
// written through a planted link (L4). Each walks every function and fails on a call not
// listed with why it is safe, so a new one is looked at before it lands.

// hostExecs are the places in tare's source that start a program, each with where that
// program comes from. A new one fails TestEveryExecIsResolved until it is listed here, with a
// program found by LookHost (or engine.HostProgram), a fixed system path, tare itself, or a
// start inside a room.
var hostExecs = map[string]string{
	"agent/find.go version":                              "the agent's CLI, found by Find (SafePATH, the project refused)",
	"cli/actions.go (*appEngine).Attach":                 "tare itself (os.Executable)",
	"environ/engine.go (Engine).command":                 "the container engine, found by Cache.FindEngine (sandbox.LookHost, programs.podman/buildah/docker)",
	"environ/engine.go (Engine).export":                  "tar, found by Cache.FindEngine (sandbox.LookHost, programs.tar)",
	"environ/environ.go (Cache).export":                  "tar, found by Cache.program (sandbox.LookHost, programs.tar)",
	"environ/runtime.go (Cache).NodeRuntime":             "patchelf, found by Cache.program (sandbox.LookHost, programs.patchelf)",
	"environ/runtime.go (Cache).sharedLibs":              "ldd, found by Cache.program (sandbox.LookHost, programs.ldd)",
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
	"tui/terminal.go StartTerminal":                      "a command its caller built: tare itself (cli/actions.go, cli/workshop_app.go)",
	"workshop/plan.go git":                               "git from engine.HostProgram",
	"cli/workshop_app.go (*appEngine).WorkshopManual":    "tare itself (os.Executable)",
}

// followingWrites are the engine's writes that may follow a link, each with why no run
// folder is behind it. Every other create or open for writing goes through
// journal.OpenNoFollow (run.CreateFile), run.WriteFile or capsule.WriteFileAtomic, or uses
// O_EXCL (which never follows a link).
var followingWrites = map[string]string{
	"engine/judge.go (*judgeEnv).stage":                   "the judge's stage, a folder os.MkdirTemp just made",
	"engine/slurm_http.go (*exchangeClient).fetchCapsule": "the node's own staging folder below os.MkdirTemp",
	"engine/slurm_http.go WorkerHTTP":                     "job.json in the node's own os.MkdirTemp folder",
	"engine/probe/secrets.go plantSecrets":                "a probe's planted home, a folder os.MkdirTemp just made",
	"engine/probe/probe.go realTwin":                      "the twin's home, a folder os.MkdirTemp just made",
	"engine/probe/probeaside.go plantControl":             "the control's planted home, a folder os.MkdirTemp just made",
	"engine/room/room.go moveHome":                        "a twin's planted home, a folder os.MkdirTemp just made",
}

// eachCall calls visit with every call and composite literal inside a function of tare's
// source (tests, node_modules, agents and testdata aside), where being "path/file.go F" or
// "path/file.go (*T).M".
func eachCall(t *testing.T, visit func(where string, pos token.Position, n ast.Node)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
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
			if fn, ok := decl.(*ast.FuncDecl); ok {
				where := filepath.ToSlash(p) + " " + funcName(fn)
				ast.Inspect(fn, func(n ast.Node) bool {
					switch n.(type) {
					case *ast.CallExpr, *ast.CompositeLit:
						visit(where, fset.Position(n.Pos()), n)
					}
					return true
				})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// stale fails the test for each entry of listed that no call matched any more.
func stale(t *testing.T, name string, listed map[string]string, seen map[string]bool) {
	t.Helper()
	var gone []string
	for k := range listed {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		t.Errorf("%s lists %q, which no longer does that: remove it", name, k)
	}
}

// selector is x.name's x (a package name here) and name, or "", "".
func selector(e ast.Expr) (string, string) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return id.Name, sel.Sel.Name
}

// TestEveryExecIsResolved: every call that starts a program (exec.Command,
// exec.CommandContext, exec.LookPath, an exec.Cmd literal, syscall.ForkExec, os.StartProcess,
// pty.Start*) is in hostExecs, and none names its program as a bare word, which os/exec
// would look up on PATH as it is.
func TestEveryExecIsResolved(t *testing.T) {
	seen := map[string]bool{}
	eachCall(t, func(where string, pos token.Position, n ast.Node) {
		var prog ast.Expr
		switch n := n.(type) {
		case *ast.CompositeLit:
			if pkg, name := selector(n.Type); pkg != "exec" || name != "Cmd" {
				return
			}
		case *ast.CallExpr:
			switch pkg, name := selector(n.Fun); {
			case pkg == "exec" && (name == "Command" || name == "LookPath"),
				pkg == "syscall" && name == "ForkExec", pkg == "os" && name == "StartProcess":
				prog = n.Args[0]
			case pkg == "exec" && name == "CommandContext":
				prog = n.Args[1]
			case pkg == "pty" && strings.HasPrefix(name, "Start"):
			default:
				return
			}
		}
		seen[where] = true
		if lit, ok := prog.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if name, _ := strconv.Unquote(lit.Value); !filepath.IsAbs(name) {
				t.Errorf("%s: %s starts %q by name, taken from PATH as it is; fix: find it with engine.HostProgram (sandbox.LookHost)", pos, where, name)
			}
		}
		if _, ok := hostExecs[where]; !ok {
			t.Errorf("%s: %s starts a program not in hostExecs; fix: find it with engine.HostProgram (sandbox.LookHost) and list it, saying where it comes from", pos, where)
		}
	})
	stale(t, "hostExecs", hostExecs, seen)
}

// TestRunFolderWritesNeverFollowLinks: every os.Create, os.WriteFile and os.OpenFile with a
// writing flag and no O_EXCL in the engine is in followingWrites: a run folder's file opened
// that way writes through a planted symlink.
func TestRunFolderWritesNeverFollowLinks(t *testing.T) {
	seen := map[string]bool{}
	eachCall(t, func(where string, pos token.Position, n ast.Node) {
		call, ok := n.(*ast.CallExpr)
		if !ok || !strings.HasPrefix(where, "engine/") {
			return
		}
		pkg, name := selector(call.Fun)
		if pkg != "os" {
			return
		}
		follows := name == "Create" || name == "WriteFile"
		if name == "OpenFile" {
			flags := identifiers(call.Args[1])
			follows = !strings.Contains(flags, "O_EXCL") &&
				(strings.Contains(flags, "O_CREATE") || strings.Contains(flags, "O_WRONLY") || strings.Contains(flags, "O_RDWR") ||
					strings.Contains(flags, "O_APPEND") || strings.Contains(flags, "O_TRUNC"))
		}
		if !follows {
			return
		}
		seen[where] = true
		if _, ok := followingWrites[where]; !ok {
			t.Errorf("%s: %s writes with os.%s, which follows a link in the file's place; fix: journal.OpenNoFollow (run.CreateFile) or run.WriteFile, or list it in followingWrites saying why no run folder is behind it",
				pos, where, name)
		}
	})
	stale(t, "followingWrites", followingWrites, seen)
}

// identifiers is the identifiers of e, joined: enough to read a flag expression.
func identifiers(e ast.Expr) string {
	var b strings.Builder
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			b.WriteString(id.Name + " ")
		}
		return true
	})
	return b.String()
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
