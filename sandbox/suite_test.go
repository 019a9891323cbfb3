package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The sandbox test suite of SANDBOX.md: real rooms, each observed from
// inside by Inspect. Every property is one check function returning the
// problems it sees; TestRoom* require no problem on the real argv, and the
// mutation tests (mutation_test.go) require problems from the same function
// once the defence it relies on is removed.

// world is a planted host: a dirty HOME, ancestor instruction files above
// the workspace, host sockets and a loopback listener. It lives below
// /var/tmp, not /tmp: a room built on the host root would hide /tmp under
// its own tmpfs anyway, and the allowlist mutation must be able to show it.
type world struct {
	root, home, parent, ws string
	fdFile                 string
	idents                 []Ident
	names                  []string
	hostPaths              []string          // every planted path, as the host spells it
	hashes                 map[string]string // sha256 -> planted file
	strings                []string          // canary strings that must appear nowhere inside
	abstract, tmpSock, tcp string
}

// homePlant is a planted HOME per the leak table of SANDBOX.md.
var homePlant = []string{
	".claude/CLAUDE.md", ".claude/settings.json", ".claude/rules/style.md", ".claude/skills/canary/SKILL.md",
	".claude/agents/canary.md", ".claude/commands/canary.md", ".claude/plugins/installed.json",
	".claude/projects/-work/memory/MEMORY.md", ".claude/.credentials.json", ".claude.json",
	".codex/config.toml", ".codex/AGENTS.md", ".codex/auth.json", ".codex/prompts/canary.md",
	".agents/skills/canary/SKILL.md", ".pi/agent/settings.json", ".pi/agent/models.json", ".pi/agent/auth.json",
	".gemini/GEMINI.md", ".gemini/settings.json", ".gemini/oauth_creds.json",
	".ssh/id_rsa", ".ssh/config", ".gnupg/pubring.kbx", ".gitconfig", ".git-credentials", ".netrc", ".npmrc",
	".aws/credentials", ".config/gcloud/credentials.db", ".kube/config", ".docker/config.json", ".config/gh/hosts.yml",
	".bashrc", ".local/bin/claude",
}

