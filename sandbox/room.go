// Package sandbox builds and runs tare's rooms: bubblewrap sandboxes that
// hold nothing of the operator's. A Room is a plain spec; Args turns it into
// a bwrap argv (pure, table-tested), Start runs it with its relays, and
// Inspect is what the room can see from inside.
//
// The root of a room is built from an allowlist (/usr and a handful of /etc
// files), never from the host root: a CLAUDE.md or AGENTS.md in a parent
// folder, a ~/.claude or a ~/.ssh must not exist inside.
package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Fixed paths and identity inside every room.
const (
	HomeDir  = "/home/agent"    // fresh tmpfs HOME
	WorkDir  = "/work"          // the workspace, read-write (read-only for a probe)
	TareBin  = "/opt/tare/tare" // the tare binary, read-only
	AgentDir = "/opt/agent"     // the agent runtime folder, read-only
	SockDir  = "/run/tare"      // relay unix sockets, bound from a host temp folder
	RunDir   = "/tare-run"      // the run store (capsules), read-write when set
	StoreDir = "/tare-store"    // a recording's capsule store, read-only, which the capsule hook reads
	ShmDir   = "/dev/shm"       // a private tmpfs for POSIX shared memory
	UID      = 1000             // uid of the agent inside
	GID      = 1000             // gid of the agent inside
	User     = "agent"          // user name inside
	Hostname = "room"           // hostname inside
)

// basePath ends every room's PATH.
const basePath = "/usr/local/bin:/usr/bin:/bin"

// File is a file placed in the fresh HOME, or in a Tmpfs bind's folder, before the command
// starts (through `bwrap --file FD`, so the descriptor is consumed by bwrap and the agent sees
// only 0, 1 and 2). Path is absolute inside the room and below HomeDir or a Tmpfs bind's
// Dest; Mode is the permission bits (0600 when zero).
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Bind is an extra host folder or file mounted in the room: read-only unless
// Write, and skipped when Source is missing if Try. With Tmpfs it is instead an empty
// folder in memory at Dest (Source, Write and Try unset), writable by the room, in which
// Files may be placed like in HOME: a folder whose writes never reach the host's disk.
type Bind struct {
	Source, Dest string
	Write        bool
	Try          bool
	Tmpfs        bool
}

// Network is the room's network mode.
type Network int

const (
	// NetRelay (the zero value): the room has its own network namespace with
	// only a loopback interface; the agent reaches the outside only through
	// Room.Relays.
	NetRelay Network = iota
	// NetHost is the explicit opt-in to the host's network: host loopback
	// services, host abstract unix sockets and every network the host reaches
	// become reachable. Declared says so.
	NetHost
)

// String names the mode as the config and Declared spell it.
func (n Network) String() string {
	switch n {
	case NetRelay:
		return "relay"
	case NetHost:
		return "host"
	}
	return "Network(" + strconv.Itoa(int(n)) + ")"
}

// Relay is a TCP port on 127.0.0.1 inside the room whose connections reach
// the host through a unix socket in SockDir. The host side either forwards
// each connection to Upstream, or, when Allow is non-nil, serves an HTTP
// CONNECT proxy that lets through only the listed "host:port" targets.
type Relay struct {
	Port     int
	Upstream string
	Allow    []string
	// Intercept are Allow targets the proxy reads instead of tunnelling (see Intercept).
	Intercept []Intercept
	// Dial, when set, is how the proxy reaches an allowed host it tunnels ("host:port"); nil
	// dials it directly. Tests point it at stand-ins for real providers.
	Dial func(addr string) (net.Conn, error)
}

// sock is the relay's socket name, inside SockDir and inside the host folder.
func (rl Relay) sock() string { return strconv.Itoa(rl.Port) + ".sock" }

