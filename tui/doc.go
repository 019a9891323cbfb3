// Package tui is tare's Bubble Tea app: the home screen (probes, runs, later writers), the
// live view of a run and of one tail, a terminal pane for an attached agent, the plain line
// printer used when there is no terminal, and the ssh server that gives every operator the
// app on the same state.
//
// The app is a reader of journals and a caller of the engine. Everything it shows is rebuilt
// from the journal.jsonl files below the state directory, followed live by one bridge
// goroutine per program, so a run started in one terminal (or by another process) is
// watched from any other. Everything it does goes through [Engine], the same calls the
// command line makes; the engine owns the processes, so closing the app or dropping an ssh
// session never stops a run.
//
// Entry points for main:
//
//	tui.Run(ctx, tui.Options{StateDir: dir, Engine: e, Agents: names})     // tare
//	tui.Watch(ctx, dirs, tui.Options{Engine: e})                           // tare watch DIR...
//	tui.Serve(ctx, tui.ServeOptions{Addr: a, AuthorizedKeys: f, ...})      // tare serve --ssh ADDR
//	tui.LiveRun(ctx, tui.LiveOptions{Dir: runDir, Bus: bus, Engine: e})    // tare calibrate ...
//
// The engine's side is the small [Engine] interface (defined here, at its consumer) and
// two file formats it writes: each run's journal.jsonl (package engine) and each agent's
// last reading of a project and room at <state>/probes/<agent>-<hash>.json ([tare/engine/probe.Summary]);
// the probes pane shows the app's own project's readings only.
//
// Only this package imports Bubble Tea.
package tui
