// Package engine runs the analyses over a run folder: calibrate, record, a tail, cliff, swap,
// judge, judge-noise, rerun and resume, and the attached run, doctor and gc beside them.
// Each analysis writes its run folder through engine/run (journal first, then state, then
// the bus), so a run can be watched while it goes and resumed after a crash from what it
// wrote; the recipe there keeps the common fields, and each analysis its own settings under
// its key. Work runs in rooms built by engine/room, on this machine or on Slurm; the engine
// knows nothing about terminals: the command line (cli) and the app (tui) are its callers.
package engine