// Room is the spec of one sandbox run. The zero value is not runnable:
// Workspace and Argv are required.
type Room struct {
	Workspace         string // host folder bound at WorkDir
	WorkspaceReadOnly bool   // bind the workspace read-only (the probe's mode)
	Agent             string // host path of the agent runtime (a folder or one binary) bound read-only at AgentDir/<its base name> ("" = none)
	RunStore          string // host folder bound read-write at RunDir ("" = none)
	// Guard are paths below Workspace, relative to it ("/" separated), that the room sees
	// read-only over a read-write workspace: what the host later runs from, such as git's
	// config and hooks. Every folder between the workspace and a guarded path is bound over
	// itself, so the agent can neither rename it away nor put another in its place (a
	// mount point cannot be renamed or removed). Each path must exist and no part of it
	// may be a symlink (Validate checks, on the host).
	Guard []string

	Files   []File            // placed in the fresh HOME or a Tmpfs bind's folder
	Binds   []Bind            // extra mounts, never below WorkDir
	Env     map[string]string // added to the base env (HOME, USER, PATH, LANG, TERM, TMPDIR)
	Path    []string          // PATH entries placed before /usr/local/bin:/usr/bin:/bin
	Network Network
	Relays  []Relay
	Argv    []string // the command; started by `tare relay` when Relays is non-empty

	// Stdio of the command. The room never gets these descriptors: it gets
	// pipes Start made, copied to and from them (a file's descriptor could be
	// reopened from inside through /proc/self/fd, to read what was written
	// there before or to write to the file). Output is copied by os/exec's
	// goroutines, which Wait waits for; a Stdin that is an *os.File is copied
	// by a goroutine nothing waits for (it ends at EOF or at its first write
	// after the room is gone); any other Stdin is copied by os/exec, and one
	// that never returns keeps Wait until it does. Keep a Stdout or Stderr
	// file open until Wait returns: output is written to it until then.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            *os.File // pty slave used as 0, 1, 2 (attached mode); Stdin/Stdout/Stderr ignored

	Tare    string        // host path of the tare binary bound at TareBin (Start defaults it to os.Executable())
	Bwrap   string        // host path of bwrap ("" = PATH, then /usr/bin/bwrap)
	TempDir string        // host folder for the room's temp folder ("" = os.TempDir())
	Grace   time.Duration // between SIGTERM and SIGKILL when the context ends (0 = 3s)
	Log     io.Writer     // host relay log lines (refused CONNECTs, dial failures); nil = discarded
	// HostLog receives one JSON line per host the room tried to reach through its relays
	// (HostReach): every CONNECT, allowed or refused, and each connection to a relay's
	// Upstream. nil = not kept.
	HostLog io.Writer
	// Helper is the host path of tare-room, bound at HelperBin: the room's relay runs from
	// it, which starts in a fraction of tare's time. Start defaults it to FindHelper();
	// without one the relay runs from TareBin.
	Helper string
	// Image, when set, roots the room in an environment image instead of the host's /usr,
	// with the workspace at the image's WORKDIR (see Image).
	Image *Image

	// Test hooks: set only by this package's tests to show that each
	// defence is load-bearing (the mutation tests).
	mutate      func([]string) []string // rewrites the bwrap argv
	bwrapEnv    []string                // replaces the minimal bwrap env when non-nil
	keepFDs     bool                    // skips marking inherited descriptors close-on-exec
	keepKeys    bool                    // starts bwrap in the caller's session keyring
	noLifeline  bool                    // starts the room without tare's lifeline
	fileStdio   bool                    // hands *os.File stdio to bwrap as is, not through pipes
	argvOptions bool                    // puts bwrap's options on its argv, not in an --args file
	// seccompNoModes builds the seccomp filter without its mode rules.
	seccompNoModes bool
	// noStrip leaves what the room wrote as it is when the room ends (stripSetID).
	noStrip bool
	// block, when set, is passed to bwrap with blockFlag (--block-fd when
	// empty): the room's setup waits there until it is readable. --block-fd
	// holds the room's pid 1 before it has a parent-death signal (the window
	// the lifeline closes); --userns-block-fd holds bwrap itself before it
	// lets pid 1 go on (the window sweepStranded cleans up after).
	block     *os.File
	blockFlag string
}

// FDs is what Start prepared for one bwrap run: the descriptor numbers, as
// bwrap sees them, of the synthetic /etc files and of each Room.File, the host
// folder bound at SockDir, and the bwrap version (its zero value means "all
// features", that is 0.8.0 or newer).
type FDs struct {
	Passwd, Group, Hosts int
	Files                []int  // one per Room.Files, same order
	Seccomp              int    // the room's seccomp filter (seccompFilter)
	Info                 int    // bwrap's --info-fd: it writes the room's pid 1 there
	Lifeline             int    // read end of the room's lifeline pipe, watched by `tare relay` (0 = none)
	Sock                 string // host folder bound at SockDir; required when Relays is non-empty
	Version              Version
	MaskProc             []string  // /proc files hidden under /dev/null: those of procMasked the host has
	Etc                  []EtcFile // the etcAllow files Start copied (the others are bound)
}

// EtcFile is an etcAllow file whose host content Start read into descriptor FD: bwrap writes
// it into the room's root (--file) instead of binding the host file, which costs a mount each
// (a bind, a read of the mount table and a read-only remount, most of a room's start). The
// room's final --remount-ro / makes it read-only like the bind; it holds the host file's
// bytes and mode as they are when the room starts, so it is never stale.
type EtcFile struct {
	Path string
	FD   int
	Mode fs.FileMode
}

