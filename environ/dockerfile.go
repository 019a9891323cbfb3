package environ

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// instruction is one Dockerfile instruction: its keyword (upper case), its arguments and the
// line it starts on (1-based), so a failed build step can be named by its line.
type instruction struct {
	Cmd  string
	Args string
	Line int
}

// stage is one FROM and the instructions after it, up to the next FROM.
type stage struct {
	From  instruction
	Image string // the FROM's image, its ARGs substituted
	Name  string // the stage's AS name ("" when none)
	Steps []instruction
}

// parseDockerfile reads the instructions of a Dockerfile: comments and blank lines dropped,
// backslash continuations joined, each instruction keeping its first line's number. ARGs
// before the first FROM are kept to resolve the FROM lines, as the engines do.
func parseDockerfile(path string) ([]stage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ins []instruction
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	var cur *instruction
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur == nil && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur != nil && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		cont := strings.HasSuffix(trimmed, "\\")
		if cont {
			trimmed = strings.TrimSuffix(trimmed, "\\")
		}
		if cur == nil {
			cmd, args, _ := strings.Cut(trimmed, " ")
			cur = &instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args), Line: n}
		} else {
			cur.Args = strings.TrimSpace(cur.Args + " " + trimmed)
		}
		if !cont {
			ins = append(ins, *cur)
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		ins = append(ins, *cur)
	}
	args := map[string]string{}
	var stages []stage
	for _, in := range ins {
		if in.Cmd == "FROM" {
			f := strings.Fields(in.Args)
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				f = f[1:] // --platform=...
			}
			if len(f) == 0 {
				return nil, fmt.Errorf("%s:%d: FROM names no image; fix: write FROM IMAGE (for example FROM debian:bookworm-slim)", path, in.Line)
			}
			st := stage{From: in, Image: expandArgs(f[0], args)}
			if len(f) >= 3 && strings.EqualFold(f[1], "AS") {
				st.Name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.Cmd != "ARG" {
				return nil, fmt.Errorf("%s:%d: %s comes before any FROM; fix: start the Dockerfile with FROM IMAGE", path, in.Line, in.Cmd)
			}
			k, v, _ := strings.Cut(in.Args, "=")
			args[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
			continue
		}
		stages[len(stages)-1].Steps = append(stages[len(stages)-1].Steps, in)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM line; fix: start the Dockerfile with FROM IMAGE (for example FROM debian:bookworm-slim)", path)
	}
	return stages, nil
}

var argRE = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

func expandArgs(s string, args map[string]string) string {
	return argRE.ReplaceAllStringFunc(s, func(m string) string {
		k := argRE.FindStringSubmatch(m)[1]
		if v, ok := args[k]; ok {
			return v
		}
		return m
	})
}

// bases are the FROM images the build needs from outside: neither scratch nor an earlier
// stage's name.
func bases(stages []stage) []stage {
	named := map[string]bool{}
	var out []stage
	for _, st := range stages {
		if st.Image != "scratch" && !named[strings.ToLower(st.Image)] {
			out = append(out, st)
		}
		if st.Name != "" {
			named[strings.ToLower(st.Name)] = true
		}
	}
	return out
}

// stepRE reads the step lines podman and buildah print ("STEP 3/5: RUN make", "[2/2] STEP
// 1/4: FROM ...").
var stepRE = regexp.MustCompile(`^(?:\[(\d+)/\d+\] )?STEP (\d+)/\d+: (.*)$`)

// stepLine is the instruction a build step line names: the stage number (1 when the build
// prints none) and the step within it, FROM being step 1.
func stepLine(stages []stage, stageNo, step int) (instruction, bool) {
	if stageNo < 1 || stageNo > len(stages) || step < 1 {
		return instruction{}, false
	}
	st := stages[stageNo-1]
	if step == 1 {
		return st.From, true
	}
	if step-2 >= len(st.Steps) {
		return instruction{}, false
	}
	return st.Steps[step-2], true
}
