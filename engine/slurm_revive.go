package engine

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"tare/modelserver"
)

// A scripted run's model server lives in the tare that submitted its jobs, so a kill -9 of
// that tare takes the model away from its running jobs. tare resume starts the run's model
// server again (the same script and seed: a scripted answer depends on the conversation and
// the tail's draw stream alone, so a conversation continues where it was), and for each
// job it re-attaches to, listens again on the address the job's room dials, relaying to the
// tail's stream on the new server (through the run's meter when the run is capped, and past
// the forward's token when the job had one). An address taken meanwhile cannot be had back:
// that tail's agent then loses its model as before, and its outcome says why.

// revive serves a re-attached attempt's model address again (x is its exchange folder); the
// meter is the run's, when capped, to charge; stop ends both; lost says why the address
// could not be had back ("" when it was, or there is no model to serve).
func (b *slurmBackend) revive(env *tailEnv, spec tailSpec, x string) (meter *modelserver.Meter, stop func(), lost string) {
	noop := func() {}
	if env.models == nil {
		return nil, noop, ""
	}
	var job struct {
		Upstream      string `json:"upstream"`
		UpstreamToken string `json:"upstream_token"`
	}
	data, err := os.ReadFile(filepath.Join(x, "job.json"))
	if err != nil || json.Unmarshal(data, &job) != nil || job.Upstream == "" {
		return nil, noop, ""
	}
	up, err := env.upstreamFor(fmt.Sprintf("%s@%d", spec.ID, spec.Attempt))
	if err == nil {
		up, meter, err = b.runMeter(env, up)
	}
	if err != nil {
		return nil, noop, "tare's model server could not serve it again: " + err.Error()
	}
	stopMeter := func() {
		if meter != nil {
			meter.Close()
		}
	}
	ln, err := net.Listen("tcp", job.Upstream)
	if err != nil {
		stopMeter()
		return nil, noop, fmt.Sprintf("its model address %s was taken when tare resumed (%v), so its agent lost its model", job.Upstream, err)
	}
	go serveForward(ln, forwardTo(up, job.UpstreamToken))
	return meter, func() {
		ln.Close()
		stopMeter()
	}, ""
}
