package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestByName(t *testing.T) {
	for _, name := range []string{"claude", "codex", "pi", "gemini", "agy"} {
		a, err := ByName(name)
		if err != nil || a.Name() != name {
			t.Errorf("ByName(%q) = %v, %v", name, a, err)
		}
	}
	_, err := ByName("aider")
	if err == nil || !strings.Contains(err.Error(), "known: agy, claude, codex, gemini, pi") {
		t.Errorf("ByName(aider) error = %v, want the known names", err)
	}
	for _, a := range All() {
		if a.Verified() != (a.Name() != "agy") {
			t.Errorf("%s: Verified() = %v", a.Name(), a.Verified())
		}
	}
}

func TestArgs(t *testing.T) {
	extra := []string{"--model", "m1"}
	tests := []struct {
		name string
		got  []string
		want string
	}{
		{"claude run", Claude{}.RunArgs("do it", extra),
			"-p --output-format stream-json --verbose --dangerously-skip-permissions --model m1 -- do it"},
		{"claude run dash", Claude{}.RunArgs("-x", nil),
			"-p --output-format stream-json --verbose --dangerously-skip-permissions -- -x"},
		{"claude resume", Claude{}.ResumeArgs("S1", "Continue.", extra),
			"-p --resume S1 --output-format stream-json --verbose --dangerously-skip-permissions --model m1 -- Continue."},
		{"claude attach", Claude{}.AttachArgs(extra, false), "--model m1"},
		{"claude attach yolo", Claude{}.AttachArgs(extra, true), "--dangerously-skip-permissions --model m1"},
		{"claude preset", Claude{}.PresetSessionArgs("U"), "--session-id U"},
		{"codex run", Codex{}.RunArgs("do it", extra),
			"exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --model m1 -- do it"},
		{"codex resume", Codex{}.ResumeArgs("T1", "Continue.", extra),
			"exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --model m1 resume T1 -- Continue."},
		{"codex attach", Codex{}.AttachArgs(nil, false), ""},
		{"codex attach yolo", Codex{}.AttachArgs(extra, true), "--dangerously-bypass-approvals-and-sandbox --model m1"},
		{"pi run", Pi{}.RunArgs("do it", extra), "--mode json -p do it --model m1"},
		{"pi run dash", Pi{}.RunArgs("-x", nil), "--mode json -p  -x"},
		{"pi run at", Pi{}.RunArgs("@x", nil), "--mode json -p  @x"},
		{"pi resume", Pi{}.ResumeArgs("P1", "Continue.", nil), "--session P1 --mode json -p Continue."},
		{"pi attach yolo", Pi{}.AttachArgs(extra, true), "--model m1"},
		{"gemini run", Gemini{}.RunArgs("do it", extra),
			"--output-format stream-json --yolo --skip-trust --model m1 --prompt=do it"},
		{"gemini run dash", Gemini{}.RunArgs("-x", nil), "--output-format stream-json --yolo --skip-trust --prompt=-x"},
		{"gemini resume", Gemini{}.ResumeArgs("G1", "Continue.", nil),
			"--resume G1 --output-format stream-json --yolo --skip-trust --prompt=Continue."},
		{"gemini attach", Gemini{}.AttachArgs(nil, false), "--skip-trust"},
		{"gemini attach yolo", Gemini{}.AttachArgs(extra, true), "--skip-trust --yolo --model m1"},
		{"gemini preset", Gemini{}.PresetSessionArgs("U"), "--session-id U"},
		{"agy run", Agy{}.RunArgs("do it", nil),
			"-p do it --output-format stream-json --dangerously-skip-permissions --print-timeout 60m"},
		{"agy resume", Agy{}.ResumeArgs("C1", "Continue.", nil),
			"--conversation C1 -p Continue. --output-format stream-json --dangerously-skip-permissions --print-timeout 60m"},
		{"agy attach yolo", Agy{}.AttachArgs(nil, true), "--dangerously-skip-permissions"},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.got, " "); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	// The caller's slice is never written through.
	in := make([]string, 1, 8)
	in[0] = "--x"
	Codex{}.RunArgs("a", in)
	Codex{}.ResumeArgs("s", "b", in)
	if !slices.Equal(in[:cap(in)][:1], []string{"--x"}) || in[:2][1] != "" {
		t.Errorf("extra was modified: %q", in[:2])
	}
}
