package sandbox

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InspectOptions says what Inspect should try beyond what it always reports.
type InspectOptions struct {
	Connect  []string      // "127.0.0.1:PORT", "unix:/path" or "unix:@abstract": connect and report
	Write    []string      // paths whose writability to try (a folder: create a file in it)
	Idents   []Ident       // host (dev, ino) identities to look for while walking the room
	Names    []string      // base names to look for while walking the room
	Exists   []string      // exact paths whose existence to report (host paths that must not be there)
	Fetch    []string      // "URL", "URL via PROXY" (CONNECT tunnel) or "URL plain PROXY" (absolute-form GET)
	MaxFiles int           // cap on entries walked (0 = DefaultMaxFiles)
	Timeout  time.Duration // per connect or fetch (0 = 500ms)
	Home     string        // folder hashed as HOME ("" = HomeDir)
	Root     string        // folder walked for Idents and Names ("" = "/")
	// Within, when set, is the one folder the walk from Root looks into: it enters only
	// Within, the folders on the way to it and what lies below it (the way is walked as
	// every walk is: mounts, kernel file systems and skipped trees alike).
	Within  string
	Needles []string // strings to look for in the files below Home (an account email)
	Watch   []string // strings to look for in the mount table and every process's command line and environment (host paths)
}

// Ident is a host file identity: bind mounts keep (st_dev, st_ino), so a
// host file is recognised inside under any path.
type Ident struct {
	Dev, Ino uint64
	Label    string
}

// IdentOf returns the identity of the file at path (following symlinks).
func IdentOf(path, label string) (Ident, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Ident{}, fmt.Errorf("ident %s: %w", path, err)
	}
	return Ident{Dev: st.Dev, Ino: st.Ino, Label: label}, nil
}

// View is what a process sees from where it runs: identity, environment,
// descriptors, privileges, processes, network, files. Error strings are
// errno names ("EROFS") where the failure is an errno, "ok" on success.
type View struct {
	UID, EUID, GID, EGID int
	Groups               []int
	Hostname             string
	Cwd                  string
	Env                  []string         // own environment
	Environ              map[int][]string // pid -> environment, for every readable /proc/PID/environ
	EnvironErr           map[int]string   // pid -> why its environ was unreadable
	FDs                  []FD             // own open descriptors, listed first thing
	Status               Status           // from /proc/self/status
	Pids                 []int            // visible in /proc
	Interfaces           []string         // from /proc/net/dev
	Routes               []string         // "iface dest/mask via gw" from /proc/net/route and non-lo /proc/net/ipv6_route
	Unix                 []string         // named unix sockets in /proc/net/unix ("@name" for abstract)
	Mounts               []Mount          // from /proc/self/mountinfo
	Connect              []Probe
	Write                []Probe
	Exists               []Probe // OK: the path exists (lstat)
	Fetch                []FetchResult
	Found                []Found // walked entries matching Idents, Names or SecretPaths
	Walked               int
	WalkTruncated        bool
	WalkStopped          string `json:",omitempty"` // why the walk did not see everything ("" = it did)
	SecretsUnlisted      int    `json:",omitempty"` // secret files met beyond those in Found
	// Unentered are folders the walk could not open or list though the room's user owns them,
	// so the agent can open them up (chmod): what they hold was not seen. At most
	// unenteredMax; UnenteredMore counts the rest.
	Unentered     []string            `json:",omitempty"`
	UnenteredMore int                 `json:",omitempty"`
	Seen          []Seen              `json:",omitempty"` // where each Watch string is visible
	Home          map[string]string   // path -> sha256 of every regular file below Home
	Needles       map[string][]string `json:",omitempty"` // needle -> files below Home that hold it
	TIOCSTI       string              // ioctl(0, TIOCSTI)
	DevTTY        string              // open("/dev/tty")
	Mknod         string              // a character device in TMPDIR
	Mount         string              // a tmpfs in TMPDIR
	UnshareUser   string              // a child in a new user namespace (what `unshare --user` does)
	UnshareMount  string              // unshare(CLONE_NEWNS) on a locked thread
	ProcKeys      []string            // /proc/keys (nil: unreadable or empty, as the room masks it)
	SessionKeys   []string            // keys of the session keyring, described
	Keyctl        string              // keyctl on the session keyring
	IOUring       string              // io_uring_setup
	ProcessVM     string              // process_vm_readv of itself
	Ptrace        string              // ptrace(PEEKDATA) of the parent
	PacketSocket  string              // socket(AF_PACKET)
	VsockSocket   string              // socket(AF_VSOCK)
	SetID         []Probe             // each way to give a file in TMPDIR set-uid, set-gid or a capability (trySetID)
	Passwd        string              // /etc/passwd
	ElapsedMS     float64
	Errors        []string
}