// ancestorPlant sits in the workspace's parent folders.
var ancestorPlant = []string{
	"project/CLAUDE.md", "project/CLAUDE.local.md", "project/AGENTS.md", "project/AGENTS.override.md",
	"project/GEMINI.md", "project/.env", "project/.claude/CLAUDE.md", "project/.codex/config.toml", "AGENTS.md", "CLAUDE.md",
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "tare-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	w := &world{root: root, home: filepath.Join(root, "home"), parent: filepath.Join(root, "project"), hashes: map[string]string{}}
	w.ws = filepath.Join(w.parent, "ws")
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	plant := func(base, rel string) {
		p := filepath.Join(base, rel)
		content := fmt.Sprintf("canary %s %s\n", rel, randHex(8))
		if strings.HasSuffix(rel, ".claude.json") {
			content = fmt.Sprintf(`{"mcpServers":{"canary-%s":{"command":"canary"}}}`, randHex(4))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(content))
		w.hashes[hex.EncodeToString(sum[:])] = p
		w.strings = append(w.strings, strings.TrimSpace(content))
		w.hostPaths = append(w.hostPaths, p)
		if !slices.Contains(w.names, filepath.Base(p)) {
			w.names = append(w.names, filepath.Base(p))
		}
	}
	for _, rel := range homePlant {
		plant(w.home, rel)
	}
	for _, rel := range ancestorPlant {
		plant(root, rel)
	}
	w.fdFile = filepath.Join(root, "canary-fd")
	os.WriteFile(w.fdFile, []byte("canary fd\n"), 0o600)
	w.hostPaths = append(w.hostPaths, w.home, w.parent, root, w.fdFile)
	for _, p := range append([]string{w.home, filepath.Join(w.home, ".claude"), w.parent, root, w.fdFile}, w.hostPaths...) {
		id, err := IdentOf(p, p)
		if err != nil {
			t.Fatal(err)
		}
		w.idents = append(w.idents, id)
	}

	// Host sockets and a loopback service the room must not reach.
	w.abstract = "@tare-canary-" + randHex(6)
	w.tmpSock = filepath.Join("/tmp", "tare-canary-"+randHex(6)+".sock")
	for _, a := range []string{w.abstract, w.tmpSock} {
		ln, err := net.Listen("unix", a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	w.tcp = ln.Addr().String()

	// The operator's environment points at all of it.
	t.Setenv("HOME", w.home)
	t.Setenv("SSH_AUTH_SOCK", w.tmpSock)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-canary-"+randHex(6))
	t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(w.home, ".claude"))
	w.strings = append(w.strings, canaryEnvValue, os.Getenv("ANTHROPIC_API_KEY"), w.home, w.root)
	return w
}

// writeProbes are the paths whose writability the suite tries.
func writeProbes(r Room) []string {
	p := []string{"/", "/etc", "/usr", "/bin", "/opt", "/opt/tare", TareBin, "/run", "/home", "/dev", "/proc",
		"/etc/passwd", "/etc/hosts", "/etc/ld.so.cache", r.workDir(), HomeDir, "/tmp", ShmDir}
	if r.Image != nil {
		p = append(p, AgentDir, RuntimeDir, "/usr/bin")
	}
	if len(r.Relays) > 0 {
		p = append(p, SockDir)
	}
	if r.RunStore != "" {
		p = append(p, RunDir)
	}
	return p
}

// writableSet is exactly what a room may write.
func writableSet(r Room) []string {
	s := []string{HomeDir, "/tmp", ShmDir}
	if !r.WorkspaceReadOnly {
		s = append(s, r.workDir())
	}
	if r.RunStore != "" {
		s = append(s, RunDir)
	}
	return s
}

// suiteOptions is what the suite asks Inspect to try in a room of w.
func suiteOptions(w *world, r Room) InspectOptions {
	o := InspectOptions{
		Write:   writeProbes(r),
		Connect: []string{"unix:" + w.abstract, "unix:" + w.tmpSock, w.tcp},
		Idents:  w.idents,
		Names:   w.names,
		Exists:  w.hostPaths,
	}
	return o
}

// Check functions: each returns the problems it sees (none = pass).

func checkWritable(v View, r Room) []string {
	var bad []string
	allowed := writableSet(r)
	for _, p := range v.Write {
		want := slices.Contains(allowed, p.Target)
		if p.OK != want {
			bad = append(bad, fmt.Sprintf("%s writable=%v (%s), want writable=%v", p.Target, p.OK, p.Err, want))
		}
		if (p.Target == "/" || p.Target == "/etc") && p.Err != "EROFS" {
			bad = append(bad, fmt.Sprintf("%s: %s, want EROFS", p.Target, p.Err))
		}
	}
	if len(v.Write) == 0 {
		bad = append(bad, "no write probes ran")
	}
	// By mount flags: the only read-write mounts are the writable set and
	// the kernel's virtual ones (procfs, devpts, the bound device nodes).
	virtual := []string{"/proc", "/dev/pts", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	for _, m := range v.Mounts {
		if !m.ReadOnly && !slices.Contains(allowed, m.Point) && !slices.Contains(virtual, m.Point) {
			bad = append(bad, fmt.Sprintf("mount %s (%s) is read-write", m.Point, m.FSType))
		}
	}
	return bad
}

func checkPrivileges(v View) []string {
	var bad []string
	if v.UID != UID || v.EUID != UID || v.GID != GID || v.EGID != GID {
		bad = append(bad, fmt.Sprintf("ids %d/%d/%d/%d, want %d", v.UID, v.EUID, v.GID, v.EGID, UID))
	}
	for name, got := range map[string]string{"mknod": v.Mknod, "mount": v.Mount, "unshare --user": v.UnshareUser, "unshare mount ns": v.UnshareMount} {
		if got == "ok" || got == "" {
			bad = append(bad, name+" succeeded")
		}
	}
	return bad
}

// checkSeccomp: the room runs under a seccomp filter (Seccomp: 2 in its
// status) that answers EPERM to each kernel interface it takes away.
// Without the filter io_uring_setup and process_vm_readv succeed, ptrace
// meets ESRCH, keyctl reads the (fresh) session keyring, and the socket
// families fail for want of a capability or a module, if at all.
func checkSeccomp(v View) []string {
	var bad []string
	if v.Status.Seccomp != "2" {
		bad = append(bad, fmt.Sprintf("Seccomp: %q, want 2 (a filter)", v.Status.Seccomp))
	}
	for _, c := range []struct{ name, got string }{
		{"io_uring_setup", v.IOUring}, {"process_vm_readv", v.ProcessVM}, {"ptrace", v.Ptrace},
		{"keyctl", v.Keyctl}, {"socket(AF_PACKET)", v.PacketSocket}, {"socket(AF_VSOCK)", v.VsockSocket},
	} {
		if c.got != "EPERM" {
			bad = append(bad, fmt.Sprintf("%s: %s, want EPERM", c.name, c.got))
		}
	}
	return append(bad, checkSetID(v)...)
}

// checkSetID: no call gives a file set-uid, set-gid or a capability
// (openat2, whose mode the filter cannot see, is missing).
func checkSetID(v View) []string {
	var bad []string
	tried := map[string]bool{}
	for _, p := range v.SetID {
		tried[p.Target] = true
		want := "EPERM"
		if strings.HasPrefix(p.Target, "openat2") {
			want = "ENOSYS"
		}
		if p.Err != want {
			bad = append(bad, fmt.Sprintf("%s: %s, want %s", p.Target, p.Err, want))
		}
	}
	for _, c := range seccompModeCalls {
		if !tried[c.name+" 4755"] {
			bad = append(bad, c.name+" was not tried")
		}
	}
	return bad
}

func checkCaps(v View) []string {
	var bad []string
	s := v.Status
	for name, got := range map[string]string{"CapEff": s.CapEff, "CapBnd": s.CapBnd, "CapPrm": s.CapPrm, "CapInh": s.CapInh, "CapAmb": s.CapAmb} {
		if got != "0000000000000000" {
			bad = append(bad, fmt.Sprintf("%s = %q", name, got))
		}
	}
	if s.NoNewPrivs != "1" {
		bad = append(bad, fmt.Sprintf("NoNewPrivs = %q", s.NoNewPrivs))
	}
	return bad
}

// checkEnv: the room's environment is exactly the declared one (bwrap adds
// PWD for --chdir) and holds no canary.
func checkEnv(v View, r Room, w *world) []string {
	var bad []string
	want := append(r.EnvList(), "PWD="+r.workDir())
	got := slices.Clone(v.Env)
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		bad = append(bad, fmt.Sprintf("env %q, want %q", got, want))
	}
	for _, kv := range v.Env {
		for _, c := range w.strings {
			if strings.Contains(kv, c) {
				bad = append(bad, "env holds canary "+c)
			}
		}
	}
	return bad
}

// checkPIDs: only the room's few processes are visible, and bwrap's pid 1
// carries only the minimal environment.
func checkPIDs(v View, w *world) []string {
	var bad []string
	// bwrap's pid 1, the relay when there is one, and Inspect (thread ids
	// use pid numbers too, so only the count is telling).
	if len(v.Pids) == 0 || len(v.Pids) > 3 || v.Pids[0] != 1 {
		bad = append(bad, fmt.Sprintf("visible pids %v: more than the room's own", v.Pids))
	}
	env1, ok := v.Environ[1]
	if !ok {
		bad = append(bad, fmt.Sprintf("pid 1 environ unreadable (%s): cannot prove it clean", v.EnvironErr[1]))
	} else if !slices.Equal(env1, minimalEnv) {
		bad = append(bad, fmt.Sprintf("pid 1 environ %q, want %q", env1, minimalEnv))
	}
	for pid, env := range v.Environ {
		for _, kv := range env {
			for _, c := range w.strings {
				if strings.Contains(kv, c) {
					bad = append(bad, fmt.Sprintf("pid %d environ holds canary %s", pid, c))
				}
			}
		}
	}
	return bad
}

func checkFDs(v View) []string {
	var nums []int
	var desc []string
	for _, f := range v.FDs {
		if f.Runtime {
			continue
		}
		nums = append(nums, f.FD)
		desc = append(desc, fmt.Sprintf("%d->%s", f.FD, f.Target))
	}
	if !slices.Equal(nums, []int{0, 1, 2}) {
		return []string{fmt.Sprintf("open descriptors %v, want 0 1 2", desc)}
	}
	return nil
}

// checkCanaries: nothing planted is observed by path, name, inode or
// content, and no host socket or listener is visible or reachable.
func checkCanaries(v View, w *world, r Room) []string {
	var bad []string
	for _, f := range v.Found {
		if strings.HasPrefix(f.Why, "name ") && slices.ContainsFunc(r.Files, func(rf File) bool { return rf.Path == f.Path }) {
			continue // the room's own declared file, by name only
		}
		if strings.HasPrefix(f.Why, "name ") && imageOwn(r, f.Path, w) {
			continue // the image's own file (its /etc/skel/.bashrc), by name only
		}
		bad = append(bad, fmt.Sprintf("found %s (%s)", f.Path, f.Why))
	}
	for _, e := range v.Exists {
		if e.OK {
			bad = append(bad, "host path visible: "+e.Target)
		}
	}
	if len(v.Exists) == 0 {
		bad = append(bad, "no path probes ran")
	}
	for p, sum := range v.Home {
		if src, ok := w.hashes[sum]; ok {
			bad = append(bad, fmt.Sprintf("%s has the content of host %s", p, src))
		}
	}
	for _, c := range w.strings {
		if strings.Contains(v.Passwd, c) {
			bad = append(bad, "passwd holds "+c)
		}
	}
	for _, u := range v.Unix {
		if u == w.abstract || u == w.tmpSock {
			bad = append(bad, "host socket listed in /proc/net/unix: "+u)
		}
	}
	for _, c := range v.Connect {
		if c.OK {
			bad = append(bad, "reached "+c.Target)
		}
	}
	return bad
}

// imageOwn says whether p, in a room rooted in an image, is a file of the image's root
// whose content is none of the planted ones.
func imageOwn(r Room, p string, w *world) bool {
	if r.Image == nil {
		return false
	}
	data, err := os.ReadFile(filepath.Join(r.Image.Root, p))
	if err != nil {
		return false
	}
	_, planted := w.hashes[sha256hex(string(data))]
	return !planted
}

// checkNetwork: loopback only, no route, no host listener.
func checkNetwork(v View, w *world) []string {
	var bad []string
	if !slices.Equal(v.Interfaces, []string{"lo"}) {
		bad = append(bad, fmt.Sprintf("interfaces %v, want [lo]", v.Interfaces))
	}
	if len(v.Routes) > 0 {
		bad = append(bad, fmt.Sprintf("routes %v, want none", v.Routes))
	}
	for _, c := range v.Connect {
		if c.Target == w.tcp && c.OK {
			bad = append(bad, "host loopback listener reached: "+w.tcp)
		}
	}
	return bad
}

// checkTTY: TIOCSTI on the room's terminal fails with EPERM (the seccomp
// filter answers first, whatever the kernel's legacy_tiocsti) and /dev/tty
// does not open.
func checkTTY(v View) []string {
	var bad []string
	if v.TIOCSTI != "EPERM" {
		bad = append(bad, fmt.Sprintf("TIOCSTI: %s, want EPERM", v.TIOCSTI))
	}
	if v.DevTTY == "ok" {
		bad = append(bad, "/dev/tty opened: the room has a controlling terminal")
	}
	return bad
}

func report(t *testing.T, name string, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s: %s", name, p)
	}
}

