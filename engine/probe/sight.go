package probe

import (
	"fmt"
	"sort"
	"strings"

	"tare/agent"
	"tare/sandbox"
)

// inspectArgv is the in-room inspection's command line for a subject: connect to the
// host's canary listener, look for the subject's personal files by (dev, ino) in the room (a
// walk from / that, with within set, looks into that folder only), and search the room's
// files for its account email.
func inspectArgv(s subject, loopback, home, within string) []string {
	o := sandbox.InspectOptions{Connect: []string{loopback}, Home: home, Within: within, Watch: watchFor(s)}
	for _, src := range s.sources {
		if id, err := sandbox.IdentOf(src.Path, src.Path); err == nil {
			o.Idents = append(o.Idents, id)
		}
		if src.Kind == agent.KindEmail {
			o.Needles = append(o.Needles, src.Fingerprints...)
		}
	}
	return append([]string{sandbox.TareBin}, o.Args()...)
}

// sightOf reduces the inspection's view to what the detectors read.
func sightOf(v *sandbox.View, loopback string) sight {
	out := sight{env: map[string]string{}, found: map[string]string{}, needles: map[string][]string{}}
	for _, kv := range v.Env {
		k, val, _ := strings.Cut(kv, "=")
		out.env[k] = val
	}
	for _, env := range v.Environ {
		for _, kv := range env {
			k, val, _ := strings.Cut(kv, "=")
			out.env[k] = val
		}
	}
	for _, fd := range v.FDs {
		if fd.FD > 2 && !fd.Runtime {
			out.fds = append(out.fds, fmt.Sprintf("%d (%s)", fd.FD, fd.Target))
		}
	}
	for _, f := range v.Found {
		if label, ok := strings.CutPrefix(f.Why, "ident "); ok {
			out.found[f.Path] = label
		}
	}
	for needle, files := range v.Needles {
		out.needles[needle] = files
	}
	for _, c := range v.Connect {
		if c.Target == loopback && c.OK {
			out.loopback = true
		}
	}
	for _, i := range v.Interfaces {
		if i != "lo" {
			out.interfaces = append(out.interfaces, i)
		}
	}
	sort.Strings(out.interfaces)
	out.routes = len(v.Routes)
	out.kernel = kernelLine(v)
	out.room = roomSightOf(v)
	return out
}

// kernelLine says, from the inspection's view, whether the room ran under its seccomp
// filter and whether any kernel key was in sight (keyctl on the session keyring, /proc/keys).
func kernelLine(v *sandbox.View) string {
	seccomp := "seccomp filter"
	if v.Status.Seccomp != "2" {
		seccomp = fmt.Sprintf("no seccomp filter (Seccomp: %q)", v.Status.Seccomp)
	}
	keys := "no kernel keys in sight"
	if n := len(v.SessionKeys) + len(v.ProcKeys); n > 0 {
		keys = fmt.Sprintf("%d kernel keys in sight", n)
	}
	return seccomp + " · " + keys
}
