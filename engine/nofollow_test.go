package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// followingWrites are the engine's writes that may follow a link, each with why no run
// folder is behind it. Every other create or open for writing goes through
// journal.OpenNoFollow (createRunFile), writeRunFile or capsule.WriteFileAtomic, or uses
// O_EXCL (which never follows a link).
var followingWrites = map[string]string{
	"judge.go (*judgeEnv).stage":                   "the judge's stage, a folder os.MkdirTemp just made",
	"slurm_http.go (*exchangeClient).fetchCapsule": "the node's own staging folder below os.MkdirTemp",
	"slurm_http.go WorkerHTTP":                     "job.json in the node's own os.MkdirTemp folder",
	"probe/secrets.go plantSecrets":                "a probe's planted home, a folder os.MkdirTemp just made",
	"probe/probe.go realTwin":                      "the twin's home, a folder os.MkdirTemp just made",
	"probe/probeaside.go plantControl":             "the control's planted home, a folder os.MkdirTemp just made",
	"probe/room.go moveHome":                       "a twin's planted home, a folder os.MkdirTemp just made",
}

// TestRunFolderWritesNeverFollowLinks walks the engine's source (tests aside) for os.Create,
// os.WriteFile and os.OpenFile with a writing flag and no O_EXCL, and fails on one not in
// followingWrites: a run folder's file opened that way writes through a planted symlink.
func TestRunFolderWritesNeverFollowLinks(t *testing.T) {
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
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
			where := filepath.ToSlash(p) + " " + declName(fn)
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "os" {
					return true
				}
				follows := false
				switch sel.Sel.Name {
				case "Create", "WriteFile":
					follows = true
				case "OpenFile":
					flags := exprText(call.Args[1])
					follows = !strings.Contains(flags, "O_EXCL") &&
						(strings.Contains(flags, "O_CREATE") || strings.Contains(flags, "O_WRONLY") || strings.Contains(flags, "O_RDWR") ||
							strings.Contains(flags, "O_APPEND") || strings.Contains(flags, "O_TRUNC"))
				}
				if !follows {
					return true
				}
				seen[where] = true
				if _, ok := followingWrites[where]; !ok {
					t.Errorf("%s: %s writes with os.%s, which follows a link in the file's place; fix: journal.OpenNoFollow (createRunFile) or writeRunFile, or list it in followingWrites saying why no run folder is behind it",
						fset.Position(call.Pos()), where, sel.Sel.Name)
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
	for k := range followingWrites {
		if !seen[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("followingWrites lists %q, which no longer writes that way: remove it", k)
	}
}

// exprText is the identifiers of e, joined: enough to read a flag expression.
func exprText(e ast.Expr) string {
	var b strings.Builder
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			b.WriteString(id.Name + " ")
		}
		return true
	})
	return b.String()
}

// declName is "F", or "(T).M" / "(*T).M" for a method.
func declName(fn *ast.FuncDecl) string {
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
