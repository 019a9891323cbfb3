package probe

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"tare/agent"
	"tare/engine/room"
	"tare/sandbox"
)

// The probe's rooms talk to tare's model server and hold no login. A real-provider run with
// --login gets one more file, the agent's login copy: the probe builds that room's plan
// (the same adapter, the operator's login file, nothing started), reads back each copy it
// places and names every value in it. A value beyond the login the copy declares is a leak
// of the file it came from.

// loginReading is the declared lines and the leaks of the login copies a real-provider room
// with --login would get for the operator whose home is home. An operator without a login
// file gets nothing; one whose file a room would refuse gets the refusal as a declared line.
func loginReading(p room.Plan, home string, s subject) (declared []string, leaks []Leak) {
	if !slices.ContainsFunc(s.sources, func(src agent.Source) bool { return src.Kind == agent.KindLogin && isFile(src.Path) }) {
		return nil, nil
	}
	q := p
	q.Login, q.HostHome, q.HostNet = true, home, false
	box, setup, err := room.Build(q, "")
	if err != nil {
		return []string{"a --login room is refused: " + err.Error()}, nil
	}
	for _, l := range setup.Logins {
		declared = append(declared, "with --login on the real provider: "+l.Line)
		leaks = append(leaks, loginLeaks(box.Files, l, s.show)...)
	}
	return declared, leaks
}

// loginLeaks reads the login copy l among the room's files and names each value it holds
// beyond l's keys, and a copy that is missing or not JSON, as a leak of l's source.
func loginLeaks(files []sandbox.File, l agent.Login, show func(string) string) []Leak {
	i := slices.IndexFunc(files, func(f sandbox.File) bool { return f.Path == l.Path })
	if i < 0 {
		return []Leak{{Detector: DetSecrets, What: "the login copy " + l.Path + " declared is not among the room's files", Source: show(l.Source)}}
	}
	var doc map[string]any
	if err := json.Unmarshal(files[i].Data, &doc); err != nil {
		return []Leak{{Detector: DetSecrets, What: fmt.Sprintf("the login copy %s is not JSON the probe can read: %v", l.Path, err), Source: show(l.Source)}}
	}
	var out []Leak
	for _, k := range agent.LoginKeys(doc) {
		if !slices.Contains(l.Keys, k) {
			out = append(out, Leak{Detector: DetSecrets, What: fmt.Sprintf("the login copy %s holds %s beyond the declared login", l.Path, k), Source: show(l.Source)})
		}
	}
	return out
}

// isFile reports whether path is a regular file (after symlinks).
func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
