package engine

import (
	"context"
	"errors"
	"fmt"
	"io"

	"tare/agent"
	"tare/config"
	"tare/engine/browser"
	"tare/engine/room"
	"tare/sandbox"
)

// Doctor checks what tare needs on this machine and writes one line per check, with the fix
// for each problem. It returns true only when no line says FAIL, so a script's `tare doctor &&`
// and the lines agree. An agent that is simply not installed is a "none" line with its install
// command, not a failure (nobody installs all five); one named in the config that cannot be
// found, or one that is there but does not run, is a FAIL.
func Doctor(ctx context.Context, cfg *config.Config, w io.Writer) bool {
	ok := true
	report := func(good bool, what, detail string) {
		mark := "ok  "
		if !good {
			mark = "FAIL"
			ok = false
		}
		fmt.Fprintf(w, "%s  %-8s %s\n", mark, what, detail)
	}
	if cfg.Path != "" {
		report(true, "config", cfg.Path)
	} else {
		report(true, "config", "none (defaults); see config.example.toml to write "+config.File())
	}
	bw, err := sandbox.CheckBwrap(ctx, cfg.Bwrap)
	if err != nil {
		ok = false
		report(false, "bwrap", err.Error())
	} else {
		report(true, "bwrap", fmt.Sprintf("%s at %s; a room starts (user, pid, net, ipc, uts namespaces usable; seccomp filter applied)", bw.Version, bw.Path))
		for _, warn := range bw.Warnings {
			fmt.Fprintf(w, "warn  %-8s %s\n", "bwrap", warn)
		}
	}
	usable := 0
	for _, a := range agent.All() {
		inst, err := room.FindAgent(a, cfg)
		if err != nil {
			if errors.Is(err, agent.ErrNotInstalled) && cfg.Agents[a.Name()].Bin == "" {
				fmt.Fprintf(w, "none  %-8s %s\n", a.Name(), err)
				continue
			}
			report(false, a.Name(), err.Error())
			continue
		}
		usable++
		note := ""
		if !a.Verified() {
			note = " (not verified here: written from its public docs)"
		}
		report(true, a.Name(), fmt.Sprintf("%s at %s%s", inst.Version, inst.Bin, note))
	}
	if usable == 0 {
		ok = false
	}
	// Only tare judge needs a browser: its absence is a warning, not a failure.
	if bin, err := browser.Find(); err != nil {
		fmt.Fprintf(w, "warn  %-8s %s\n", "chromium", err)
	} else {
		report(true, "chromium", bin+" (tare judge renders pages with it, in a room)")
	}
	slurmDoctor(ctx, cfg, w)
	return ok
}
