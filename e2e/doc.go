// Package e2e holds the tests that build the tare binary and drive it as an operator does:
// real bwrap rooms, the real agent CLIs, podman, tmux and Slurm, against tare's own model
// server on loopback. It has no code of its own; TestMain builds tare and tare-room once.
// Under -short every test here is skipped (go test -short ./... is the unit tests).
package e2e
