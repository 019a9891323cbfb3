package probe

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"tare/sandbox"
)

// This file holds what the probe reads of the room beyond the agent's own files: the
// refusal of a project that would bring the operator's whole home in, well-known secret
// files anywhere in the room, host paths naming the home in the room's mount table and
// processes, and the blindness of an in-room walk that could not finish.

// CheckProject refuses a project folder that is the host root, the operator's home, or a
// folder holding the home: the room binds the project at /work, so it would hold ~/.ssh,
// ~/.aws and every other file of theirs. The error is one line naming the fix.
func CheckProject(project, home string) error {
	p, h := resolved(project), resolved(home)
	what := ""
	switch {
	case p == "/":
		what = "the host's root folder: the room would hold every file of this machine"
	case h == "" || h == "/":
	case p == h:
		what = "your home folder: the room would hold ~/.ssh, ~/.aws and every other file of yours"
	case strings.HasPrefix(h, p+"/"):
		what = fmt.Sprintf("a folder holding your home (%s): the room would hold ~/.ssh, ~/.aws and every other file of yours", home)
	}
	if what == "" {
		return nil
	}
	return fmt.Errorf("--project %s: is %s; fix: give the project's own folder (cd into it, or --project DIR), or pass --allow-dirty to run there anyway", project, what)
}