// cleanRoom is the room the suite inspects: the world's workspace, a file
// in HOME, a run store, and whatever mutation the caller applies.
func cleanRoom(t *testing.T, w *world) Room {
	store := filepath.Join(w.root, "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	return Room{
		Workspace: w.ws,
		RunStore:  store,
		Files:     []File{{Path: HomeDir + "/.claude/.credentials.json", Data: []byte(`{"room":"login copy"}`)}},
		Env:       map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"},
	}
}

// inspectWorld runs the suite's Inspect in r with a fresh canary descriptor
// open in this process.
func inspectWorld(t *testing.T, w *world, r Room) View {
	t.Helper()
	openCanaryFD(t, w.fdFile)
	return runInspect(t, r, suiteOptions(w, r)).View
}

// TestRoomIsClean covers suite items 1, 4, 5 and 7 (and the network half of
// 6) in one room: writable set, privileges, capabilities, environment, pid
// namespace, descriptors and every canary of the planted world.
func TestRoomIsClean(t *testing.T) {
	w := newWorld(t)
	roomIsClean(t, w, cleanRoom(t, w))
}

// TestImageRoomIsClean is TestRoomIsClean in a room rooted in an environment image.
func TestImageRoomIsClean(t *testing.T) {
	w := newWorld(t)
	roomIsClean(t, w, withImage(t, cleanRoom(t, w)))
}