// FD is one open descriptor and what it points at. Runtime marks the Go
// runtime's own network poller (an epoll descriptor watching an eventfd of
// this process), created by the first timer of any Go program: it is not
// inherited.
type FD struct {
	FD      int
	Target  string
	Runtime bool `json:",omitempty"`
}

// Status holds the privilege lines of /proc/self/status.
type Status struct {
	Uid, Gid                               string
	CapInh, CapPrm, CapEff, CapBnd, CapAmb string
	NoNewPrivs, Seccomp                    string
}

// Mount is one line of /proc/self/mountinfo. Root is the mounted folder's path inside its
// file system: for a bind, the host path it came from, which the room can read.
type Mount struct {
	Point, FSType string
	Root          string
	ReadOnly      bool
}

// Seen is one place in the room where a watched string is visible: Where is
// /proc/self/mountinfo (Text is a mount's root, At its mount point), /proc/PID/cmdline (Text
// is the argument) or /proc/PID/environ (Text is the variable).
type Seen struct {
	String, Where, Text string
	At                  string `json:",omitempty"`
}

// Probe is the outcome of one attempt: OK, or Err as an errno name.
type Probe struct {
	Target string
	OK     bool
	Err    string `json:",omitempty"`
}

// FetchResult is one HTTP GET, direct or through a proxy.
type FetchResult struct {
	Spec   string
	Status int    // HTTP status of the final response (the proxy's when it refused)
	Body   string // first 512 bytes
	Err    string `json:",omitempty"`
}

// Found is a walked entry that matched an Ident, a Name or a SecretPaths entry.
type Found struct {
	Path     string
	Dev, Ino uint64
	Why      string // "ident LABEL", "name NAME" or "secret SECRETPATH"
}

// Inspect reports what this process can see. It lists its descriptors
// before opening anything else, and removes whatever its write, mknod and
// mount attempts created.
func Inspect(o InspectOptions) View {
	start := time.Now()
	var v View
	v.FDs = listFDs(&v)
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.Home == "" {
		o.Home = HomeDir
	}
	if o.Root == "" {
		o.Root = "/"
	}
	v.UID, v.EUID, v.GID, v.EGID = os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid()
	v.Groups, _ = os.Getgroups()
	v.Hostname, _ = os.Hostname()
	v.Cwd, _ = os.Getwd()
	v.Env = os.Environ()
	v.Status = readStatus(&v)
	v.Pids, v.Environ, v.EnvironErr = readProcs()
	v.Interfaces = readInterfaces(&v)
	v.Routes = readRoutes()
	v.Unix = readUnixSockets(&v)
	v.Mounts = readMounts(&v)
	for _, a := range o.Connect {
		v.Connect = append(v.Connect, tryConnect(a, o.Timeout))
	}
	for _, p := range o.Write {
		v.Write = append(v.Write, tryWrite(p))
	}
	for _, p := range o.Exists {
		_, err := os.Lstat(p)
		v.Exists = append(v.Exists, Probe{Target: p, OK: err == nil, Err: errName(err)})
	}
	for _, f := range o.Fetch {
		v.Fetch = append(v.Fetch, fetch(f, o.Timeout))
	}
	v.Seen = watch(o.Watch, &v)
	walk(o, &v)
	v.WalkTruncated = v.WalkStopped != ""
	v.Home = hashTree(o.Home, &v)
	v.Needles = findNeedles(o.Home, o.Needles, &v)
	v.TIOCSTI = tryTIOCSTI()
	v.DevTTY = tryDevTTY()
	v.Mknod = tryMknod()
	v.Mount = tryMount()
	v.UnshareUser = tryUnshareUser()
	v.UnshareMount = tryUnshareMount()
	v.ProcKeys = readLines("/proc/keys")
	v.SessionKeys, v.Keyctl = readSessionKeys()
	v.IOUring = tryIOUring()
	v.ProcessVM = tryProcessVM()
	v.Ptrace = tryPtrace()
	v.PacketSocket = trySocket(unix.AF_PACKET)
	v.VsockSocket = trySocket(unix.AF_VSOCK)
	v.SetID = trySetID()
	if b, err := os.ReadFile("/etc/passwd"); err == nil {
		v.Passwd = string(b)
	} else {
		v.Errors = append(v.Errors, "passwd: "+errName(err))
	}
	v.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
	return v
}