// SequentialFDs is the numbering Start uses: ExtraFiles land at 3, 4, 5 ...
// in the order passwd, group, hosts, each Room.File, the seccomp filter, the info pipe, then
// the lifeline. (Start passes one more, a read end of the info pipe, which the relay closes.)
func SequentialFDs(nfiles int) FDs {
	f := FDs{Passwd: 3, Group: 4, Hosts: 5}
	for i := range nfiles {
		f.Files = append(f.Files, 6+i)
	}
	f.Seccomp = 6 + nfiles
	f.Info = f.Seccomp + 1
	f.Lifeline = f.Info + 1
	return f
}

// procMasked are the /proc files a room cannot read (/dev/null is bound over
// them, and proc is nodev): the kernel keys any process of the caller's uid
// may list (descriptions of keys held in other sessions, as SANDBOX.md
// found) and the per-uid key counts.
var procMasked = []string{"/proc/keys", "/proc/key-users"}

// initMem are the memory files of the room's pid 1, bwrap's own child, masked like
// procMasked. Every process of the room has the same uid as pid 1, which is dumpable, so the
// kernel would let any of them read (and write) its memory there, seccomp's ban on ptrace and
// process_vm_* notwithstanding; and that memory holds bwrap's options, host paths included.
// pid 1 is single-threaded, so its only task is 1.
var initMem = []string{"/proc/1/mem", "/proc/1/task/1/mem"}