func roomIsClean(t *testing.T, w *world, r Room) {
	t.Helper()
	v := inspectWorld(t, w, r)
	report(t, "writable", checkWritable(v, r))
	report(t, "privileges", checkPrivileges(v))
	report(t, "caps", checkCaps(v))
	report(t, "seccomp", checkSeccomp(v))
	report(t, "env", checkEnv(v, r, w))
	report(t, "pids", checkPIDs(v, w))
	report(t, "fds", checkFDs(v))
	report(t, "canaries", checkCanaries(v, w, r))
	report(t, "network", checkNetwork(v, w))
	if v.Hostname != Hostname {
		t.Errorf("hostname %q, want %q", v.Hostname, Hostname)
	}
	if v.Passwd != passwdData {
		t.Errorf("passwd is not the synthetic one: %q", v.Passwd)
	}
	if want := map[string]string{HomeDir + "/.claude/.credentials.json": sha256hex(`{"room":"login copy"}`)}; !mapsEqual(v.Home, want) {
		t.Errorf("HOME %v, want exactly %v", v.Home, want)
	}
	if v.ElapsedMS > 200 {
		t.Errorf("Inspect took %.1f ms, budget 200 ms", v.ElapsedMS)
	}
	t.Logf("inspect: %.1f ms, walked %d entries, /proc/keys lines %d", v.ElapsedMS, v.Walked, len(v.ProcKeys))
}

