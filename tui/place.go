package tui

import (
	"time"

	"tare/engine/journal"
)

// A tail that runs on a cluster (engine.TailState.Place, from the journal's placed events)
// is shown with its job and node, its state in the queue, and the queue wait apart from the
// run time, so a slow queue is not read as a slow agent.

// queued is how long the tail waited in the cluster's queue: so far while it is pending,
// else as Slurm had it when the job started.
func queued(t *journal.TailState, now time.Time) time.Duration {
	if t.Place == nil {
		return 0
	}
	if t.Place.State == "pending" && t.Status == journal.StatusRunning {
		return max(now.Sub(t.Started), 0)
	}
	return time.Duration(t.Place.Waited * float64(time.Second))
}

// pending says whether the tail is still waiting in the queue for a node.
func pending(t *journal.TailState) bool {
	return t.Place != nil && t.Place.State == "pending" && t.Status == journal.StatusRunning
}

// placeNote is the tail's place and times in the tail view, beside its status word
// ("pending" while queued): "Slurm job 12 · in the queue 0:04", "Slurm job 12 on n2 · running
// 0:31 · queued 0:01", "Slurm job 12 on n2 · ran 0:40 · queued 0:01"; "" for a tail run in
// tare's own process.
func placeNote(t *journal.TailState, now time.Time) string {
	p := t.Place
	if p == nil {
		return ""
	}
	wait := queued(t, now)
	if pending(t) {
		return "Slurm job " + p.Job + " · in the queue " + span(wait)
	}
	note := "Slurm job " + p.Job
	if p.Node != "" {
		note += " on " + p.Node
	}
	ran := max(t.Elapsed(now)-wait, 0)
	if t.Status == journal.StatusRunning {
		return note + " · running " + span(ran) + " · queued " + span(wait)
	}
	return note + " · ran " + span(ran) + " · queued " + span(wait)
}

// placeCell is the tail's place in the run's tails table: "job 12 n2", "job 12 queued".
func placeCell(t *journal.TailState) string {
	p := t.Place
	if p == nil {
		return ""
	}
	if pending(t) {
		return "job " + p.Job + " queued"
	}
	if p.Node == "" {
		return "job " + p.Job
	}
	return "job " + p.Job + " " + p.Node
}

// placeStatus is the status word of a cluster's tail: "pending" while it waits for a node.
func placeStatus(t *journal.TailState, status string) string {
	if pending(t) {
		return "pending"
	}
	return status
}