// Args is the command line after the tare binary that makes InspectMain
// run Inspect with these options inside a room. The options travel as one
// encoded argument: the inspection reads every command line in the room for
// host paths (Watch), and must not find them in its own.
func (o InspectOptions) Args() []string {
	b, _ := json.Marshal(o) // plain data: cannot fail
	return []string{"inspect", "--json", "--spec", base64.RawURLEncoding.EncodeToString(b)}
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// InspectMain is `tare inspect --json [--out FILE] [--spec ARGS] [--connect ADDR]...
// [--write PATH]... [--ident DEV:INO:LABEL]... [--name NAME]... [--exists
// PATH]... [--fetch SPEC]... [--needle S]... [--watch S]... [--max-files N] [--timeout D]
// [--home DIR] [--root DIR]`: it
// runs Inspect and writes the View as JSON to stdout or FILE.
func InspectMain(args []string) int {
	fl := flag.NewFlagSet("tare inspect", flag.ContinueOnError)
	var o InspectOptions
	var connect, write, ident, names, exists, fetches, needles, watches listFlag
	fl.Bool("json", true, "write JSON (the only format)")
	out := fl.String("out", "", "write the view to this file instead of stdout")
	spec := fl.String("spec", "", "the options as InspectOptions.Args encodes them (base64 JSON)")
	fl.Var(&connect, "connect", "address to connect to: 127.0.0.1:PORT, unix:/path, unix:@name")
	fl.Var(&write, "write", "path whose writability to try")
	fl.Var(&ident, "ident", "host identity DEV:INO[:LABEL] to look for")
	fl.Var(&names, "name", "base name to look for")
	fl.Var(&exists, "exists", "exact path whose existence to report")
	fl.Var(&fetches, "fetch", "URL, 'URL via PROXY' or 'URL plain PROXY'")
	fl.Var(&needles, "needle", "string to look for in the files below HOME")
	fl.Var(&watches, "watch", "string to look for in the mount table and every process's command line and environment")
	maxFiles := fl.Int("max-files", 0, "cap on entries walked")
	timeout := fl.Duration("timeout", 0, "per connect or fetch")
	home := fl.String("home", "", "folder hashed as HOME")
	root := fl.String("root", "", "folder walked")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *spec != "" {
		var so InspectOptions
		b, err := base64.RawURLEncoding.DecodeString(*spec)
		if err == nil {
			err = json.Unmarshal(b, &so)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tare inspect: --spec: %v: pass what InspectOptions.Args writes\n", err)
			return 2
		}
		o = so
	}
	o.Connect = append(o.Connect, connect...)
	o.Write = append(o.Write, write...)
	o.Names = append(o.Names, names...)
	o.Exists = append(o.Exists, exists...)
	o.Fetch = append(o.Fetch, fetches...)
	o.Needles = append(o.Needles, needles...)
	o.Watch = append(o.Watch, watches...)
	if *maxFiles != 0 {
		o.MaxFiles = *maxFiles
	}
	if *timeout != 0 {
		o.Timeout = *timeout
	}
	if *home != "" {
		o.Home = *home
	}
	if *root != "" {
		o.Root = *root
	}
	for _, s := range ident {
		parts := strings.SplitN(s, ":", 3)
		var id Ident
		var e1, e2 error
		if len(parts) >= 2 {
			id.Dev, e1 = strconv.ParseUint(parts[0], 10, 64)
			id.Ino, e2 = strconv.ParseUint(parts[1], 10, 64)
		}
		if len(parts) < 2 || e1 != nil || e2 != nil {
			fmt.Fprintf(os.Stderr, "tare inspect: --ident %q: write it as DEV:INO[:LABEL]\n", s)
			return 2
		}
		if len(parts) == 3 {
			id.Label = parts[2]
		}
		o.Idents = append(o.Idents, id)
	}
	v := Inspect(o)
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare inspect: %v\n", err)
		return 1
	}
	b = append(b, '\n')
	if *out != "" {
		err = os.WriteFile(*out, b, 0o644)
	} else {
		_, err = os.Stdout.Write(b)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare inspect: write view: %v\n", err)
		return 1
	}
	return 0
}