// TestRoomReadOnlyWorkspace: the probe's mode; /work joins the EROFS set.
// TestRoomTmpfsFolder: a Tmpfs bind is an empty folder in memory at its path holding its
// Files (content and mode as given, folders made for them), writable by the room while the
// rest of the root stays read-only, beside HOME and its files.
func TestRoomTmpfsFolder(t *testing.T) {
	w := newWorld(t)
	home := filepath.Join(t.TempDir(), "planted", "home")
	var out bytes.Buffer
	r := Room{Workspace: w.ws, Stdout: &out, Stderr: &out,
		Binds: []Bind{{Dest: home, Tmpfs: true}},
		Files: []File{
			{Path: home + "/.codex/config.toml", Data: []byte("model = \"x\"\n"), Mode: 0o640},
			{Path: HomeDir + "/.claude.json", Data: []byte("{}")},
		},
		Argv: []string{"/bin/sh", "-c", `set -e
cd "$0"
stat -c '%a %s' .codex/config.toml; cat .codex/config.toml
echo new > made; cat made
if touch /opt/x 2>/dev/null; then echo root-writable; fi
test -s /home/agent/.claude.json && echo home-file`, home}}
	if code := runRoom(t, r); code != 0 {
		t.Fatalf("room exited %d: %s", code, out.String())
	}
	if want := "640 12\nmodel = \"x\"\nnew\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("room printed %q, want it to start %q", out.String(), want)
	}
	if strings.Contains(out.String(), "root-writable") || !strings.Contains(out.String(), "home-file") {
		t.Errorf("room printed %q: the root must stay read-only and HOME keep its files", out.String())
	}
}

func TestRoomReadOnlyWorkspace(t *testing.T) {
	w := newWorld(t)
	r := Room{Workspace: w.ws, WorkspaceReadOnly: true}
	v := runInspect(t, r, InspectOptions{Write: writeProbes(r)}).View
	report(t, "writable", checkWritable(v, r))
	for _, p := range v.Write {
		if p.Target == WorkDir && p.Err != "EROFS" {
			t.Errorf("read-only workspace: %s", p.Err)
		}
	}
}

