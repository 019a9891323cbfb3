package modelserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestScriptErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // substrings of the one-line error
	}{
		{"unknown top key", "fianl = \"x\"\n[[turn]]\ntext = \"a\"\n",
			[]string{"bad.toml:1:", `unknown key "fianl"`, "use one of final, seed, turn"}},
		{"unknown turn key", "[[turn]]\ntext = \"a\"\n\n[[turn]]\ntext = \"b\"\nshel = \"ls\"\n",
			[]string{"bad.toml:6:", "turn 2", `unknown key "shel"`, "use one of text, shell"}},
		{"unknown key in inline write", "[[turn]]\nwrite = { path = \"a\", contnt = \"x\" }\n",
			[]string{"bad.toml:2:", "turn 1, write", `unknown key "contnt"`, "path, content"}},
		{"p out of range", "[[turn]]\ntext = \"a\"\n[[turn.branch]]\np = 1.5\ntext = \"b\"\n",
			[]string{"bad.toml:4:", "turn 1, branch 1", `"p" = 1.5 is out of range`, "0 < p <= 1"}},
		{"p zero", "[[turn]]\ntext = \"a\"\n[[turn.branch]]\np = 0\ntext = \"b\"\n",
			[]string{"bad.toml:4:", "out of range"}},
		{"p missing", "[[turn]]\ntext = \"a\"\n[[turn.branch]]\ntext = \"b\"\n",
			[]string{"bad.toml:3:", `key "p" is missing`, "p = 0.5"}},
		{"p sum", "[[turn]]\n[[turn.branch]]\np = 0.6\ntext = \"a\"\n[[turn.branch]]\np = 0.5\ntext = \"b\"\n",
			[]string{"bad.toml:2:", "sum to 1.1", "at most 1"}},
		{"unknown error kind", "[[turn]]\ntext = \"a\"\nerror = \"timeout\"\n",
			[]string{"bad.toml:3:", `unknown error kind "timeout"`, `"quota", "overloaded", "drop" or "login"`}},
		{"nothing to do", "[[turn]]\ntext = \"a\"\n[[turn]]\ndelay = \"1s\"\n",
			[]string{"bad.toml:3:", "turn 2", "nothing to do"}},
		{"empty branch", "[[turn]]\ntext = \"a\"\n[[turn.branch]]\np = 0.5\n",
			[]string{"bad.toml:3:", "branch 1", "nothing to do"}},
		{"error never answers", "[[turn]]\nerror = \"quota\"\nerror_times = 2\n",
			[]string{"bad.toml:1:", "never answers", "error_times = 0"}},
		{"error_times without error", "[[turn]]\ntext = \"a\"\nerror_times = 2\n",
			[]string{"bad.toml:3:", `"error_times" needs an error`}},
		{"bad delay", "[[turn]]\ntext = \"a\"\ndelay = \"soon\"\n",
			[]string{"bad.toml:3:", `"delay" must be a duration`, `"300ms"`}},
		{"shell type", "[[turn]]\nshell = 3\n",
			[]string{"bad.toml:2:", `"shell" must be a string or an array of strings`}},
		{"tool without name", "[[turn]]\n[[turn.tool]]\ninput = { a = 1 }\n",
			[]string{"bad.toml:2:", `name = "ToolName"`}},
		{"write without path", "[[turn]]\nwrite = { content = \"x\" }\n",
			[]string{"bad.toml:2:", `path = "some/file"`}},
		{"no turns", "final = \"x\"\n",
			[]string{"bad.toml:", "no [[turn]]", "add at least one"}},
		{"syntax", "[[turn]]\ntext = \"unterminated\n",
			[]string{"bad.toml:2:", "fix the TOML syntax"}},
		{"multi-line string does not confuse lines", "[[turn]]\ntext = \"\"\"\n[[turn]]\nshel = 1\n\"\"\"\nshel = \"x\"\n",
			[]string{"bad.toml:6:", `unknown key "shel"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScript([]byte(c.src), "bad.toml")
			if err == nil {
				t.Fatalf("no error for:\n%s", c.src)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestLoadScriptMissingFile(t *testing.T) {
	_, err := LoadScript(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !strings.Contains(err.Error(), "nope.toml") {
		t.Fatalf("error %v", err)
	}
}

func TestScriptForms(t *testing.T) {
	sc := mustScript(t, `
[[turn]]
shell = ["echo 1", "echo 2"]
write = [{ path = "x", content = "1" }, { path = "y" }]
tool = { name = "Read", input = { file_path = "/work/a" } }
delay = "250ms"
`)
	tu := sc.Turns[0]
	kinds := ""
	for _, a := range tu.Actions {
		kinds += string(a.Kind) + " "
	}
	if kinds != "shell shell write write tool " || tu.Delay != 250*time.Millisecond || tu.Actions[3].Path != "y" || tu.Actions[3].Content != "" {
		t.Errorf("actions %q delay %v: %+v", kinds, tu.Delay, tu.Actions)
	}
	if sc.Final != DefaultFinal || sc.Seed != 0 {
		t.Errorf("defaults: final %q seed %d", sc.Final, sc.Seed)
	}
	// The array-of-tables forms, and top-level keys.
	sc = mustScript(t, `
seed = 9
final = "bye"
[[turn]]
[[turn.write]]
path = "a"
content = "1"
[[turn.write]]
path = "b"
content = "2"
[[turn.tool]]
name = "Read"
[[turn.branch]]
p = 1
[[turn.branch.tool]]
name = "Grep"
input = { pattern = "x" }
`)
	tu = sc.Turns[0]
	if sc.Seed != 9 || sc.Final != "bye" || len(tu.Actions) != 3 || tu.Actions[1].Path != "b" || tu.Actions[2].Name != "Read" {
		t.Fatalf("script %+v", sc)
	}
	if b := tu.Branches[0]; b.P != 1 || len(b.Actions) != 1 || b.Actions[0].Name != "Grep" || b.Actions[0].Input["pattern"] != "x" {
		t.Errorf("branch %+v", b)
	}
}

func TestTestdataScriptsParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.toml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("testdata scripts: %v %v", files, err)
	}
	for _, f := range files {
		sc, err := LoadScript(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if len(sc.Turns) == 0 {
			t.Errorf("%s: no turns", f)
		}
	}
	data, err := os.ReadFile(filepath.Join("testdata", "every-feature.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"final", "seed", "text", "shell", "write", "[[turn.tool]]", "error", "error_times", "delay", "[[turn.branch]]", "p ="} {
		if !strings.Contains(string(data), k) {
			t.Errorf("every-feature.toml does not show %q", k)
		}
	}
}