// errName names err by its errno when it has one.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
		return errno.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return err.Error()
}

// listFDs lists the process's descriptors with raw system calls: os.Open
// would start Go's network poller, whose epoll and eventfd descriptors would
// then show up as if inherited.
func listFDs(v *View) []FD {
	dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		v.Errors = append(v.Errors, "fds: "+errName(err))
		return nil
	}
	defer unix.Close(dir)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil {
			v.Errors = append(v.Errors, "fds: "+errName(err))
			break
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	var fds []FD
	link := make([]byte, 4096)
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd == dir {
			continue
		}
		t := ""
		if m, err := unix.Readlink("/proc/self/fd/"+n, link); err == nil {
			t = string(link[:m])
		}
		fds = append(fds, FD{FD: fd, Target: t})
	}
	sort.Slice(fds, func(i, j int) bool { return fds[i].FD < fds[j].FD })
	markRuntime(fds)
	return fds
}

// markRuntime finds the Go runtime's netpoll pair: an eventpoll descriptor
// whose /proc/self/fdinfo lists, as a watched target, an eventfd descriptor
// open in this process; and the cgroup CPU limit files the runtime keeps open
// from its start to follow the limit (internal/runtime/cgroup), which it finds
// wherever the mount table shows a cgroup file system: under /work when the
// project is the host root.
func markRuntime(fds []FD) {
	for i, f := range fds {
		for _, name := range []string{"/cpu.max", "/cpu.cfs_quota_us", "/cpu.cfs_period_us"} {
			if strings.HasSuffix(f.Target, name) && strings.Contains(f.Target, "/cgroup") {
				fds[i].Runtime = true
			}
		}
	}
	eventfds := map[int]int{}
	for i, f := range fds {
		if f.Target == "anon_inode:[eventfd]" {
			eventfds[f.FD] = i
		}
	}
	for i, f := range fds {
		if f.Target != "anon_inode:[eventpoll]" {
			continue
		}
		b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(f.FD))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			fields := strings.Fields(l)
			if len(fields) < 2 || fields[0] != "tfd:" {
				continue
			}
			n, err := strconv.Atoi(fields[1])
			if j, ok := eventfds[n]; err == nil && ok {
				fds[i].Runtime, fds[j].Runtime = true, true
			}
		}
	}
}

func readStatus(v *View) Status {
	var s Status
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		v.Errors = append(v.Errors, "status: "+errName(err))
		return s
	}
	fields := map[string]*string{"Uid": &s.Uid, "Gid": &s.Gid, "CapInh": &s.CapInh, "CapPrm": &s.CapPrm,
		"CapEff": &s.CapEff, "CapBnd": &s.CapBnd, "CapAmb": &s.CapAmb, "NoNewPrivs": &s.NoNewPrivs, "Seccomp": &s.Seccomp}
	st := parseStatus(b)
	for k, f := range fields {
		*f = st[k]
	}
	return s
}

