package probe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tare/sandbox"
)

// TestCheckProjectRefusesTheHomeAndTheRoot: a project that is the host root, the home, a
// folder holding the home (or a link to one of these) is refused with one line naming the
// fix; a folder in the home, or beside it, is not.
func TestCheckProjectRefusesTheHomeAndTheRoot(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "users", "alice")
	for _, d := range []string{filepath.Join(home, "src", "proj"), filepath.Join(root, "users", "al")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "myhome")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		project string
		refused string // what the line must say ("" = accepted)
	}{
		{"/", "the host's root folder"},
		{home, "your home folder"},
		{home + "/", "your home folder"},
		{link, "your home folder"},
		{filepath.Join(root, "users"), "a folder holding your home"},
		{root, "a folder holding your home"},
		{filepath.Join(home, "src", "proj"), ""},
		{filepath.Join(root, "users", "al"), ""},
	} {
		err := CheckProject(c.project, home)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused (%v), want accepted", c.project, err)
		case c.refused != "" && err == nil:
			t.Errorf("%s: accepted, want refused as %s", c.project, c.refused)
		case err != nil:
			msg := err.Error()
			for _, want := range []string{"--project " + c.project, c.refused, "fix:", "--allow-dirty"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s: %q lacks %q", c.project, msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("%s: %q is more than one line", c.project, msg)
			}
		}
	}
}

// TestRoomDetectorsNameSecretsAndHostPaths: secret files are named with their host file
// (through the workspace and the agent runtime binds); a host path naming the home in the
// room's mounts or processes is a leak; the project's own path, under the home, is declared.
func TestRoomDetectorsNameSecretsAndHostPaths(t *testing.T) {
	home := "/home/alice"
	s := subject{home: home, project: home + "/src/proj", runtime: home + "/.local/bin", user: "alice",
		show: func(p string) string { return strings.Replace(p, home, "~", 1) }}
	rs := roomSight{
		secrets:  map[string]string{"/work/.ssh/id_ed25519": ".ssh/", "/opt/agent/bin/.netrc": ".netrc"},
		unlisted: 3,
		seen: []sandbox.Seen{
			{String: home, Where: "/proc/self/mountinfo", Text: home + "/src/proj", At: "/work"},
			{String: home, Where: "/proc/1/cmdline", Text: home + "/src/proj"},
			{String: home, Where: "/proc/self/mountinfo", Text: home + "/tools", At: home + "/tools"},
			{String: home, Where: "/proc/1/cmdline", Text: home + "/tools"},
			{String: home, Where: "/proc/self/mountinfo", Text: home + "/go/bin/tare", At: "/opt/tare/tare"},
			{String: home, Where: "/proc/self/mountinfo", Text: home + "/go/bin/tare-room", At: "/opt/tare/tare-room"},
			{String: home, Where: "/proc/self/mountinfo", Text: home + "/src/tare/agents", At: "/opt/agent/agents"},
			{String: home, Where: "/proc/7/environ", Text: "NPM_PREFIX=" + home + "/.npm"},
			{String: "alice", Where: "/proc/7/environ", Text: "USER=alice"},
			{String: "alice", Where: "/proc/7/environ", Text: "GREETING=hello alice-bot"},
		},
	}
	got := map[string][]Leak{}
	detectRoom(rs, s, func(det, what, source string) {
		got[det] = append(got[det], Leak{Detector: det, What: what, Source: source})
	})
	var secrets []string
	for _, l := range got[DetSecrets] {
		secrets = append(secrets, l.What+" <- "+l.Source)
	}
	want := []string{
		"secret file in the room at /opt/agent/bin/.netrc (.netrc) <- ~/.local/bin/.netrc",
		"secret file in the room at /work/.ssh/id_ed25519 (.ssh/) <- ~/src/proj/.ssh/id_ed25519",
		"3 secret files in the room besides these <- the folders bound in the room",
	}
	if !slices.Equal(secrets, want) {
		t.Errorf("secrets leaks %q, want %q", secrets, want)
	}
	var home3 []string
	for _, l := range got[DetHomePath] {
		home3 = append(home3, l.What)
	}
	if len(home3) != 3 || home3[0] != "your home path "+home+" is visible in the room: "+home+"/tools (in /proc/self/mountinfo, /proc/PID/cmdline)" ||
		!strings.Contains(home3[1], "NPM_PREFIX") || !strings.Contains(home3[2], "user name alice") {
		t.Errorf("home path leaks %q, want the tools bind, the NPM_PREFIX variable and USER (not the project, not alice-bot)", home3)
	}
	declared := roomDeclared(rs, s)
	wantDeclared := []string{
		"the project's host path " + home + "/src/proj shows in the room's /proc/self/mountinfo, /proc/PID/cmdline (a bind's root cannot be hidden)",
		"tare's host path " + home + "/go/bin/tare shows in the room's /proc/self/mountinfo (a bind's root cannot be hidden)",
		"tare's host path " + home + "/go/bin/tare-room shows in the room's /proc/self/mountinfo (a bind's root cannot be hidden)",
		"the agent runtime's host path " + home + "/src/tare/agents shows in the room's /proc/self/mountinfo (a bind's root cannot be hidden)",
	}
	if !slices.Equal(declared, wantDeclared) {
		t.Errorf("declared %q, want %q", declared, wantDeclared)
	}
}

