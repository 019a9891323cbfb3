package sandbox

import (
	"os"
	"strconv"
	"strings"
)

// watch looks for each string where a room shows host paths without any file of the host
// being there: the mount table (a bind's root is its host path, and cannot be hidden), and
// every room process's command line and environment (what `ps` and /proc show the agent).
// Mounts and Environ of v must be read already.
func watch(strs []string, v *View) []Seen {
	var out []Seen
	if len(strs) == 0 {
		return nil
	}
	for _, m := range v.Mounts {
		for _, s := range strs {
			if s != "" && strings.Contains(m.Root, s) {
				out = append(out, Seen{String: s, Where: "/proc/self/mountinfo", Text: m.Root, At: m.Point})
			}
		}
	}
	for _, pid := range v.Pids {
		where := "/proc/" + strconv.Itoa(pid)
		b, err := os.ReadFile(where + "/cmdline")
		if err != nil {
			// A process gone since the listing shows nothing; any other failure is a gap.
			if !os.IsNotExist(err) {
				v.Errors = append(v.Errors, "cmdline "+where+": "+errName(err))
			}
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			for _, s := range strs {
				if s != "" && strings.Contains(arg, s) {
					out = append(out, Seen{String: s, Where: where + "/cmdline", Text: arg})
				}
			}
		}
		for _, kv := range v.Environ[pid] {
			for _, s := range strs {
				if s != "" && strings.Contains(kv, s) {
					out = append(out, Seen{String: s, Where: where + "/environ", Text: kv})
				}
			}
		}
	}
	return out
}