// resolved is path made absolute, with its symlinks resolved where it exists.
func resolved(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// operatorName is the login name of the operator whose home is home, when home is the
// current user's: a planted home (a test's, a twin's) has no user name of its own.
func operatorName(home string) string {
	u, err := user.Current()
	if err != nil || resolved(u.HomeDir) != resolved(home) || u.Username == sandbox.User {
		return ""
	}
	return u.Username
}

// plantSecrets writes a private key and cloud credentials in a control twin's home, so the
// control shows the secrets detector seeing them.
func plantSecrets(home, token string) error {
	for rel, text := range map[string]string{
		".ssh/id_ed25519":  "-----BEGIN OPENSSH PRIVATE KEY-----\n" + token + "\n-----END OPENSSH PRIVATE KEY-----\n",
		".aws/credentials": "[default]\naws_secret_access_key = " + token + "\n",
	} {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// roomSight is what the in-room inspection saw beyond the agent's files by identity.
type roomSight struct {
	// secrets maps a room path to the well-known secret path it is (".ssh/", ".netrc").
	secrets map[string]string
	// unlisted counts secret files met beyond those the inspection listed.
	unlisted int
	// seen are the places in the room that show a watched host string (the home path).
	seen []sandbox.Seen
	// stopped says why the walk did not see every file ("" when it did).
	stopped string
	// unentered are the folders the walk could not enter that the agent could open up; more
	// counts those beyond them.
	unentered []string
	more      int
}

// roomSightOf reduces the inspection's view to the roomSight.
func roomSightOf(v *sandbox.View) roomSight {
	out := roomSight{secrets: map[string]string{}, seen: v.Seen, stopped: v.WalkStopped, unlisted: v.SecretsUnlisted,
		unentered: v.Unentered, more: v.UnenteredMore}
	if v.WalkTruncated && out.stopped == "" {
		out.stopped = fmt.Sprintf("the walk stopped at %d entries", v.Walked)
	}
	for _, f := range v.Found {
		if secret, ok := strings.CutPrefix(f.Why, "secret "); ok {
			out.secrets[f.Path] = secret
		}
	}
	return out
}

// watchFor is what the inspection watches for in the room's mounts and processes: the
// subject's home path and user name.
func watchFor(s subject) []string {
	var out []string
	if h := s.home; h != "" && h != "/" {
		out = append(out, h)
		if r := resolved(h); r != h && r != "/" {
			out = append(out, r)
		}
	}
	if s.user != "" {
		out = append(out, s.user)
	}
	return out
}

// detectRoom adds the leaks the room shows of itself: secret files, and host paths naming
// the home (or the user name) in its mounts and processes. The host paths of the binds tare
// itself makes (the project, tare, the agent runtime) are not: a bind's root cannot be
// hidden, so roomDeclared declares them instead.
func detectRoom(rs roomSight, s subject, add func(det, what, source string)) {
	paths := make([]string, 0, len(rs.secrets))
	for p := range rs.secrets {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		add(DetSecrets, fmt.Sprintf("secret file in the room at %s (%s)", p, rs.secrets[p]), s.show(hostOf(p, s)))
	}
	if rs.unlisted > 0 {
		add(DetSecrets, fmt.Sprintf("%d secret files in the room besides these", rs.unlisted), "the folders bound in the room")
	}
	type shown struct{ what, text string }
	var order []shown
	wheres := map[shown][]string{}
	for _, seen := range rs.seen {
		if declaredAs(seen, s) != "" {
			continue
		}
		k := shown{"your home path " + seen.String, seen.Text}
		if seen.String == s.user {
			if !userToken(seen, s.user) {
				continue
			}
			k.what = "your user name " + s.user
		}
		if _, ok := wheres[k]; !ok {
			order = append(order, k)
		}
		if w := procless(seen.Where); !slices.Contains(wheres[k], w) {
			wheres[k] = append(wheres[k], w)
		}
	}
	for _, k := range order {
		add(DetHomePath, fmt.Sprintf("%s is visible in the room: %s (in %s)", k.what, clip(k.text, 80), strings.Join(wheres[k], ", ")),
			"the room's mounts and processes")
	}
}

// roomDeclared is the reading's declared lines saying where the room shows the host paths
// of the binds tare makes, when they name the home (the project's, tare's own under it).
func roomDeclared(rs roomSight, s subject) []string {
	type shown struct{ label, path string }
	var order []shown
	wheres := map[shown][]string{}
	for _, seen := range rs.seen {
		label := declaredAs(seen, s)
		if label == "" {
			continue
		}
		k := shown{label, seen.Text}
		if label == labelProject {
			k.path = s.project
		}
		if _, ok := wheres[k]; !ok {
			order = append(order, k)
		}
		if w := procless(seen.Where); !slices.Contains(wheres[k], w) {
			wheres[k] = append(wheres[k], w)
		}
	}
	var out []string
	for _, k := range order {
		why := ""
		if slices.Contains(wheres[k], "/proc/self/mountinfo") {
			why = " (a bind's root cannot be hidden)"
		}
		out = append(out, fmt.Sprintf("%s %s shows in the room's %s%s", k.label, k.path, strings.Join(wheres[k], ", "), why))
	}
	return out
}

// labelProject names the project's host path in a declared line.
const labelProject = "the project's host path"

// declaredAs names the bind whose host path seen shows, when it is one tare makes itself and
// cannot hide: the project (wherever it shows), or in the mount table tare, the agent runtime,
// the room's socket folder, the run store or a session folder. "" when it is none of these.
func declaredAs(seen sandbox.Seen, s subject) string {
	if seen.String == s.user {
		return ""
	}
	if isProjectPath(seen, s) {
		return labelProject
	}
	if seen.Where != "/proc/self/mountinfo" {
		return ""
	}
	below := func(dir string) bool { return seen.At == dir || strings.HasPrefix(seen.At, dir+"/") }
	switch {
	case seen.At == sandbox.TareBin, seen.At == sandbox.HelperBin:
		return "tare's host path"
	case below(sandbox.AgentDir):
		return "the agent runtime's host path"
	case seen.At == sandbox.SockDir:
		return "the room's socket folder"
	case below(sandbox.RunDir):
		return "the run store's host path"
	case below(sandbox.HomeDir):
		return "the session folder's host path"
	}
	return ""
}

// markBlind makes the detectors that read the in-room walk blind when it did not finish, or
// did not enter a folder the agent can open up (its own, mode 000): what it did not see
// proves nothing. Each such folder is named by its host path.
func markBlind(r *Reading, rs roomSight, s subject) {
	walked := []string{DetHostFiles, DetSecrets}
	for _, d := range walked {
		if rs.stopped != "" {
			r.blind(d, rs.stopped, "the clean room's walk")
		}
		for _, p := range rs.unentered {
			r.blind(d, fmt.Sprintf("the walk could not enter %s, which the agent owns and can open up (chmod); fix: make it readable or move it out of the project", p), s.show(hostOf(p, s)))
		}
		if rs.more > 0 {
			r.blind(d, fmt.Sprintf("the walk could not enter %d more folders the agent can open up", rs.more), "the clean room's walk")
		}
	}
}

// isProjectPath reports whether seen shows the subject's project folder (or a path below
// it), whole: a mount's root, a command-line argument, or a variable's value.
func isProjectPath(seen sandbox.Seen, s subject) bool {
	if s.project == "" {
		return false
	}
	text := seen.Text
	if strings.HasSuffix(seen.Where, "/environ") {
		_, text, _ = strings.Cut(text, "=")
	}
	for _, p := range []string{s.project, resolved(s.project)} {
		if p != "" && (text == p || strings.HasPrefix(text, p+"/")) {
			return true
		}
	}
	return false
}

// userToken reports whether seen shows the user name as a whole value: an argument, or a
// variable's value (USER=alice), not a part of a longer word.
func userToken(seen sandbox.Seen, name string) bool {
	text := seen.Text
	if strings.HasSuffix(seen.Where, "/environ") {
		_, text, _ = strings.Cut(text, "=")
	}
	return text == name
}

// procless turns /proc/123/cmdline into /proc/PID/cmdline, so one place is named once.
func procless(where string) string {
	f := strings.Split(where, "/")
	if len(f) == 4 && f[1] == "proc" && f[2] != "self" {
		f[2] = "PID"
	}
	return strings.Join(f, "/")
}

// hostOf is the host path of a room path: the workspace is bound at WorkDir, the agent
// runtime below AgentDir under its own name; anything else is bound at its own path.
func hostOf(p string, s subject) string {
	binds := [][2]string{{sandbox.WorkDir, s.project}}
	if s.runtime != "" {
		binds = append(binds, [2]string{filepath.Join(sandbox.AgentDir, filepath.Base(s.runtime)), s.runtime})
	}
	for _, b := range binds {
		if b[1] == "" {
			continue
		}
		if p == b[0] {
			return b[1]
		}
		if rest, ok := strings.CutPrefix(p, b[0]+"/"); ok {
			return filepath.Join(b[1], rest)
		}
	}
	return p
}
