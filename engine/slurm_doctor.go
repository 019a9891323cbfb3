package engine

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"reflect"
	"strings"
	"time"

	"tare/config"
)

// slurmDoctor is tare doctor's line on Slurm when the config has a [cluster]: whether the
// controller answers with the partition, and how the tails' files will travel. A Slurm that
// does not answer is a warning, not a failure: only --on slurm needs it, as only tare judge
// needs a browser.
func slurmDoctor(ctx context.Context, cfg *config.Config, w io.Writer) {
	if reflect.DeepEqual(cfg.Cluster, config.Cluster{}) {
		return
	}
	if err := SlurmPreflight(ctx, cfg, false); err != nil {
		fmt.Fprintf(w, "warn  %-8s %s\n", "slurm", strings.TrimPrefix(err.Error(), "--on slurm: "))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	sinfo, err := HostProgram(cfg, "sinfo")
	if err != nil { // SlurmPreflight found it a moment ago
		fmt.Fprintf(w, "warn  %-8s %v\n", "slurm", err)
		return
	}
	nodes, _ := exec.CommandContext(ctx, sinfo, "-h", "-o", "%D %t", "--partition", firstNonEmpty(cfg.Cluster.Partition, defaultPartition(ctx, sinfo))).Output()
	travel := "through " + firstNonEmpty(cfg.Cluster.Shared, "<state>/slurm") + ", which every node must see"
	if cfg.Cluster.Transport == TransportHTTP {
		travel = "over HTTP from this machine at " + firstNonEmpty(cfg.Cluster.CallbackAddr, "127.0.0.1")
	}
	fmt.Fprintf(w, "ok    %-8s the controller answers; partition %s: %s; files travel %s\n", "slurm",
		firstNonEmpty(cfg.Cluster.Partition, "(default)"), firstNonEmpty(strings.Join(strings.Fields(string(nodes)), " "), "no nodes listed"), travel)
}

// defaultPartition is the cluster's default partition, as sinfo marks it with a star.
func defaultPartition(ctx context.Context, sinfo string) string {
	out, _ := exec.CommandContext(ctx, sinfo, "-h", "-o", "%P").Output()
	for _, p := range strings.Fields(string(out)) {
		if strings.HasSuffix(p, "*") {
			return strings.TrimSuffix(p, "*")
		}
	}
	return ""
}
