package engine

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"tare/config"
)

// TestDoctorSaysWhetherSlurmAnswers: with a [cluster] in the config tare doctor says
// whether the controller answers, with the partition's nodes and how files travel, and warns
// with the fix when the partition is not there (only --on slurm needs Slurm, so it is no
// failure); without a [cluster] it says nothing of Slurm.
func TestDoctorSaysWhetherSlurmAnswers(t *testing.T) {
	needRooms(t)
	if out, err := exec.Command("../scripts/slurm-local", "up", "--nodes", "2").CombinedOutput(); err != nil {
		t.Fatalf("scripts/slurm-local up --nodes 2: %v\n%s", err, out)
	}
	line := func(c config.Cluster) string {
		var b strings.Builder
		slurmDoctor(context.Background(), &config.Config{Cluster: c, Path: "config.toml"}, &b)
		return b.String()
	}
	if got := line(config.Cluster{Partition: "tails", Transport: TransportHTTP}); !strings.HasPrefix(got, "ok    slurm    the controller answers; partition tails: ") ||
		!strings.Contains(got, "over HTTP") {
		t.Errorf("a Slurm that answers: %q", got)
	}
	if got := line(config.Cluster{Partition: "gpu-huge"}); !strings.HasPrefix(got, "warn  slurm") || !strings.Contains(got, `"gpu-huge" is not a partition`) ||
		!strings.Contains(got, "fix:") {
		t.Errorf("a partition the cluster lacks: %q", got)
	}
	if got := line(config.Cluster{}); got != "" {
		t.Errorf("no [cluster]: %q", got)
	}
}