// TestATruncatedWalkIsBlindNotClean: a reading whose in-room walk stopped early is "not
// proven (blind)" for the detectors that read the walk, with the reason, never 0.00.
func TestATruncatedWalkIsBlindNotClean(t *testing.T) {
	r := &Reading{Agent: "pi", ControlSaw: map[string]string{}}
	markBlind(r, roomSightOf(&sandbox.View{Walked: 20000, WalkTruncated: true}), subject{show: tilde})
	if r.Zero() || r.Verdict() != "not proven (blind)" {
		t.Fatalf("verdict %q after a truncated walk, want not proven (blind)", r.Verdict())
	}
	text := r.Render()
	for _, want := range []string{"blind     host files    the clean room's walk: the walk stopped at 20000 entries", "blind     secrets       the clean room's walk: the walk stopped"} {
		if !strings.Contains(text, want) {
			t.Errorf("reading lacks %q:\n%s", want, text)
		}
	}
}

// probeOf runs a full probe of pi (the fastest real CLI) for a project and home.
func probeOf(t *testing.T, o ProbeOptions) *Reading {
	t.Helper()
	a, _, cfg := mustFind(t, "pi")
	if o.Config != nil {
		cfg.Room = o.Config.Room
	}
	o.Agent, o.Config = a, cfg
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := Probe(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// leaksOf lists a reading's leaks of one detector as "what <- source".
func leaksOf(r *Reading, det string) []string {
	var out []string
	for _, l := range r.Leaks {
		if l.Detector == det {
			out = append(out, l.What+" <- "+l.Source)
		}
	}
	return out
}

// TestProbeNamesSecretFilesInTheProject: a project holding a private key and cloud
// credentials does not read 0.00: each file is named, where the room shows it.
func TestProbeNamesSecretFilesInTheProject(t *testing.T) {
	needRooms(t)
	project := t.TempDir()
	writeFiles(t, project, ".ssh/id_ed25519", ".aws/credentials", "src/main.py")
	r := probeOf(t, ProbeOptions{Project: project, HostHome: t.TempDir()})
	got := leaksOf(r, DetSecrets)
	want := []string{
		"secret file in the room at /work/.aws/credentials (.aws/) <- " + project + "/.aws/credentials",
		"secret file in the room at /work/.ssh/id_ed25519 (.ssh/) <- " + project + "/.ssh/id_ed25519",
	}
	if r.Zero() || !slices.Equal(got, want) {
		t.Fatalf("reading %q with secrets %q, want %q\n%s", r.Verdict(), got, want, r.Render())
	}
}

// TestProbeOfALargeProjectSeesAPlantedFile: in a project of 30,000 files, the operator's
// personal file hard-linked after all of them is seen: the reading is not 0.00.
func TestProbeOfALargeProjectSeesAPlantedFile(t *testing.T) {
	needRooms(t)
	home, project := t.TempDir(), t.TempDir()
	writeFiles(t, home, ".pi/agent/AGENTS.md")
	many(t, filepath.Join(project, "aaa"), 30000)
	if err := os.MkdirAll(filepath.Join(project, "zzz"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(home, ".pi/agent/AGENTS.md"), filepath.Join(project, "zzz", "notes.md")); err != nil {
		t.Fatal(err)
	}
	r := probeOf(t, ProbeOptions{Project: project, HostHome: home})
	got := leaksOf(r, DetHostFiles)
	want := []string{"host file visible in the room at /work/zzz/notes.md <- " + home + "/.pi/agent/AGENTS.md"}
	if r.Zero() || !slices.Equal(got, want) {
		t.Fatalf("reading %q with host files %q, want %q\n%s", r.Verdict(), got, want, r.Render())
	}
}

// TestProbeNamesAHomePathInTheRoom: a folder of the home bound in every room (room.read_only)
// shows the home path in the room's mount table: a leak naming it. The project's own host
// path, also under the home, is declared, not a leak.
func TestProbeNamesAHomePathInTheRoom(t *testing.T) {
	needRooms(t)
	home := filepath.Join(t.TempDir(), "alice")
	project := filepath.Join(home, "src", "proj")
	writeFiles(t, home, "tools/lint.sh", "src/proj/main.py")
	cfg := testConfig(t, nil)
	cfg.Room.ReadOnly = []string{filepath.Join(home, "tools")}
	r := probeOf(t, ProbeOptions{Project: project, HostHome: home, Config: cfg})
	got := leaksOf(r, DetHomePath)
	if !slices.ContainsFunc(got, func(l string) bool {
		return strings.HasPrefix(l, "your home path "+home+" is visible in the room: "+home+"/tools (in /proc/self/mountinfo")
	}) {
		t.Errorf("home path leaks %q, want the tools bind in the mount table\n%s", got, r.Render())
	}
	if !slices.ContainsFunc(r.Declared, func(d string) bool {
		return strings.HasPrefix(d, "the project's host path "+project+" shows in the room's /proc/self/mountinfo")
	}) {
		t.Errorf("the project's host path is not declared\n%s", r.Render())
	}
}

// TestProbeRefusesTheHomeBeforeAnythingStarts: a probe of the home is refused with the
// fix, before any room (its temp folder) exists; --allow-dirty lets it through, and the
// reading names the secret files the room would hold.
func TestProbeRefusesTheHomeBeforeAnythingStarts(t *testing.T) {
	needRooms(t)
	home := t.TempDir()
	writeFiles(t, home, ".ssh/id_ed25519", ".git-credentials", "src/main.py")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a, _, cfg := mustFind(t, "pi")
	_, err := Probe(context.Background(), ProbeOptions{Agent: a, Project: home, HostHome: home, Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "is your home folder") {
		t.Fatalf("probe of the home: %v, want the refusal", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the refused probe left %d entries in TMPDIR", len(left))
	}
	r := probeOf(t, ProbeOptions{Project: home, HostHome: home, AllowDirty: true})
	got := leaksOf(r, DetSecrets)
	want := []string{
		"secret file in the room at /work/.git-credentials (.git-credentials) <- " + home + "/.git-credentials",
		"secret file in the room at /work/.ssh/id_ed25519 (.ssh/) <- " + home + "/.ssh/id_ed25519",
	}
	if r.Zero() || !slices.Equal(got, want) {
		t.Fatalf("reading %q with secrets %q, want %q\n%s", r.Verdict(), got, want, r.Render())
	}
}

// writeFiles creates each file (relative to root) with a line of text.
func writeFiles(t testing.TB, root string, files ...string) {
	t.Helper()
	for _, rel := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("file "+rel+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// many creates n empty files below dir, 1000 to a folder.
func many(t testing.TB, dir string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Create(filepath.Join(d, fmt.Sprintf("f%04d", i%1000)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkProbeLargeProject measures what a project of 100,000 files adds to a probe (pi,
// the whole probe: clean room, control twin): each iteration probes an empty project and the
// large one, and reports both and the difference (target: under 2 s extra).
//
//	go test ./engine -run '^$' -bench BenchmarkProbeLargeProject -benchtime 3x
func BenchmarkProbeLargeProject(b *testing.B) {
	a, _, cfg := mustFind(b, "pi")
	empty, large := b.TempDir(), b.TempDir()
	many(b, large, 100000)
	ctx := context.Background()
	probe := func(project string) time.Duration {
		start := time.Now()
		r, err := Probe(ctx, ProbeOptions{Agent: a, Project: project, Config: cfg, HostHome: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if !r.Zero() {
			b.Fatalf("reading %q for %s, want 0.00\n%s", r.Verdict(), project, r.Render())
		}
		return time.Since(start)
	}
	probe(empty) // the first start of each CLI reads it from disk
	b.ResetTimer()
	var sumEmpty, sumLarge time.Duration
	for i := 0; i < b.N; i++ {
		sumEmpty += probe(empty)
		sumLarge += probe(large)
	}
	n := float64(b.N)
	b.ReportMetric(sumEmpty.Seconds()/n, "s-empty/op")
	b.ReportMetric(sumLarge.Seconds()/n, "s-100k/op")
	b.ReportMetric((sumLarge-sumEmpty).Seconds()/n, "s-extra/op")
}
