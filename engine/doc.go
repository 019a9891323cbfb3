// Package engine runs the analyses over a run folder: calibrate, record, a tail, cliff, swap,
// judge, judge-noise, rerun and resume, and the attached run, doctor and gc beside them.
// Each analysis writes its run folder through one writer (journal first, then state, then
// the bus), so a run can be watched while it goes and resumed after a crash from what it
// wrote. Work runs in rooms built by engine/probe, on this machine or on Slurm; the engine
// knows nothing about terminals: the command line and the app (tui) are its callers.
package engine
