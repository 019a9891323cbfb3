package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseJudgeCheck: only a check that is plainly tare's own judge, words and flags with
// nothing a shell would interpret, is run as tare's code; anything more stays a shell command
// in the check's room. A judge check the built-in judge cannot run as written is refused.
func TestParseJudgeCheck(t *testing.T) {
	home, _ := os.UserHomeDir()
	for _, check := range []string{
		"tare judge --rubric /r.md --threshold 5; cat /etc/passwd",
		"tare judge --rubric /r.md --threshold 5 && cat /etc/passwd",
		"tare judge --rubric $(cat /etc/passwd) --threshold 5",
		"tare judge --rubric `id` --threshold 5",
		"tare judge --rubric /r.md --threshold 5 > /tmp/x",
		"tare judge --rubric /r.md --threshold 5 | sh",
		"./tare judge --rubric /r.md --threshold 5",
		"bin/tare judge --rubric /r.md --threshold 5",
		"sh -c 'tare judge --rubric /r.md --threshold 5'",
		"tare judges --rubric /r.md --threshold 5",
		"tare judge-noise . --rubric /r.md --times 3",
		"npm test",
	} {
		if _, ours, _ := parseJudgeCheck(check); ours {
			t.Errorf("%q was taken for the built-in judge", check)
		}
	}
	jc, ours, err := parseJudgeCheck(`/opt/bin/tare judge . --rubric ~/r.md --threshold=6.5 --judge "codex --model x" --script /s.toml`)
	if !ours || err != nil || jc.rubric != filepath.Join(home, "r.md") || jc.threshold != 6.5 || jc.judge != "codex --model x" || jc.script != "/s.toml" || jc.page != "index.html" {
		t.Fatalf("ours %v, err %v, %+v", ours, err, jc)
	}
	for check, want := range map[string]string{
		"tare judge --rubric r.md --threshold 5":             "relative",
		"tare judge --rubric /r.md --threshold 5 --script s": "relative",
		"tare judge site --rubric /r.md --threshold 5":       "drop the folder",
		"tare judge --rubric /r.md --threshold 5 --out /x":   "fix:",
		"tare judge --rubric /r.md":                          "--threshold",
		"tare judge --rubric /r.md --threshold 5 --json":     "fix:",
		"tare judge --rubric /r.md --threshold 5 /etc":       "drop the folder",
	} {
		if _, ours, err := parseJudgeCheck(check); !ours || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: ours %v, err %v; want a refusal naming %q", check, ours, err, want)
		}
	}
}