func readProcs() ([]int, map[int][]string, map[int]string) {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	env := map[int][]string{}
	bad := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		pids = append(pids, pid)
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			bad[pid] = errName(err)
			continue
		}
		var kv []string
		for _, s := range strings.Split(string(b), "\x00") {
			if s != "" {
				kv = append(kv, s)
			}
		}
		env[pid] = kv
	}
	sort.Ints(pids)
	return pids, env, bad
}

func readInterfaces(v *View) []string {
	b, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		v.Errors = append(v.Errors, "net/dev: "+errName(err))
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		name, _, ok := strings.Cut(l, ":")
		if !ok || strings.Contains(name, "|") {
			continue
		}
		out = append(out, strings.TrimSpace(name))
	}
	sort.Strings(out)
	return out
}

func readRoutes() []string {
	var out []string
	if b, err := os.ReadFile("/proc/net/route"); err == nil {
		for i, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if i == 0 || len(f) < 8 {
				continue
			}
			out = append(out, fmt.Sprintf("%s %s/%s via %s", f[0], hexIP(f[1]), hexIP(f[7]), hexIP(f[2])))
		}
	}
	if b, err := os.ReadFile("/proc/net/ipv6_route"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 10 || f[9] == "lo" {
				continue
			}
			out = append(out, fmt.Sprintf("%s %s/%s via %s", f[9], f[0], f[1], f[4]))
		}
	}
	return out
}

// hexIP reads the little-endian hex IPv4 of /proc/net/route.
func hexIP(h string) string {
	n, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return h
	}
	return fmt.Sprintf("%d.%d.%d.%d", byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
}

func readUnixSockets(v *View) []string {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		v.Errors = append(v.Errors, "net/unix: "+errName(err))
		return nil
	}
	var out []string
	for i, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if i == 0 || len(f) < 8 {
			continue
		}
		out = append(out, strings.Join(f[7:], " "))
	}
	sort.Strings(out)
	return out
}

func readMounts(v *View) []Mount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		v.Errors = append(v.Errors, "mountinfo: "+errName(err))
		return nil
	}
	var out []Mount
	for _, l := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 1 {
			continue
		}
		ro := false
		for _, opt := range strings.Split(f[5], ",") {
			if opt == "ro" {
				ro = true
			}
		}
		out = append(out, Mount{Point: unescapeMount(f[4]), Root: unescapeMount(f[3]), FSType: g[0], ReadOnly: ro})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func tryConnect(addr string, timeout time.Duration) Probe {
	network, a := "tcp", addr
	if rest, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, a = "unix", rest
	}
	c, err := net.DialTimeout(network, a, timeout)
	if err != nil {
		return Probe{Target: addr, Err: errName(err)}
	}
	c.Close()
	return Probe{Target: addr, OK: true}
}

// tryWrite tries to create a file in a folder, to open an existing file for
// writing (without changing it), or to create a missing file (following a
// symlink, as a careless write would); it removes whatever it created.
func tryWrite(p string) Probe {
	st, err := os.Stat(p)
	switch {
	case err == nil && st.IsDir():
		f, err := os.CreateTemp(p, ".tare-inspect-")
		if err != nil {
			return Probe{Target: p, Err: errName(err)}
		}
		f.Close()
		os.Remove(f.Name())
		return Probe{Target: p, OK: true}
	case err == nil:
		// O_NONBLOCK: a FIFO without a reader must not hang the probe.
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
		if err != nil {
			return Probe{Target: p, Err: errName(err)}
		}
		f.Close()
		return Probe{Target: p, OK: true}
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return Probe{Target: p, Err: errName(err)}
	}
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil {
		os.Remove(real)
	}
	f.Close()
	return Probe{Target: p, OK: true}
}

