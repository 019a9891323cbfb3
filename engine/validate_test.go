package engine

import (
	"context"
	"os"
	"strings"
	"testing"

	"tare/config"
	"tare/engine/journal"
)

// The analyses check their input at their own entry, for any caller: a bad --script or
// --project is one line naming it, and nothing is written to the state directory.
func TestAnalysesRefuseBadInputBeforeWritingAnything(t *testing.T) {
	project := t.TempDir()
	side := journal.Side{Key: "a", Agent: "pi"}
	record := func(state string) RecordOptions {
		return RecordOptions{Prompt: "Do the step.", Side: side, Project: project, Check: "true", CheckOnHost: true,
			Config: &config.Config{StateDir: state}}
	}
	cases := []struct {
		name string
		want string
		run  func(o RecordOptions) error
	}{
		{"swap with a missing script", "/nonexistent/script.toml", func(o RecordOptions) error {
			o.Script = "/nonexistent/script.toml"
			_, _, err := Swap(context.Background(), SwapOptions{RecordOptions: o, A: side, B: journal.Side{Agent: "codex"},
				Cuts: []float64{0, 1}, Tails: 1, Jobs: 1, Originals: 1, Handoff: "trail"})
			return err
		}},
		{"swap of a missing project", "--project /nonexistent/proj: no such folder", func(o RecordOptions) error {
			o.Project = "/nonexistent/proj"
			_, _, err := Swap(context.Background(), SwapOptions{RecordOptions: o, A: side, B: journal.Side{Agent: "codex"},
				Cuts: []float64{0, 1}, Tails: 1, Jobs: 1, Originals: 1, Handoff: "trail"})
			return err
		}},
		{"cliff with a missing script", "/nonexistent/script.toml", func(o RecordOptions) error {
			o.Script = "/nonexistent/script.toml"
			_, _, err := Cliff(context.Background(), CliffOptions{RecordOptions: o, Tails: 3, Budget: 30, Jobs: 1, GapBelow: 0.2})
			return err
		}},
		{"cliff of a missing project", "--project /nonexistent/proj: no such folder", func(o RecordOptions) error {
			o.Project = "/nonexistent/proj"
			_, _, err := Cliff(context.Background(), CliffOptions{RecordOptions: o, Tails: 3, Budget: 30, Jobs: 1, GapBelow: 0.2})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			err := c.run(record(state))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, c.want)
			}
			if left, _ := os.ReadDir(state); len(left) > 0 {
				t.Errorf("left in the state directory: %v", left)
			}
		})
	}
}