// hostProcMasks returns the entries of procMasked this kernel has: bwrap
// cannot bind over a file the fresh /proc lacks.
func hostProcMasks() []string {
	var out []string
	for _, p := range procMasked {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// etcAllow is every host /etc entry a room may see: what glibc, TLS and
// node need, nothing personal. /etc/ssl/private is left out on purpose: the
// room's uid maps to the caller's, so a root caller's private keys would be
// readable by the agent.
var etcAllow = []string{
	"/etc/ld.so.cache",
	"/etc/ssl/certs",
	"/etc/ssl/openssl.cnf",
	"/etc/ca-certificates",
	"/etc/alternatives",
	"/etc/localtime",
	"/etc/nsswitch.conf",
}

// Synthetic identity files, bound read-only from memory.
var (
	passwdData = "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
		User + ":x:" + strconv.Itoa(UID) + ":" + strconv.Itoa(GID) + ":" + User + ":" + HomeDir + ":/bin/bash\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	groupData = "root:x:0:\n" + User + ":x:" + strconv.Itoa(GID) + ":\n" + "nogroup:x:65534:\n"
	// localhost is IPv4 only: relays listen on 127.0.0.1, and a client
	// trying ::1 first would meet a refused port.
	hostsData = "127.0.0.1\tlocalhost " + Hostname + "\n::1\tip6-localhost ip6-loopback\n"
)

// EnvList returns the room's environment: the base (HOME, USER, PATH, LANG,
// TERM, TMPDIR) with Room.Env added, sorted by key.
func (r Room) EnvList() []string {
	env := map[string]string{}
	if r.Image != nil {
		// The image's ENV first, so tare's own variables (and the caller's Env) win.
		for k, v := range r.Image.Env {
			if k != "HOME" && k != "USER" {
				env[k] = v
			}
		}
	}
	for k, v := range map[string]string{
		"HOME":   HomeDir,
		"USER":   User,
		"PATH":   r.pathValue(),
		"LANG":   "C.UTF-8",
		"TERM":   "dumb",
		"TMPDIR": "/tmp",
	} {
		// The image's LANG (and any other of its variables) stands; what the room itself
		// decides does not: HOME, USER, PATH, its /tmp and the terminal tare gives it.
		if _, ok := env[k]; !ok || k != "LANG" {
			env[k] = v
		}
	}
	if r.TTY != nil {
		env["TERM"] = "xterm-256color"
	}
	for k, v := range r.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

func (r Room) pathValue() string {
	if len(r.Path) == 0 {
		return r.basePathValue()
	}
	return strings.Join(r.Path, ":") + ":" + r.basePathValue()
}

// command is what bwrap runs: Argv, wrapped in `tare relay` when the room
// has relays (so that every listener is bound before the agent starts) or a
// lifeline (so that the room ends when tare does, see Start).
func (r Room) command(fds FDs) []string {
	if len(r.Relays) == 0 && fds.Lifeline <= 2 {
		return r.Argv
	}
	cmd := []string{r.relayBin(), "relay"}
	if fds.Lifeline > 2 {
		cmd = append(cmd, "--lifeline", strconv.Itoa(fds.Lifeline))
	}
	cmd = append(cmd, "--owner", Owner())
	for _, rl := range r.Relays {
		cmd = append(cmd, "--listen", fmt.Sprintf("127.0.0.1:%d=%s", rl.Port, path.Join(SockDir, rl.sock())))
	}
	cmd = append(cmd, "--")
	return append(cmd, r.Argv...)
}

// Args returns the bwrap argv (without "bwrap" itself) for the room, given
// the descriptors and socket folder Start prepared. It touches nothing on
// disk: Validate checks that the host paths exist.
func (r Room) Args(fds FDs) ([]string, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if len(fds.Files) != len(r.Files) {
		return nil, fmt.Errorf("room: FDs has %d file descriptors for %d Room.Files: build it with SequentialFDs(len(Files))", len(fds.Files), len(r.Files))
	}
	if fds.Seccomp < 3 {
		return nil, errors.New("room: FDs.Seccomp is unset: build FDs with SequentialFDs, and Start passes the filter there")
	}
	if len(r.Relays) > 0 && fds.Sock == "" {
		return nil, errors.New("room: FDs.Sock is empty but the room has relays: Start fills it with the host socket folder")
	}
	if fds.Lifeline > 2 && r.Tare == "" && r.Helper == "" {
		return nil, fmt.Errorf("room: Tare is empty but the lifeline is watched by %s inside the room: set Room.Tare (Start defaults it to os.Executable())", TareBin)
	}
	v := fds.Version
	perms := v.IsZero() || !v.Less(Version{0, 5, 0})
	tmpfsPerms := v.IsZero() || !v.Less(Version{0, 6, 0})
	disableUserns := v.IsZero() || !v.Less(Version{0, 8, 0})

	a := []string{"--die-with-parent", "--new-session", "--unshare-user"}
	if disableUserns {
		a = append(a, "--disable-userns")
	}
	a = append(a, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
	if r.Network != NetHost {
		a = append(a, "--unshare-net")
	}
	a = append(a,
		"--hostname", Hostname,
		"--uid", strconv.Itoa(UID), "--gid", strconv.Itoa(GID),
		"--cap-drop", "ALL",
		"--clearenv")
	for _, kv := range r.EnvList() {
		k, val, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, val)
	}

	if r.Image != nil {
		a = append(a, r.imageRootArgs(fds)...)
	} else {
		a = append(a, r.hostRootArgs(fds, perms)...)
	}
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev")
	for _, p := range append(slices.Clone(fds.MaskProc), initMem...) {
		a = append(a, "--ro-bind", "/dev/null", p)
	}
	a = append(a,
		"--tmpfs", ShmDir,
		"--remount-ro", "/dev",
		"--tmpfs", "/tmp")

	// Fresh HOME and the files placed in it.
	a = append(a, r.memArgs(HomeDir, fds, perms, tmpfsPerms)...)

	// Read-only runtime, then the workspace, the run store and the sockets.
	if r.Image != nil {
		// The image's root is read-only and may hold files of its own there: tare's folders
		// are fresh ones in memory, each holding only what tare binds into it.
		a = append(a, "--tmpfs", "/opt/tare", "--tmpfs", AgentDir)
		if r.Image.Runtime != "" {
			a = append(a, "--ro-bind", r.Image.Runtime, RuntimeDir)
		}
	}
	if r.Agent != "" {
		a = append(a, "--ro-bind", r.Agent, r.agentDest())
	}
	if r.Tare != "" {
		a = append(a, "--ro-bind", r.Tare, TareBin)
	}
	if r.Helper != "" {
		a = append(a, "--ro-bind", r.Helper, HelperBin)
	}
	for _, wd := range r.workDirs() {
		if r.WorkspaceReadOnly {
			a = append(a, "--ro-bind", r.Workspace, wd)
		} else {
			a = append(a, "--bind", r.Workspace, wd)
		}
		a = append(a, r.guardArgs(wd)...)
	}
	if r.RunStore != "" {
		a = append(a, "--bind", r.RunStore, RunDir)
	}
	if len(r.Relays) > 0 {
		a = append(a, "--ro-bind", fds.Sock, SockDir)
	}
	for _, b := range r.Binds {
		if b.Tmpfs {
			a = append(a, r.memArgs(b.Dest, fds, perms, tmpfsPerms)...)
			continue
		}
		op := "--ro-bind"
		if b.Write {
			op = "--bind"
		}
		if b.Try {
			op += "-try"
		}
		a = append(a, op, b.Source, b.Dest)
	}
	if r.Image != nil {
		// tare's folders in memory were writable for the binds into them; the final
		// --remount-ro / does not reach them (they are mounts of their own).
		a = append(a, "--remount-ro", "/opt/tare", "--remount-ro", AgentDir)
	}
	a = append(a, "--seccomp", strconv.Itoa(fds.Seccomp))
	if fds.Info > 2 {
		a = append(a, "--info-fd", strconv.Itoa(fds.Info))
	}
	a = append(a, "--chdir", r.cwd(), "--remount-ro", "/", "--")
	a = append(a, r.command(fds)...)
	if r.mutate != nil {
		a = r.mutate(slices.Clone(a))
	}
	return a, nil
}

// imageRootArgs roots the room in the image: its root filesystem read-only at /, the
// synthetic identity bound over the image's own files (the root is read-only, so nothing can
// be written into it, and PrepareRoot made sure each file exists), and no file of the host's
// /etc: the image's libc, certificates and zone files are the environment's.
func (r Room) imageRootArgs(fds FDs) []string {
	a := []string{"--ro-bind", r.Image.Root, "/"}
	if r.Network == NetHost {
		a = append(a, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf")
	}
	for _, d := range []struct {
		fd   int
		path string
	}{{fds.Passwd, "/etc/passwd"}, {fds.Group, "/etc/group"}, {fds.Hosts, "/etc/hosts"}} {
		a = append(a, "--ro-bind-data", strconv.Itoa(d.fd), d.path)
	}
	return a
}

// hostRootArgs is the root of a room on the host: /usr and an allowlist of /etc.
func (r Room) hostRootArgs(fds FDs, perms bool) []string {
	// Root from an allowlist.
	a := []string{
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/sbin", "/sbin",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64"}
	copied := map[string]EtcFile{}
	for _, e := range fds.Etc {
		copied[e.Path] = e
	}
	if perms {
		// /etc as a bind's parent makes it (0700), not as a 0644 file's (0755).
		a = append(a, "--perms", "0700", "--dir", "/etc")
	}
	for _, p := range etcAllow {
		if e, ok := copied[p]; ok && perms {
			a = append(a, "--perms", fmt.Sprintf("%04o", e.Mode.Perm()), "--file", strconv.Itoa(e.FD), p)
		} else {
			a = append(a, "--ro-bind-try", p, p)
		}
	}
	if r.Network == NetHost {
		a = append(a, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf")
	}
	// The identity files are written into the root like the copied /etc files (no mount);
	// a bwrap without --perms would leave them 0666, so it gets them as read-only binds.
	for _, d := range []struct {
		fd   int
		path string
	}{{fds.Passwd, "/etc/passwd"}, {fds.Group, "/etc/group"}, {fds.Hosts, "/etc/hosts"}} {
		if perms {
			a = append(a, "--perms", "0600", "--file", strconv.Itoa(d.fd), d.path)
		} else {
			a = append(a, "--ro-bind-data", strconv.Itoa(d.fd), d.path)
		}
	}
	return a
}

// guardArgs binds each guarded path read-only over the workspace, its folders first, each
// over itself; shallower paths first, so a deeper bind is never hidden by a later one.
func (r Room) guardArgs(wd string) []string {
	guards := slices.Clone(r.Guard)
	sort.SliceStable(guards, func(i, j int) bool { return strings.Count(guards[i], "/") < strings.Count(guards[j], "/") })
	isGuard := map[string]bool{}
	for _, g := range guards {
		isGuard[g] = true
	}
	var a []string
	pinned := map[string]bool{}
	for _, g := range guards {
		parts := strings.Split(g, "/")
		for i := 1; i < len(parts); i++ {
			p := strings.Join(parts[:i], "/")
			if !pinned[p] && !isGuard[p] {
				pinned[p] = true
				a = append(a, "--bind", path.Join(r.Workspace, p), path.Join(wd, p))
			}
		}
		a = append(a, "--ro-bind", path.Join(r.Workspace, g), path.Join(wd, g))
	}
	return a
}

// agentDest is where the runtime lands: below AgentDir under its own name, so a
// binary is bound alone, never with the folder it sits in.
func (r Room) agentDest() string { return path.Join(AgentDir, path.Base(r.Agent)) }

// memArgs mounts a fresh in-memory folder at dir (HOME or a Tmpfs bind's Dest, 0700 where
// bwrap takes --perms for it) and writes the Files below it into it, making their missing
// folders (0700) first.
func (r Room) memArgs(dir string, fds FDs, perms, tmpfsPerms bool) []string {
	var a []string
	if tmpfsPerms {
		a = append(a, "--perms", "0700")
	}
	a = append(a, "--tmpfs", dir)
	made := map[string]bool{dir: true}
	for i, f := range r.Files {
		if r.fileDir(f.Path) != dir {
			continue
		}
		var parents []string
		for d := path.Dir(f.Path); !made[d]; d = path.Dir(d) {
			parents = append(parents, d)
			made[d] = true
		}
		slices.Reverse(parents)
		for _, d := range parents {
			if perms {
				a = append(a, "--perms", "0700")
			}
			a = append(a, "--dir", d)
		}
		if perms {
			a = append(a, "--perms", fmt.Sprintf("%04o", f.mode()))
		}
		a = append(a, "--file", strconv.Itoa(fds.Files[i]), f.Path)
	}
	return a
}

// fileDir is the in-memory folder a File at p is placed in: the deepest Tmpfs bind above it,
// else HOME when p is below it, else "" (no place for it).
func (r Room) fileDir(p string) string {
	dir := ""
	for _, b := range r.Binds {
		if b.Tmpfs && strings.HasPrefix(p, b.Dest+"/") && len(b.Dest) > len(dir) {
			dir = b.Dest
		}
	}
	if dir == "" && strings.HasPrefix(p, HomeDir+"/") {
		dir = HomeDir
	}
	return dir
}

func (f File) mode() fs.FileMode {
	if f.Mode == 0 {
		return 0o600
	}
	return f.Mode.Perm()
}

// rootLinks are the room's top-level symlinks into /usr: a mount below one would land in /usr.
var rootLinks = map[string]bool{"bin": true, "sbin": true, "lib": true, "lib64": true}

// reserved are room paths a Bind may not cover or sit below.
func (r Room) reserved() []string {
	res := append([]string{"/proc", "/dev", "/usr", "/etc", SockDir, TareBin, HelperBin, AgentDir, RunDir}, r.workDirs()...)
	if r.Image != nil {
		res = append(res, "/opt/tare", RuntimeDir)
	}
	return res
}

// check validates the spec without touching the disk.
func (r Room) check() error {
	if r.Workspace == "" {
		return errors.New("room: Workspace is empty: set it to the project folder bound at " + WorkDir)
	}
	if err := hostPath("Workspace", r.Workspace); err != nil {
		return err
	}
	if r.Image != nil {
		if err := r.checkImage(); err != nil {
			return err
		}
	}
	for _, p := range []struct{ field, v string }{{"Agent", r.Agent}, {"RunStore", r.RunStore}, {"Tare", r.Tare}, {"Helper", r.Helper}} {
		if p.v != "" {
			if err := hostPath(p.field, p.v); err != nil {
				return err
			}
		}
	}
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return errors.New("room: Argv is empty: set the command to run inside the room")
	}
	if r.Network != NetRelay && r.Network != NetHost {
		return fmt.Errorf("room: Network %d is unknown: use NetRelay or NetHost", int(r.Network))
	}
	for i, g := range r.Guard {
		if g == "" || path.IsAbs(g) || path.Clean(g) != g || g == "." || g == ".." || strings.HasPrefix(g, "../") {
			return fmt.Errorf("room: Guard[%d] %q must be a clean relative path below the workspace", i, g)
		}
	}
	seen := map[string]int{}
	for i, f := range r.Files {
		field := fmt.Sprintf("Files[%d].Path", i)
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return fmt.Errorf("room: %s %q must be a clean absolute path inside the room, below %s", field, f.Path, HomeDir)
		}
		if r.fileDir(f.Path) == "" {
			return fmt.Errorf("room: %s %q is outside HOME: Files go below %s or a Tmpfs bind; use Binds for anything else", field, f.Path, HomeDir)
		}
		if f.Mode&^fs.ModePerm != 0 {
			return fmt.Errorf("room: Files[%d].Mode %v has type bits: give only permission bits such as 0600", i, f.Mode)
		}
		if j, ok := seen[f.Path]; ok {
			return fmt.Errorf("room: %s %q repeats Files[%d]: place each file once", field, f.Path, j)
		}
		seen[f.Path] = i
	}
	for i, f := range r.Files {
		for j, g := range r.Files {
			if strings.HasPrefix(g.Path, f.Path+"/") {
				return fmt.Errorf("room: Files[%d].Path %q is also the folder of Files[%d] %q: rename one of them", i, f.Path, j, g.Path)
			}
		}
	}
	for i, b := range r.Binds {
		field := fmt.Sprintf("Binds[%d].Dest", i)
		if b.Tmpfs {
			if b.Source != "" || b.Write || b.Try {
				return fmt.Errorf("room: Binds[%d] is a Tmpfs folder: leave its Source, Write and Try unset", i)
			}
		} else if err := hostPath(fmt.Sprintf("Binds[%d].Source", i), b.Source); err != nil {
			return err
		}
		if !path.IsAbs(b.Dest) || path.Clean(b.Dest) != b.Dest {
			return fmt.Errorf("room: %s %q must be a clean absolute path inside the room", field, b.Dest)
		}
		if b.Dest == "/" || b.Dest == HomeDir || b.Dest == "/tmp" {
			return fmt.Errorf("room: %s %q would replace the room's %s: bind below it instead", field, b.Dest, b.Dest)
		}
		for _, p := range r.reserved() {
			if b.Dest == p || strings.HasPrefix(b.Dest, p+"/") {
				why := "tare owns it"
				if slices.Contains(r.workDirs(), p) {
					why = "a symlink an agent planted in the workspace could redirect the mount"
				}
				return fmt.Errorf("room: %s %q is at or below %s (%s): choose another destination", field, b.Dest, p, why)
			}
		}
		for _, p := range append([]string{HomeDir, ShmDir, "/tmp"}, r.reserved()...) {
			if strings.HasPrefix(p, b.Dest+"/") {
				return fmt.Errorf("room: %s %q would hide the room's %s below it: choose another destination", field, b.Dest, p)
			}
		}
		if first, _, _ := strings.Cut(strings.TrimPrefix(b.Dest, "/"), "/"); rootLinks[first] {
			return fmt.Errorf("room: %s %q is below /%s, a symlink into /usr in the room: use the path below /usr, which is tare's", field, b.Dest, first)
		}
		for j := i + 1; j < len(r.Binds); j++ {
			if t := r.Binds[j]; t.Tmpfs && (b.Dest == t.Dest || strings.HasPrefix(b.Dest, t.Dest+"/")) {
				return fmt.Errorf("room: %s %q would be hidden by the Tmpfs folder of Binds[%d] %q mounted after it: list the Tmpfs first", field, b.Dest, j, t.Dest)
			}
		}
	}
	for k, v := range r.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("room: Env key %q is not a variable name: drop '=' and NUL", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("room: Env[%q] holds a NUL byte: environment values cannot carry it", k)
		}
		switch k {
		case "HOME", "USER":
			return fmt.Errorf("room: Env[%q] is fixed by the room (%s): remove it", k, map[string]string{"HOME": HomeDir, "USER": User}[k])
		case "PATH":
			return errors.New(`room: Env["PATH"] is built by the room: put extra entries in Room.Path`)
		}
	}
	for i, p := range r.Path {
		if !path.IsAbs(p) || strings.Contains(p, ":") {
			return fmt.Errorf("room: Path[%d] %q must be an absolute folder inside the room without ':'", i, p)
		}
	}
	if len(r.Relays) > 0 && r.Network == NetHost {
		return errors.New("room: Relays need the room's own network (NetRelay); with NetHost the room reaches host loopback directly: drop Relays or use NetRelay")
	}
	if len(r.Relays) > 0 && r.Tare == "" && r.Helper == "" {
		return fmt.Errorf("room: Tare is empty but relays run %s inside the room: set Room.Tare (Start defaults it to os.Executable())", TareBin)
	}
	ports := map[int]int{}
	for i, rl := range r.Relays {
		if rl.Port < 1024 || rl.Port > 65535 {
			return fmt.Errorf("room: Relays[%d].Port %d cannot be bound by the room (no capabilities, so no port below 1024): use 1024-65535", i, rl.Port)
		}
		if j, ok := ports[rl.Port]; ok {
			return fmt.Errorf("room: Relays[%d].Port %d repeats Relays[%d]: give each relay its own port", i, rl.Port, j)
		}
		ports[rl.Port] = i
		switch {
		case rl.Upstream != "" && rl.Allow != nil:
			return fmt.Errorf("room: Relays[%d] has both Upstream and Allow: a relay either forwards to one address or is a CONNECT proxy", i)
		case rl.Upstream == "" && rl.Allow == nil:
			return fmt.Errorf("room: Relays[%d] has neither Upstream nor Allow: set Upstream (\"127.0.0.1:PORT\") or Allow ([]string{\"host:443\"})", i)
		case rl.Upstream != "":
			if err := hostPort(rl.Upstream); err != nil {
				return fmt.Errorf("room: Relays[%d].Upstream %q: %v: write it as host:port", i, rl.Upstream, err)
			}
		}
		for j, a := range rl.Allow {
			if err := hostPort(a); err != nil {
				return fmt.Errorf("room: Relays[%d].Allow[%d] %q: %v: write it as host:port", i, j, a, err)
			}
		}
	}
	return nil
}

func hostPath(field, p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("room: %s %q is relative: give an absolute host path", field, p)
	}
	return nil
}

func hostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("empty host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not 1-65535", port)
	}
	return nil
}

