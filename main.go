// Command tare starts coding agents in clean bubblewrap rooms, proves each room clean
// before the run, and measures what the agents do there.
//
// main.go is the entry point only; the command line lives in package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"tare/cli"
	"tare/engine/probe"
)

func main() {
	// The in-room entry points run as /opt/tare/tare inside a room: before cobra and config.
	if code, ok := probe.InRoom(os.Args[1:]); ok {
		os.Exit(code)
	}
	// ctrl+c in line mode stops a run as SIGTERM does: its tails are stopped (Slurm jobs
	// cancelled) and tare resume runs them again. Later signals are absorbed too, so the
	// stop's clean-up (rooms, their folders) is never cut short; kill -9 is what ends tare
	// at once, and the run's state is built to survive it.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP, os.Interrupt)
	code := cli.Execute(ctx)
	stop()
	os.Exit(code)
}
