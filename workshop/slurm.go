package workshop

import (
	"context"
	"fmt"

	"tare/agent"
	"tare/engine"
	"tare/engine/journal"
)

// openCluster is the run's Slurm backend for --on slurm (nil for this machine), refused
// before anything is written or submitted when Slurm could not run a writer.
func openCluster(ctx context.Context, o RunOptions) (*engine.Cluster, error) {
	if err := engine.CheckOn(o.On); err != nil {
		return nil, err
	}
	if o.On != engine.OnSlurm {
		return nil, nil
	}
	return engine.OpenCluster(ctx, o.Config)
}

// runWriter runs writer id's session here, or as a Slurm job whose worker runs the same room
// on a node (probing it first) and sends the drafts, session, stdout and stderr back
// hash-checked into the same places: collect, resume and inspect read them as after a local
// run. The job's place (pending, running on a node, finished) goes to the progress lines.
func (o RunOptions) runWriter(ctx context.Context, id string, w engine.WriterOptions, inst agent.Install) (engine.WriterEnd, error) {
	if o.cluster == nil {
		return engine.RunWriter(ctx, w, inst)
	}
	return o.cluster.RunWriter(ctx, id, w, inst, func(p journal.Placed) {
		where := ""
		if p.Node != "" {
			where = " on " + p.Node
		}
		if p.State == "running" {
			where += fmt.Sprintf(" after %.1fs in the queue", p.Waited)
		}
		say(o.Progress, "%s: Slurm job %s %s%s", id, p.Job, p.State, where)
	})
}