// Validate checks the spec as Args does and, on the host, that the
// workspace, runtime, tare binary, run store and non-Try bind sources exist.
func (r Room) Validate() error {
	if err := r.check(); err != nil {
		return err
	}
	st, err := os.Stat(r.Workspace)
	if err != nil {
		return fmt.Errorf("room: Workspace %q: %v: create it or point Room.Workspace at the project folder", r.Workspace, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("room: Workspace %q is not a folder: point Room.Workspace at the project folder", r.Workspace)
	}
	for _, p := range []struct{ field, v, fix string }{
		{"Agent", r.Agent, "install the agent runtime or leave Agent empty"},
		{"RunStore", r.RunStore, "create the run store folder or leave RunStore empty"},
		{"Tare", r.Tare, "point Room.Tare at the tare binary"},
		{"Helper", r.Helper, "build it (scripts/setup builds bin/tare-room) or leave Helper empty"},
	} {
		if p.v == "" {
			continue
		}
		if _, err := os.Stat(p.v); err != nil {
			return fmt.Errorf("room: %s %q: %v: %s", p.field, p.v, errors.Unwrap(err), p.fix)
		}
	}
	for i, g := range r.Guard {
		parts := strings.Split(g, "/")
		for j := range parts {
			p := path.Join(r.Workspace, strings.Join(parts[:j+1], "/"))
			st, err := os.Lstat(p)
			if err != nil {
				return fmt.Errorf("room: Guard[%d] %q: %v: guard only paths that exist", i, g, errors.Unwrap(err))
			}
			if st.Mode()&fs.ModeSymlink != 0 {
				return fmt.Errorf("room: Guard[%d] %q: %s is a symlink, which a bind would follow: guard the real path", i, g, p)
			}
		}
	}
	for i, b := range r.Binds {
		if b.Try || b.Tmpfs {
			continue
		}
		if _, err := os.Stat(b.Source); err != nil {
			return fmt.Errorf("room: Binds[%d].Source %q: %v: create it or set Try", i, b.Source, errors.Unwrap(err))
		}
	}
	if r.Image != nil {
		return r.validateImage()
	}
	return nil
}

// Declared describes, one line each, what the room gives the agent beyond
// an empty machine: network mode, workspace, runtime, files placed in HOME,
// extra binds and env keys. The probe prints it beside its reading.
func (r Room) Declared() []string {
	var d []string
	switch r.Network {
	case NetHost:
		d = append(d, "network: HOST (opt-in): host loopback services, host abstract unix sockets and every network the host reaches are reachable")
	default:
		if len(r.Relays) == 0 {
			d = append(d, "network: own namespace, loopback only, no relays")
		}
		for _, rl := range r.Relays {
			if rl.Allow != nil {
				d = append(d, fmt.Sprintf("network: 127.0.0.1:%d is a CONNECT proxy allowing only %s", rl.Port, strings.Join(rl.Allow, ", ")))
			} else {
				d = append(d, fmt.Sprintf("network: 127.0.0.1:%d relays to host %s", rl.Port, rl.Upstream))
			}
		}
	}
	mode := "read-write"
	if r.WorkspaceReadOnly {
		mode = "read-only"
	}
	if im := r.Image; im != nil {
		d = append(d, fmt.Sprintf("root: environment image %s, %s at / (read-only)", im.Digest, im.Root))
		if im.User != "" {
			d = append(d, fmt.Sprintf("user: the image's USER %s runs as the room's %s (uid %d)", im.User, User, UID))
		}
		if im.Runtime != "" {
			d = append(d, fmt.Sprintf("runtime: tare's %s at %s (read-only)", im.Runtime, RuntimeDir))
		}
	}
	d = append(d, fmt.Sprintf("workspace: %s at %s (%s)", r.Workspace, strings.Join(r.workDirs(), " and "), mode))
	if len(r.Guard) > 0 && !r.WorkspaceReadOnly {
		d = append(d, fmt.Sprintf("workspace: read-only within it, as the host runs from them: %s", strings.Join(r.Guard, ", ")))
	}
	if r.Agent != "" {
		d = append(d, fmt.Sprintf("runtime: %s at %s (read-only)", r.Agent, r.agentDest()))
	}
	if r.RunStore != "" {
		d = append(d, fmt.Sprintf("run store: %s at %s (read-write)", r.RunStore, RunDir))
	}
	d = append(d, fmt.Sprintf("home: fresh tmpfs at %s", HomeDir))
	for _, f := range r.Files {
		label := "home file"
		if r.fileDir(f.Path) != HomeDir {
			label = "file"
		}
		d = append(d, fmt.Sprintf("%s: %s (%04o, %d bytes)", label, f.Path, f.mode(), len(f.Data)))
	}
	for _, b := range r.Binds {
		if b.Tmpfs {
			d = append(d, fmt.Sprintf("folder: fresh tmpfs at %s", b.Dest))
			continue
		}
		m := "read-only"
		if b.Write {
			m = "read-write"
		}
		d = append(d, fmt.Sprintf("bind: %s at %s (%s)", b.Source, b.Dest, m))
	}
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		d = append(d, "env: "+strings.Join(keys, " "))
	}
	return d
}