// TestRoomSymlinkEscape (suite item 2): symlinks an agent planted in the
// workspace, pointing at host files and folders outside it, do not carry a
// write out of the room.
func TestRoomSymlinkEscape(t *testing.T) {
	w := newWorld(t)
	outsideFile := filepath.Join(w.parent, "CLAUDE.md")
	before, _ := os.ReadFile(outsideFile)
	links := map[string]string{
		"to-parent-file": outsideFile,
		"to-parent-dir":  w.parent,
		"to-new-file":    filepath.Join(w.parent, "planted-by-agent"),
		"to-etc":         "/etc",
		"to-host-home":   w.home,
		"to-root":        "/",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(w.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	var probes []string
	for name := range links {
		probes = append(probes, filepath.Join(WorkDir, name))
	}
	probes = append(probes, WorkDir+"/to-etc/hosts", WorkDir+"/to-etc/new", WorkDir+"/to-host-home/.bashrc",
		WorkDir+"/to-parent-dir/new", WorkDir+"/to-root/x")
	v := runInspect(t, Room{Workspace: w.ws}, InspectOptions{Write: probes}).View
	for _, p := range v.Write {
		if p.OK {
			t.Errorf("write through %s succeeded", p.Target)
		}
	}
	after, _ := os.ReadFile(outsideFile)
	if string(after) != string(before) {
		t.Errorf("%s changed", outsideFile)
	}
	for _, p := range []string{filepath.Join(w.parent, "planted-by-agent"), filepath.Join(w.parent, "new")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created on the host", p)
		}
	}
	t.Logf("write probes: %+v", v.Write)
}

// TestRoomSetuidCopy (suite item 3, second half): a setuid copy of a binary,
// owned by the room's own uid or by an unmapped one, runs without any
// privilege.
func TestRoomSetuidCopy(t *testing.T) {
	w := newWorld(t)
	exe, err := os.ReadFile(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	type copyOf struct {
		name string
		uid  int
	}
	copies := []copyOf{{"suid-own", os.Getuid()}}
	if os.Geteuid() == 0 {
		// Only root can give a file away; CI runs as root.
		copies = append(copies, copyOf{"suid-nobody", 65534})
	}
	for _, c := range copies {
		p := filepath.Join(w.ws, c.name)
		if err := os.WriteFile(p, exe, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, c.uid, c.uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o4755|os.ModeSetuid|os.ModeSetgid); err != nil {
			t.Fatal(err)
		}
	}
	r := Room{Workspace: w.ws, Tare: testBinary(t)}
	var stderr strings.Builder
	r.Stderr = &stderr
	var script []string
	for _, c := range copies {
		script = append(script, fmt.Sprintf("/work/%s inspect --out /work/%s.json", c.name, c.name))
	}
	r.Argv = []string{"/bin/sh", "-c", strings.Join(script, " && ")}
	code := runRoom(t, r)
	if code != 0 {
		t.Fatalf("room exited %d: %s", code, stderr.String())
	}
	for _, c := range copies {
		v := readView(t, filepath.Join(w.ws, c.name+".json"))
		report(t, c.name+" privileges", checkPrivileges(v))
		report(t, c.name+" caps", checkCaps(v))
	}
}

// TestRoomPrivileges (suite items 3 and 4) on their own, so a failure names them.
func TestRoomPrivileges(t *testing.T) {
	w := newWorld(t)
	v := runInspect(t, Room{Workspace: w.ws}, InspectOptions{}).View
	report(t, "privileges", checkPrivileges(v))
	report(t, "caps", checkCaps(v))
	t.Logf("mknod %s, mount %s, unshare --user %s, unshare mount ns %s", v.Mknod, v.Mount, v.UnshareUser, v.UnshareMount)
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRoomRunsNode: the allowlist root is enough for node (the agents'
// runtime): it starts, loads the system CA roots, resolves the room's user
// and the timezone, with nothing else of /etc.
func TestRoomRunsNode(t *testing.T) {
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Fatalf("node is missing (%v): install it (apt-get install nodejs) — the agent CLIs run on it", err)
	}
	var out strings.Builder
	code := runRoom(t, Room{Workspace: t.TempDir(), Stdout: &out, Stderr: &out, Argv: []string{"node", "-e",
		`const tls = require("tls"), os = require("os");
console.log(tls.rootCertificates.length > 0, os.userInfo().username, os.homedir(), Intl.DateTimeFormat().resolvedOptions().timeZone)`}})
	if got := strings.Fields(out.String()); code != 0 || len(got) != 4 || strings.Join(got[:3], " ") != "true agent /home/agent" {
		t.Errorf("node in the room: exit %d, %q", code, got)
	}
}
