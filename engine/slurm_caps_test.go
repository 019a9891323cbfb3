package engine

import (
	"strings"
	"testing"

	"tare/engine/run"
)

// TestSlurmRefusesARunCapItCannotHold: a run cap on a real provider with --on slurm is refused
// with its fix (no meter sees every node's calls there); on tare's model server the submitting
// tare's meter holds it, and a tail's cap each node's worker holds, so both are let through.
func TestSlurmRefusesARunCapItCannotHold(t *testing.T) {
	for _, tt := range []struct {
		rec  run.Recipe
		want string
	}{
		{run.Recipe{Caps: &run.Caps{RunCost: 5}}, "the run's cap cannot hold; fix: cap each tail"},
		{run.Recipe{Caps: &run.Caps{RunTokens: 1000}}, "the run's cap cannot hold"},
		{run.Recipe{Caps: &run.Caps{RunCost: 5}, ScriptText: "[[turn]]\n"}, ""},
		{run.Recipe{Caps: &run.Caps{TailCost: 5}}, ""},
		{run.Recipe{}, ""},
	} {
		err := checkSlurmRunCaps(&tt.rec)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("caps %+v, script %q: %v; want %q", tt.rec.Caps, tt.rec.ScriptText, err, tt.want)
		}
	}
}