func fetch(spec string, timeout time.Duration) FetchResult {
	r := FetchResult{Spec: spec}
	raw, mode, proxy := spec, "", ""
	if f := strings.Fields(spec); len(f) == 3 && (f[1] == "via" || f[1] == "plain") {
		raw, mode, proxy = f[0], f[1], f[2]
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		r.Err = "only http://HOST:PORT/PATH URLs are fetched"
		return r
	}
	hostport := u.Host
	if u.Port() == "" {
		hostport = net.JoinHostPort(u.Hostname(), "80")
	}
	dial := hostport
	if proxy != "" {
		dial = proxy
	}
	c, err := net.DialTimeout("tcp", dial, timeout)
	if err != nil {
		r.Err = errName(err)
		return r
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(4 * timeout))
	br := bufio.NewReader(c)
	target := u.RequestURI()
	switch mode {
	case "via":
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			r.Err = errName(err)
			return r
		}
		if resp.StatusCode != http.StatusOK {
			return readBody(r, resp)
		}
	case "plain":
		target = u.String()
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, u.Host)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		r.Err = errName(err)
		return r
	}
	return readBody(r, resp)
}

func readBody(r FetchResult, resp *http.Response) FetchResult {
	r.Status = resp.StatusCode
	b, err := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	r.Body = string(b)
	if err != nil {
		r.Err = errName(err)
	}
	return r
}

// hashTree hashes every regular file below dir (64 MiB in all at most).
func hashTree(dir string, v *View) map[string]string {
	out := map[string]string{}
	budget := int64(64 << 20)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			v.Errors = append(v.Errors, "home "+p+": "+errName(err))
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			v.Errors = append(v.Errors, "home "+p+": "+errName(err))
			return nil
		}
		defer f.Close()
		h := sha256.New()
		m, err := io.Copy(h, io.LimitReader(f, budget))
		budget -= m
		if err != nil {
			v.Errors = append(v.Errors, "home "+p+": "+errName(err))
			return nil
		}
		out[p] = hex.EncodeToString(h.Sum(nil))
		if budget <= 0 {
			v.Errors = append(v.Errors, "home: stopped hashing at 64 MiB")
			return fs.SkipAll
		}
		return nil
	})
	return out
}

// tryTIOCSTI pushes a space into the input of the terminal on fd 0: the
// injection a sandboxed process could use against the operator's shell.
func tryTIOCSTI() string {
	c := byte(' ')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	if e != 0 {
		return errName(e)
	}
	return "ok"
}

func tryDevTTY() string {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return errName(err)
	}
	f.Close()
	return "ok"
}

func tryMknod() string {
	p := filepath.Join(os.TempDir(), fmt.Sprintf(".tare-mknod-%d", os.Getpid()))
	err := unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
	if err == nil {
		os.Remove(p)
	}
	return errName(err)
}

func tryMount() string {
	dir, err := os.MkdirTemp("", ".tare-mount-")
	if err != nil {
		return "no temp folder: " + errName(err)
	}
	defer os.Remove(dir)
	err = unix.Mount("tare", dir, "tmpfs", 0, "size=64k")
	if err == nil {
		unix.Unmount(dir, unix.MNT_DETACH)
	}
	return errName(err)
}

// tryUnshareUser starts /bin/true in a new user namespace, as `unshare
// --user` would: a Go process is multithreaded, so unshare(CLONE_NEWUSER)
// on itself would fail with EINVAL whatever the sandbox allows.
func tryUnshareUser() string {
	bin := "/bin/true"
	if _, err := os.Stat(bin); err != nil {
		return "no /bin/true: " + errName(err)
	}
	pid, err := syscall.ForkExec(bin, []string{"true"}, &syscall.ProcAttr{
		Env: []string{}, Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER},
	})
	if err != nil {
		return errName(err)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	return "ok"
}

// tryUnshareMount tries a new mount namespace on a thread of its own; if it
// succeeds the thread is left locked so the runtime discards it.
func tryUnshareMount() string {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := unix.Unshare(unix.CLONE_NEWNS)
		if err != nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return errName(<-ch)
}
